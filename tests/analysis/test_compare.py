"""Comparing runs: a planted regression is found, a null difference is not, unpaired items listed."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from assay import Evaluation, MetricContext
from assay.cli import main
from assay.analysis._compare import compare_runs
from assay.analysis._plan import plan_run
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
    assert res["regressions"] == ["meta_score"]  # overall is reported, not in the Holm family
    assert res["holm_family"] == ["meta_score", "steady"] and res["metrics"]["overall"]["regression"]
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
    assert r.exit_code == 0 and "no significant regression" in r.stdout and not res["inconclusive"]
    r = CliRunner().invoke(main, ["compare", str(pa), str(tmp_path / "nope.json")])
    assert r.exit_code == 2 and "Error:" in r.stderr


def test_plan_reports_tasks_and_trials_needed(reg):
    rows = plan_run(make_run(reg, 0.0, 0.1, 7), delta=0.05)
    row = rows["meta_score"]
    assert row["n_tasks"] == 40 and row["trials_per_task"] == 3 and row["n_tests"] == 2
    assert row["tasks_needed"] > 0 and row["sd_difference"] > 0
    assert row["feasible"] and row["trials_needed"] >= 1


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


def make_runs_with_one_metric(reg, n_tasks: int, shift: float, seed: int = 11):
    return make_run(reg, 0.0, 0.05, seed, n_tasks=n_tasks), make_run(reg, shift, 0.05, seed + 1, n_tasks=n_tasks)


def test_overall_is_not_in_the_holm_family_unless_asked(reg):
    a, b = make_run(reg, 0.0, 0.1, 21, n_tasks=12), make_run(reg, -0.03, 0.1, 22, n_tasks=12)
    res = compare_runs(a, b)
    rows = res["metrics"]
    assert rows["overall"]["in_holm_family"] is False and rows["overall"]["p_adjusted"] is None
    # two metrics in the family: the smaller p is doubled, not tripled
    p = rows["meta_score"]["p_value"]
    assert rows["meta_score"]["p_adjusted"] == pytest.approx(min(1.0, 2 * p)) or p == 1.0
    both = compare_runs(a, b, holm_overall=True)
    assert both["holm_family"] == ["meta_score", "steady", "overall"]
    ps = sorted([both["metrics"][n]["p_value"] for n in both["holm_family"]])
    assert min(both["metrics"][n]["p_adjusted"] for n in both["holm_family"]) == pytest.approx(min(1.0, 3 * ps[0]))


def test_two_clusters_warn_that_significance_is_unreachable(reg, tmp_path):
    a, b = make_run(reg, 0.0, 0.05, 31, n_tasks=2), make_run(reg, -0.3, 0.05, 32, n_tasks=2)
    res = compare_runs(a, b)
    row = res["metrics"]["meta_score"]
    assert row["n_clusters"] == 2 and row["min_p_value"] == 0.5 and row["p_value"] == 0.5
    assert row["can_reach_significance"] is False and row["min_p_achievable"] == 1.0  # 0.5 x 2 metrics
    assert "meta_score" in res["cannot_reach_significance"]
    assert any("cannot reach significance" in w and "smallest achievable p" in w for w in res["warnings"])
    assert res["exit_reason"].startswith("inconclusive")
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a.to_dict()))
    pb.write_text(json.dumps(b.to_dict()))
    out = json.loads(CliRunner().invoke(main, ["compare", str(pa), str(pb), "-f", "json"]).stdout)
    assert out["cannot_reach_significance"] and out["exit_reason"].startswith("inconclusive")
    r = CliRunner().invoke(main, ["compare", str(pa), str(pb)], env={"COLUMNS": "100"})
    assert r.exit_code == 3 and out["inconclusive"] is True  # a gate that cannot see a regression does not pass
    table = r.stdout
    assert "too few tasks" in table and "smallest achievable p is 0.5 (1 after Holm over 2 metrics)" in " ".join(
        table.split()) and "inconclusive" in table.splitlines()[-1]


def test_enough_clusters_can_reach_significance(reg):
    res = compare_runs(*make_runs_with_one_metric(reg, 8, -0.2))
    assert res["metrics"]["meta_score"]["can_reach_significance"] is True  # 2 / 2**8 x 2 < 0.05
    assert res["cannot_reach_significance"] == ["steady"] or res["metrics"]["steady"]["can_reach_significance"]


def test_duplicate_ids_are_refused_unless_a_rule_is_chosen(reg, tmp_path):
    a = make_run(reg, 0.0, 0.05, 41, n_tasks=10)
    d = a.to_dict()
    first = dict(d["traces"][0])
    d["traces"].append({**first, "metrics": {**first["metrics"],
                                             "meta_score": {**first["metrics"]["meta_score"], "score": 0.0}}})
    pa, pb = tmp_path / "a.json", tmp_path / "dup.json"
    pa.write_text(json.dumps(a.to_dict()))
    pb.write_text(json.dumps(d))
    r = CliRunner().invoke(main, ["compare", str(pa), str(pb)])
    assert r.exit_code == 2 and "duplicate trace ids: 'task0-0'" in r.stderr and "--allow-duplicate-ids" in r.stderr
    assert "Traceback" not in r.stderr
    got = {}
    for rule in ("first", "last", "mean"):
        r = CliRunner().invoke(main, ["compare", str(pa), str(pb), "-f", "json", "--allow-duplicate-ids", rule])
        assert r.exit_code in (0, 1), r.output
        out = json.loads(r.stdout)
        assert out["duplicate_ids"] == {"rule": rule, "a": [], "b": ["task0-0"]}
        got[rule] = out["metrics"]["meta_score"]["mean_b"]
    s0 = first["metrics"]["meta_score"]["score"]
    n = out["metrics"]["meta_score"]["n_paired"]
    assert got["last"] == pytest.approx(got["first"] - s0 / n)
    assert got["mean"] == pytest.approx(got["first"] - s0 / 2 / n)


def test_compare_table_does_not_truncate_the_verdict_in_a_terminal(reg, tmp_path):
    import os
    import subprocess
    import sys

    a, b = make_run(reg, 0.0, 0.05, 51), make_run(reg, 0.0, 0.05, 52)
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a.to_dict()))
    pb.write_text(json.dumps(b.to_dict()))
    cmd = f"{sys.executable} -m assay compare {pa} {pb}"
    r = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True,
                       env={**os.environ, "COLUMNS": "80", "LINES": "40", "TERM": "xterm"})
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert re.search(r"meta_score +0\.\d{3} +0\.\d{3} +[-+]0\.\d{3} +\d\.\d{4} +\d\.\d{4} +120 +not significant",
                     text), text
    assert "…" not in text


def test_report_baseline_takes_the_flag_its_duplicate_error_names(reg, tmp_path):
    a = make_run(reg, 0.0, 0.05, 43, n_tasks=10)
    d = a.to_dict()
    d["traces"].append(dict(d["traces"][0]))
    pa, pb, html = tmp_path / "a.json", tmp_path / "dup.json", tmp_path / "r.html"
    pa.write_text(json.dumps(a.to_dict()))
    pb.write_text(json.dumps(d))
    r = CliRunner().invoke(main, ["report", str(pb), "--baseline", str(pa), "-o", str(html)])
    assert r.exit_code == 2 and "--allow-duplicate-ids" in r.stderr and not html.exists()
    r = CliRunner().invoke(main, ["report", str(pb), "--baseline", str(pa), "-o", str(html),
                                  "--allow-duplicate-ids", "first"])
    assert r.exit_code == 0, r.output
    assert "<h2>Comparison</h2>" in html.read_text()


def test_sequential_compare_continues_its_state_in_the_store(reg, tmp_path):
    """`assay compare --sequential` looks after each batch, keeps its state in the store, and says
    "continue" until the difference is clear, then "B better"; old tasks are not recounted."""
    store = tmp_path / "runs.sqlite3"
    decisions = []
    for batch in (1, 2, 3, 4):
        n = 40 * batch
        a, b = make_run(reg, 0.0, 0.15, 21, n_tasks=n), make_run(reg, 0.08, 0.15, 22, n_tasks=n)
        pa, pb = tmp_path / f"a{batch}.json", tmp_path / f"b{batch}.json"
        pa.write_text(json.dumps(a.to_dict()))
        pb.write_text(json.dumps(b.to_dict()))
        r = CliRunner().invoke(main, ["compare", str(pa), str(pb), "--sequential", "--metric", "meta_score",
                                      "--store", str(store), "-f", "json"])
        out = json.loads(r.stdout)
        assert out["n_tasks"] == n and out["new_tasks"] == 40 and out["tasks_not_recounted"] == n - 40
        decisions.append((out["decision"], r.exit_code))
    assert decisions[0] == ("continue", 3) and decisions[-1] == ("B better", 0)
    assert out["cs_low"] > 0 and out["cs_low"] <= out["mean_difference"] <= out["cs_high"]
    r = CliRunner().invoke(main, ["compare", str(pa), str(pb), "--sequential", "--metric", "meta_score",
                                  "--store", str(store)])
    assert r.stdout.splitlines()[-1] == "B better" and "confidence sequence [" in r.stdout and r.exit_code == 0
    # the same runs the other way round, a fresh sequence: A better, exit 1
    r = CliRunner().invoke(main, ["compare", str(pb), str(pa), "--sequential", "--metric", "meta_score",
                                  "--store", str(store), "--sequence", "reverse"])
    assert r.stdout.splitlines()[-1] == "A better" and r.exit_code == 1
    # the same agent twice: nothing to decide
    r = CliRunner().invoke(main, ["compare", str(pa), str(pa), "--sequential", "--metric", "meta_score",
                                  "--store", str(store), "--sequence", "null"])
    assert r.stdout.splitlines()[-1] == "continue" and r.exit_code == 3
    # a look at another metric under the same name is refused; --reset starts again
    r = CliRunner().invoke(main, ["compare", str(pa), str(pb), "--sequential", "--store", str(store)])
    assert r.exit_code == 2 and "one sequence, one metric" in r.output
    r = CliRunner().invoke(main, ["compare", str(pa), str(pb), "--sequential", "--store", str(store), "--reset",
                                  "-f", "json"])
    assert r.exit_code in (0, 3) and json.loads(r.stdout)["n_tasks"] == 160


def test_sequential_compare_refuses_scores_outside_0_1(reg):
    from assay.analysis._compare import sequential_compare
    from assay.errors import DataError

    from assay.store import result_from_dict

    a = Evaluation(["meta_score"], registry=reg).run(
        [{"id": "t1", "task_id": "t1", "turns": [{"input": "q", "output": "a"}], "metadata": {"v": 0.5}}])
    data = a.to_dict()
    data["traces"][0]["metrics"]["meta_score"]["score"] = 3.0  # a hand-edited results file
    a = result_from_dict(data)
    with pytest.raises(DataError, match=r"scores in \[0, 1\]: meta_score of trace 't1' in run A is 3.0"):
        sequential_compare(a, a, metric="meta_score")


def test_pytest_helper_assert_not_worse_fails_only_on_a_clear_regression(reg, tmp_path):
    from assay.pytest_plugin import assert_not_worse

    store = tmp_path / "runs.sqlite3"
    base, better = make_run(reg, 0.0, 0.05, 31, n_tasks=60), make_run(reg, 0.2, 0.05, 32, n_tasks=60)
    look = assert_not_worse(base, base, metric="meta_score", sequence="same", store=store)
    assert look["decision"] == "continue" and look["n_tasks"] == 60
    assert assert_not_worse(base, better, metric="meta_score", sequence="up", store=store)["decision"] == "B better"
    with pytest.raises(AssertionError, match=r"meta_score: the candidate is worse than the baseline .* over 60 tasks"):
        assert_not_worse(better, base, metric="meta_score", sequence="down", store=store)
    # the state was kept: the next look at the same runs adds no task
    again = assert_not_worse(base, base, metric="meta_score", sequence="same", store=store)
    assert (again["n_tasks"], again["new_tasks"], again["tasks_not_recounted"]) == (60, 0, 60)


@pytest.mark.parametrize("columns", [80, 95, 200])
def test_compare_table_breaks_long_metric_names_between_words_and_never_cuts_a_number(columns):
    """At 80 columns `agent_utilization` was shown as `agent_utili` / `zation` and intervals as
    `[+0.000,` / `+0.000]`; names now break only after an underscore and each interval stays whole."""
    import io
    import re
    from pathlib import Path

    import assay
    from assay.cli._render import plain_console
    from assay.cli._render_compare import comparison_table

    names = ["agent_utilization", "coordination_efficiency", "prompt_injection_detection",
             "tool_sequence_correctness"]
    traces = str(Path(__file__).resolve().parents[2] / "examples" / "traces.jsonl")
    a, b = assay.evaluate(traces, names), assay.evaluate(traces, names)
    buf = io.StringIO()
    comparison_table(compare_runs(a, b), plain_console(file=buf, width=columns, color_system=None))
    text = buf.getvalue()
    assert max(len(line) for line in text.splitlines()) <= columns, text
    for name in names:
        pieces = re.findall(r"[^_]*_+|[^_]+$", name)  # each piece at a line's start, or the whole name on one line
        pattern = "".join(re.escape(p) + (r"(?:[^\n]*\n)?" if p.endswith("_") else "") for p in pieces)
        assert re.search(rf"(?m)^{pattern}", text), (name, text)
    assert len(re.findall(r"\[[-+]\d\.\d{3},[-+]\d\.\d{3}\]", text)) == 3, text  # the rows that have one
    one_line = re.search(r"(?m)^prompt_injection_detection .*\[", text) is not None  # when the row fits
    assert one_line == (columns == 200) and (re.search(r"(?m)^prompt_ +0", text) is not None) == (columns == 80)


def test_comparing_a_run_with_itself_is_said(reg, tmp_path):
    """`assay compare latest latest` (or one file twice, by two names) compared a run with itself in silence."""
    pa = tmp_path / "a.json"
    pa.write_text(json.dumps(make_run(reg, 0.0, 0.05, 61, n_tasks=5).to_dict()))
    r = CliRunner().invoke(main, ["compare", str(pa), str(tmp_path / "." / "a.json")])
    assert "warning: A and B are the same run" in r.stderr
    pb = tmp_path / "b.json"
    pb.write_text(pa.read_text())  # a copy is another file: no warning (its run id, none here, tells nothing)
    assert "same run" not in CliRunner().invoke(main, ["compare", str(pa), str(pb)]).stderr
