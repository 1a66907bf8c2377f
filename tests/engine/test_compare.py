"""Comparing runs: a planted regression is found, a null difference is not, unpaired items listed."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from assay import Evaluation, MetricContext
from assay.cli import main
from assay.engine._compare import compare_runs
from assay.engine._plan import plan_run
from assay.metrics import Registry, metric


@pytest.fixture(scope="module")
def reg() -> Registry:
    r = Registry()

    @metric("meta_score", dimension="response_quality", registry=r)
    def meta_score(ctx: MetricContext):
        return ctx.trace.metadata["v"]

    @metric("steady", dimension="tool_calling", registry=r)
    def steady(ctx: MetricContext):
        return 1.0

    return r


def make_run(reg, shift: float, noise: float, seed: int, n_tasks: int = 40, trials: int = 3, drop: int = 0):
    rng = random.Random(seed)
    base = random.Random(99)  # the same underlying task difficulty in every run
    traces = []
    for task in range(n_tasks):
        level = base.uniform(0.3, 0.8)
        for trial in range(trials):
            if task * trials + trial < drop:
                continue
            v = min(1.0, max(0.0, level + shift + rng.gauss(0, noise)))
            traces.append({"id": f"task{task}-{trial}", "task_id": f"task{task}", "trial": trial,
                           "turns": [{"input": "q", "output": "a"}], "metadata": {"v": v}})
    return Evaluation(["meta_score", "steady"], registry=reg).run(traces)


def test_planted_regression_is_flagged(reg):
    a, b = make_run(reg, 0.0, 0.05, 1), make_run(reg, -0.08, 0.05, 2)
    res = compare_runs(a, b)
    row = res["metrics"]["meta_score"]
    assert row["regression"] and row["p_adjusted"] < 0.01
    assert row["ci_high"] < 0 and row["delta"] == pytest.approx(-0.08, abs=0.03)
    assert row["n_clusters"] == 40
    assert res["regressions"] == ["meta_score", "overall"]
    assert not res["metrics"]["steady"]["significant"]


def test_null_difference_is_not_flagged(reg):
    a, b = make_run(reg, 0.0, 0.05, 3), make_run(reg, 0.0, 0.05, 4)
    res = compare_runs(a, b)
    assert res["regressions"] == []
    assert res["metrics"]["meta_score"]["p_adjusted"] > 0.05


def test_unpaired_traces_are_listed_and_cli_exits_1_on_regression(reg, tmp_path):
    a, b = make_run(reg, 0.0, 0.05, 5), make_run(reg, -0.1, 0.05, 6, drop=2)
    res = compare_runs(a, b)
    assert res["only_in_a"] == ["task0-0", "task0-1"] and res["only_in_b"] == []
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a.to_dict()))
    pb.write_text(json.dumps(b.to_dict()))
    r = CliRunner().invoke(main, ["compare", str(pa), str(pb), "-f", "json"])
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert out["metrics"]["meta_score"]["regression"] is True
    r = CliRunner().invoke(main, ["compare", str(pa), str(pa)])
    assert r.exit_code == 0 and "no significant regression" in r.stdout
    r = CliRunner().invoke(main, ["compare", str(pa), str(tmp_path / "nope.json")])
    assert r.exit_code == 2 and "Error:" in r.stderr


def test_plan_reports_trials_needed(reg):
    rows = plan_run(make_run(reg, 0.0, 0.1, 7), delta=0.05)
    row = rows["meta_score"]
    assert row["n_tasks"] == 40 and row["trials_per_task"] == 3
    assert 0 < row["icc"] < 1 and row["n_needed"] > 0 and row["tasks_needed"] > 0
    # keeping the 40 tasks: either some number of trials each suffices, or more tasks are needed
    assert (row["feasible"] and row["trials_needed"] >= 1) or (not row["feasible"] and row["min_tasks"] > 40)


def test_different_metric_parameters_are_flagged(reg):
    a = make_run(reg, 0.0, 0.05, 8)
    b = Evaluation(["meta_score:threshold=0.9", "steady"], registry=reg).run(
        [{"id": t.id, "task_id": t.task_id, "turns": [{"input": "q", "output": "a"}], "metadata": {"v": 0.5}}
         for t in a.traces])
    res = compare_runs(a, b)
    assert res["metrics"]["meta_score"]["params_a"]["threshold"] == 0.7
    assert res["metrics"]["meta_score"]["params_b"]["threshold"] == 0.9
    assert res["warnings"] == ["meta_score was scored with different parameters: {'version': '1', 'threshold': 0.7} "
                               "in A, {'version': '1', 'threshold': 0.9} in B"]
    assert "params_a" not in res["metrics"]["steady"]
