"""Run-level intervals: reproducible in every process, and the right method for 0/1 metrics."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from assay.engine._statistics import task_key

TOOLS = ("search", "lookup", "weather", "book", "cancel", "refund", "email")


def clustered_traces(path: Path, n_tasks: int = 40, trials: int = 3) -> Path:
    """Tasks of varied difficulty, so every resampling of tasks gives a different mean."""
    rng = random.Random(7)
    rows = []
    for t in range(n_tasks):
        skill = rng.random()
        for j in range(trials):
            called = [name for name in TOOLS if rng.random() < (skill if name in TOOLS[:3] else 1 - skill)]
            rows.append({"id": f"task{t}-{j}", "task_id": f"task{t}", "trial": j,
                         "turns": [{"input": "q", "output": "a", "tool_calls": [{"name": c} for c in called]}],
                         "expected": {"tool_calls": [{"name": c} for c in TOOLS[:3]]}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_task_key_is_stable_across_processes():
    code = "from assay.engine._statistics import task_key; print(task_key('task-7'), task_key('é'))"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert outs == {f"{task_key('task-7')} {task_key('é')}\n"}


def test_cli_intervals_are_bit_identical_across_hash_seeds(tmp_path):
    data = clustered_traces(tmp_path / "t.jsonl")
    seen = []
    for seed in ("0", "1", "12345"):
        r = subprocess.run([sys.executable, "-m", "assay", "run", str(data), "-f", "json", "--no-store",
                            "-m", "tool_selection_accuracy", "-m", "tool_sequence_correctness"],
                           capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed})
        assert r.returncode in (0, 1), r.stderr
        out = json.loads(r.stdout)
        cis = {name: (s["mean_ci"], s["pass_rate_ci"]) for name, s in out["summary"].items()}
        assert all(ci is not None for pair in cis.values() for ci in pair), cis
        seen.append((cis, out["statistics"]))
    assert seen[0] == seen[1] == seen[2]
    # the clustered interval really is resampled (not a closed form that would be stable anyway)
    assert "bootstrap" in seen[0][1]["interval_method"] or "cluster" in seen[0][1]["interval_method"]


def test_a_binary_metric_mean_gets_the_wilson_interval_not_zero_width(tmp_path):
    from click.testing import CliRunner

    from assay.cli import main
    from assay.stats import bounded_mean_interval

    rows = [{"id": f"t{i}", "turns": [{"input": "q", "output": "a", "tool_calls": [{"name": "weather"}]}],
             "expected": {"tool_calls": [{"name": "search"}]}} for i in range(10)]
    data = tmp_path / "t.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = CliRunner().invoke(main, ["run", str(data), "-f", "json", "--no-store", "-m", "tool_selection_accuracy"])
    s = json.loads(r.stdout)["summary"]["tool_selection_accuracy"]
    w = bounded_mean_interval([0.0] * 10)
    assert w.method == "wilson_half_cc"
    assert s["mean"] == 0.0 and s["mean_ci"] == [w.low, w.high] == s["pass_rate_ci"]
    assert s["mean_ci"][1] > 0.25


def test_passk_curve_uses_one_common_task_set_by_default():
    from assay.engine._statistics import passk_curve

    # task 0: 4 trials, all pass; task 1: 3 trials, 1 pass; tasks 2-3: 4 trials, 2 pass
    tasks = [0] * 4 + [1] * 3 + [2] * 4 + [3] * 4
    ok = [1, 1, 1, 1] + [1, 0, 0] + [1, 1, 0, 0] * 2
    every = passk_curve(tasks, ok, task_set="all")
    assert [r["n_tasks"] for r in every] == [4, 4, 4, 3]  # task 1 drops out at k = 4 ...
    common = passk_curve(tasks, ok)
    # k = 1 rests on every task (the weak task 1 does not drop out of it); k >= 2 on the common set
    assert [r["n_tasks"] for r in common] == [4, 3, 3, 3] and [r["n_undefined"] for r in common] == [0, 1, 1, 1]
    assert common[0]["pass_at_k"] == pytest.approx((1 + 1 / 3 + 0.5 + 0.5) / 4)
    pow_k = [r["pass_pow_k"] for r in common[1:]]
    assert pow_k == sorted(pow_k, reverse=True)  # ... so on one task set pass^k can only fall with k
    assert all(r["pass_pow_k_ci_low"] < r["pass_pow_k_ci_high"] for r in common)


def test_run_statistics_name_the_task_set_and_count_tasks_per_k(tmp_path):
    data = clustered_traces(tmp_path / "t.jsonl", n_tasks=12, trials=3)
    from assay import Evaluation

    stats = Evaluation(["tool_selection_accuracy"]).run(str(data)).statistics
    trials = stats["trials"]
    assert trials["task_set"] == "common" and "common set of tasks" in trials["about"]
    rows = trials["by_metric"]["tool_selection_accuracy"]
    assert [r["k"] for r in rows] == [1, 2, 3] and {r["n_tasks"] for r in rows} == {12}
    assert {r["method"] for r in rows} == {"task_wilson"}


def test_all_tasks_per_k_is_an_option_and_is_labelled(tmp_path):
    from assay import Evaluation

    data = clustered_traces(tmp_path / "t.jsonl", n_tasks=6, trials=2)
    with data.open("a") as f:  # one task with 4 trials: only it reaches k = 3 and 4
        for j in range(4):
            f.write(json.dumps({"id": f"long-{j}", "task_id": "long", "turns": [{"input": "q", "output": "a"}],
                                "expected": {"tool_calls": [{"name": "search"}]}}) + "\n")
    common = Evaluation(["tool_selection_accuracy"]).run(str(data)).statistics["trials"]
    every = Evaluation(["tool_selection_accuracy"]).run(str(data), passk_tasks="all").statistics["trials"]
    assert every["task_set"] == "all" and "differs between k" in every["about"]
    assert [r["n_tasks"] for r in every["trace_passed"]] == [7, 7, 1, 1]
    assert [r["n_tasks"] for r in common["trace_passed"]] == [7, 7]


def test_every_summary_mean_lies_inside_its_interval(tmp_path):
    from assay import Evaluation

    data = clustered_traces(tmp_path / "t.jsonl", n_tasks=25, trials=3)
    run = Evaluation(["tool_selection_accuracy", "tool_sequence_correctness", "parameter_quality"]).run(str(data))
    checked = 0
    for s in run.summary.values():
        if s.mean_ci is not None:
            assert s.mean_ci[0] <= s.mean <= s.mean_ci[1] and s.mean_ci[0] < s.mean_ci[1]
            assert s.pass_rate_ci[0] <= s.pass_rate <= s.pass_rate_ci[1]
            checked += 1
    assert checked >= 2
