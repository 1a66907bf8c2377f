"""`assay plan` from the variance of paired differences, checked by simulating the comparisons it plans."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from assay import Evaluation, MetricContext
from assay.cli import main
from assay.analysis._plan import plan_run
from assay.metrics import Registry, metric
from assay.stats import paired_compare

WITHIN = 0.12  # sd of a trial around its task's level


@pytest.fixture(scope="module")
def reg() -> Registry:
    r = Registry()

    @metric("meta_score", dimension="response_quality", registry=r)
    def meta_score(ctx: MetricContext):
        return ctx.trace.metadata["v"]

    @metric("other", dimension="tool_calling", registry=r)
    def other(ctx: MetricContext):
        return ctx.trace.metadata["w"]

    return r


def trial(rng: random.Random, level: float, shift: float = 0.0) -> float:
    return min(1.0, max(0.0, level + shift + rng.gauss(0, WITHIN)))


def pilot(reg, n_tasks: int = 20, trials: int = 4, seed: int = 1):
    """Tasks of very different difficulty (between-task sd 0.14): that variance cancels when pairing."""
    rng = random.Random(seed)
    traces = []
    for t in range(n_tasks):
        level = rng.uniform(0.25, 0.75)
        for j in range(trials):
            traces.append({"id": f"t{t}-{j}", "task_id": f"t{t}", "turns": [{"input": "q", "output": "a"}],
                           "metadata": {"v": trial(rng, level), "w": trial(rng, level)}})
    return Evaluation(["meta_score", "other"], registry=reg).run(traces)


def simulated_power(n_tasks: int, trials: int, delta: float, alpha: float, reps: int = 150, seed: int = 2) -> float:
    rng = random.Random(seed)
    hits = 0
    for _ in range(reps):
        a, b, clusters = {}, {}, {}
        for t in range(n_tasks):
            level = rng.uniform(0.25, 0.75)
            for j in range(trials):
                key = f"t{t}-{j}"
                a[key], b[key], clusters[key] = trial(rng, level), trial(rng, level, delta), t
        hits += paired_compare(a, b, clusters, n_boot=1, n_perm=2000, seed=rng.randrange(1 << 30)).p_value < alpha
    return hits / reps


def test_plan_reaches_the_power_it_promises_and_no_more(reg):
    rows = plan_run(pilot(reg, n_tasks=40, seed=2), delta=0.06)
    row = rows["meta_score"]
    assert row["n_tests"] == 2 and row["alpha_per_test"] == 0.025  # Holm over the two metrics
    assert row["trials_per_task"] == 4 and row["feasible"]
    tasks = row["tasks_needed"]
    # 2 x 0.12^2 / 4 trials = 0.0072 per task mean; (t_.9875 + t_.8)^2 x 0.0072 / 0.06^2 ~ 21 tasks
    # (the between-task variance, 0.14^2 x 4 trials, would have tripled it)
    assert 16 <= tasks <= 30, row
    # the sign-flip test at the planned size: power 0.8 up to the pilot's sampling error
    assert 0.70 <= simulated_power(tasks, 4, 0.06, 0.025, reps=300) <= 0.93
    assert simulated_power(max(7, tasks // 2), 4, 0.06, 0.025) < 0.65  # half as many tasks fall short


def test_plan_with_a_baseline_uses_the_observed_differences(reg, tmp_path):
    a, b = pilot(reg, seed=3), pilot(reg, seed=3)
    same = plan_run(a, baseline=b)["meta_score"]
    assert same["sd_difference"] == 0.0 and "baseline" in same["source"]
    c = pilot(reg, seed=4)  # other tasks' levels: a big task x run "interaction"
    far = plan_run(a, baseline=c)["meta_score"]
    assert far["interaction"] > 0.01 and far["tasks_needed"] > plan_run(a)["meta_score"]["tasks_needed"]
    pa, pc = tmp_path / "a.json", tmp_path / "c.json"
    pa.write_text(json.dumps(a.to_dict()))
    pc.write_text(json.dumps(c.to_dict()))
    r = CliRunner().invoke(main, ["plan", str(pa), "--baseline", str(pc), "-f", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["meta_score"]["tasks_needed"] == far["tasks_needed"]
    r = CliRunner().invoke(main, ["plan", str(pa)])
    assert r.exit_code == 0 and "Holm over 2" in r.stdout and "tasks needed" in r.stdout


def test_one_trial_per_task_plans_on_an_upper_bound_and_says_so(reg):
    rng = random.Random(5)
    traces = [{"id": f"t{i}", "turns": [{"input": "q", "output": "a"}],
               "metadata": {"v": trial(rng, 0.5), "w": 0.5}} for i in range(30)]
    row = plan_run(Evaluation(["meta_score"], registry=reg).run(traces), delta=0.05)["meta_score"]
    assert "upper bound" in row["source"] and row["n_tests"] == 1 and row["tasks_needed"] > 0
