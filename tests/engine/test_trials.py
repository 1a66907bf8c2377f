"""Trials that tell the truth: a failed run is a failed trial, a harness fault is excluded (counted,
with its reason, against --max-errors), and every task gets its own line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import assay
from assay.engine._statistics import StatisticsCollector
from assay.model import Trace
from tests.support.cli import cli_env, run_pipe


def trace(task: str, trial: int, *, status: str | None = "completed", answer: str = "done",
          **metadata: object) -> dict:
    return {"id": f"{task}#{trial}", "task_id": task, "trial": trial, "status": status, "latency_ms": 0,
            "messages": [{"role": "user", "content": f"please do {task}"},
                         {"role": "assistant", "content": answer}], "metadata": metadata}


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


TWO_FAILED_TWO_GOOD = [trace("a", 0, status="failed", answer="", error="agent timed out after 60 s"),
                       trace("a", 1, status="failed", answer="", error="agent crashed"),
                       trace("b", 0), trace("b", 1)]


def test_two_failed_and_two_good_trials_give_2_passed_2_failed_pass1_half_and_exit_1(tmp_path):
    data = write(tmp_path / "t.jsonl", TWO_FAILED_TWO_GOOD)
    out = tmp_path / "r.json"
    r = run_pipe(["run", str(data), "-m", "latency_score", "--no-store", "-o", str(out)], cli_env(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    text = " ".join((r.stdout + r.stderr).split())
    assert "4 traces: 2 passed, 2 failed (2 failed runs)" in text
    assert "k=1 0.50 / 0.50" in text
    doc = json.loads(out.read_text())
    assert doc["run"]["n_passed"] == 2 and doc["run"]["n_failed"] == 2 and doc["run"]["n_failed_runs"] == 2
    assert doc["statistics"]["trials"]["trace_passed"][0]["pass_at_k"] == 0.5
    by_id = {t["id"]: t for t in doc["traces"]}
    crashed = by_id["a#0"]
    # the metric said 1.0 (a crash records 0 ms): shown, but the trial fails
    assert crashed["passed"] is False and crashed["outcome"] == "failed" and "timed out" in crashed["outcome_reason"]
    assert crashed["metrics"]["latency_score"]["score"] == 1.0
    assert crashed["metrics"]["latency_score"]["passed"] is False
    assert doc["summary"]["latency_score"]["pass_rate"] == 0.5
    tasks = {t["task_id"]: t for t in doc["statistics"]["trials"]["tasks"]}
    assert set(tasks) == {"a", "b"}
    assert tasks["a"]["passed"] == 0 and tasks["a"]["failed_runs"] == 2 and tasks["b"]["passed"] == 2
    assert "outcome" not in by_id["b#0"]  # a normal trial's record is as before


def test_the_flaky_four_tasks_by_three_trials_example_gives_the_right_pass_pow_k():
    # A passes 3/3; B passes 2/3 but its third run crashed (its metrics would pass it); C passes 2/3;
    # D's runs all failed. pass^2 = (1 + 1/3 + 1/3 + 0) / 4, pass^3 = 1/4.
    records = [trace("A", t) for t in range(3)]
    records += [trace("B", 0), trace("B", 1), trace("B", 2, status="failed", answer="")]
    records += [trace("C", 0), trace("C", 1), {**trace("C", 2), "latency_ms": 60_000}]
    records += [trace("D", t, status="failed", answer="") for t in range(3)]
    result = assay.evaluate([Trace(**r) for r in records], ["latency_score"])
    rows = result.statistics["trials"]["trace_passed"]
    assert [r["k"] for r in rows] == [1, 2, 3]
    assert rows[0]["pass_at_k"] == pytest.approx(7 / 12)
    assert rows[1]["pass_pow_k"] == pytest.approx(5 / 12)
    assert rows[2]["pass_pow_k"] == pytest.approx(0.25)
    tasks = {t["task_id"]: t for t in result.statistics["trials"]["tasks"]}
    assert [t["task_id"] for t in result.statistics["trials"]["tasks"]] == ["A", "B", "C", "D"]  # input order
    assert {k: t["flaky"] for k, t in tasks.items()} == {"A": False, "B": True, "C": True, "D": False}
    assert result.statistics["trials"]["per_task_k"] == 3
    assert {k: t["pass_pow_k"] for k, t in tasks.items()} == {"A": 1.0, "B": 0.0, "C": 0.0, "D": 0.0}
    assert tasks["B"]["pass_rate"] == pytest.approx(2 / 3)
    low, high = tasks["B"]["pass_rate_ci"]
    assert low < 2 / 3 < high
    assert result.status == "failed"


@pytest.mark.parametrize("cap, kept", [(3, ["B", "C", "D"]), (2, ["B", "C"]), (1, ["C"])])
def test_a_table_over_the_cap_keeps_the_flaky_and_weakest_tasks_in_input_order(monkeypatch, cap, kept):
    """Beyond MAX_TASK_ROWS the table keeps the tasks every reader ranks first (flaky, then the lowest
    pass rate, then input order) and counts the rest; the counts over every task are unchanged."""
    from assay.cli._render import task_lines
    from assay.engine import _statistics
    from assay.report._tasks import tasks_section

    records = [trace("A", t) for t in range(3)]  # 3/3
    records += [trace("B", 0), trace("B", 1), trace("B", 2, status="failed", answer="")]  # flaky, 2/3
    records += [trace("C", 0), {**trace("C", 1), "latency_ms": 60_000}, {**trace("C", 2), "latency_ms": 60_000}]  # flaky, 1/3
    records += [trace("D", t, status="failed", answer="") for t in range(3)]  # 0/3
    full = assay.evaluate([Trace(**r) for r in records], ["latency_score"]).statistics["trials"]
    monkeypatch.setattr(_statistics, "MAX_TASK_ROWS", cap)
    result = assay.evaluate([Trace(**r) for r in records], ["latency_score"])
    trials = result.statistics["trials"]
    assert [t["task_id"] for t in trials["tasks"]] == kept
    assert trials["tasks_omitted"] == 4 - cap
    assert trials["n_flaky"] == full["n_flaky"] == 2
    assert trials["tasks"] == [t for t in full["tasks"] if t["task_id"] in kept]  # the same rows, only fewer
    assert "tasks_omitted" not in full
    assert task_lines(result)[0].startswith("per task (4 tasks, 2 flaky")
    monkeypatch.setattr("assay.cli._render.TASKS_SHOWN", 1)
    assert task_lines(result)[-1] == (f"... and 3 more tasks (the flaky and weakest {cap} in the results file: "
                                      "statistics.trials.tasks)")
    grid = tasks_section(result, set())
    assert grid is not None and f"{4 - cap} more tasks not drawn" in str(grid)


def test_a_failed_trial_under_a_judge_metric_stays_in_the_trial_count(judge_server):
    # the judge scores the good answers 5 (pass); the failed run has no answer to judge
    judge_server.default = {"evidence": [], "reasoning": "on topic", "score": 5}
    records = [trace("a", 0), trace("a", 1, status="failed", answer="", error="agent unreachable mid-run"),
               trace("b", 0), trace("b", 1)]
    result = assay.evaluate([Trace(**r) for r in records], ["answer_relevance"],
                            judge=f"openai-compatible:scripted@{judge_server.url}", cache=False)
    failed = next(t for t in result.traces if t.id == "a#1")
    assert failed.passed is False and failed.outcome == "failed"
    rows = result.statistics["trials"]["trace_passed"]
    assert rows[0]["n_tasks"] == 2 and rows[0]["pass_at_k"] == pytest.approx(0.75)
    assert result.run.n_failed == 1 and result.run.n_passed == 3
    assert result.status == "failed"


def test_a_harness_fault_is_excluded_counted_with_its_reason_and_counts_against_max_errors(tmp_path):
    records = [trace("a", 0), trace("a", 1),
               trace("b", 0, status="failed", answer="", harness_fault="unreachable",
                     harness_error="connection refused before any reply"),
               trace("b", 1, status="partial", simulator_error="the simulated user answered as the agent")]
    data = write(tmp_path / "t.jsonl", records)
    out = tmp_path / "r.json"
    env = cli_env(tmp_path)
    r = run_pipe(["run", str(data), "-m", "latency_score", "--no-store", "-o", str(out)], env)
    assert r.returncode == 3, r.stdout + r.stderr  # never a way to pass
    text = " ".join((r.stdout + r.stderr).split())  # (the terminal table wraps long lines)
    assert "2 excluded (harness faults)" in text and "harness fault 'unreachable'" in text
    assert "connection refused before any reply" in text and "harness fault 'simulator'" in text
    doc = json.loads(out.read_text())
    run = doc["run"]
    assert run["n_excluded"] == 2 and run["n_passed"] == 2 and run["n_failed"] == 0
    assert run["excluded"]["unreachable"] == {"n": 1, "reason": "unreachable: connection refused before any reply"}
    assert run["excluded"]["simulator"]["n"] == 1
    excluded = [t for t in doc["traces"] if t.get("outcome") == "excluded"]
    assert len(excluded) == 2 and all(t["passed"] is None and t["metrics"] == {} for t in excluded)
    assert doc["summary"]["latency_score"]["n"] == 2  # no statistic holds them
    tasks = {t["task_id"]: t for t in doc["statistics"]["trials"]["tasks"]}
    assert tasks["b"]["trials"] == 0 and tasks["b"]["excluded"] == 2 and tasks["b"]["pass_rate"] is None
    r = run_pipe(["run", str(data), "-m", "latency_score", "--no-store", "--max-errors", "2"], env)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run_pipe(["run", str(data), "-m", "latency_score", "--no-store", "--max-errors", "1"], env)
    assert r.returncode == 3 and "2 trials excluded for harness faults" in r.stdout + r.stderr


def test_only_excluded_trials_never_pass():
    result = assay.evaluate([Trace(**trace("a", t, harness_fault="tools", harness_error="tool server crashed"))
                             for t in range(2)], ["latency_score"])
    assert result.status == "could_not_evaluate"
    result.run.max_errors = 1.0  # everything tolerated: still nothing was scored
    assert result.status == "could_not_evaluate"


def test_failed_and_excluded_trials_survive_the_run_store(tmp_path):
    from assay.store import load_run

    records = [trace("a", 0), trace("a", 1, status="failed", answer="", error="boom"),
               trace("b", 0, harness_fault="tools", harness_error="tool harness crashed"), trace("b", 1)]
    store = tmp_path / "runs.sqlite3"
    result = assay.evaluate([Trace(**r) for r in records], ["latency_score"], store=str(store))
    loaded = load_run(result.run.run_id, store)
    by_id = {t.id: t for t in loaded.traces}
    assert by_id["a#1"].passed is False and by_id["a#1"].outcome == "failed" and by_id["a#1"].outcome_reason
    assert by_id["b#0"].passed is None and by_id["b#0"].outcome == "excluded" and "tool harness" in \
        by_id["b#0"].outcome_reason
    assert by_id["a#0"].passed is True and by_id["a#0"].outcome is None
    assert loaded.statistics["trials"]["tasks"] == result.statistics["trials"]["tasks"]


def test_unequal_trials_keep_every_task_at_k1_and_say_what_each_k_rests_on(tmp_path):
    # three tasks with 3 trials all passing; one task with a single, failed trial
    records = [trace(t, i) for t in "abc" for i in range(3)] + [trace("d", 0, status="failed", answer="")]
    data = write(tmp_path / "t.jsonl", records)
    r = run_pipe(["run", str(data), "-m", "latency_score", "--no-store"], cli_env(tmp_path))
    text = " ".join((r.stdout + r.stderr).split())
    assert "k=1 0.75 / 0.75 (4 tasks)" in text and "k=3 1.00 / 1.00 (3 tasks)" in text
    assert "per task (4 tasks" in text


def test_the_per_task_table_of_merged_parts_is_that_of_one_pass():
    def fill(collector: StatisticsCollector, items: list[tuple[str, bool | None, str | None]]) -> None:
        for task, passed, outcome in items:
            collector.add_trace(task, passed, outcome)

    items = [("x", True, None), ("y", False, "failed"), ("x", False, None), ("y", None, "excluded"),
             ("z", True, None), ("x", True, None), ("y", True, None), ("z", True, None)]
    whole = StatisticsCollector()
    fill(whole, items)
    left, right = StatisticsCollector(), StatisticsCollector()
    fill(left, items[:3])
    fill(right, items[3:])
    one, merged = whole.finish({}), left.merge(right).finish({})
    assert one["trials"]["tasks"] == merged["trials"]["tasks"]
    tasks = {t["task_id"]: t for t in one["trials"]["tasks"]}
    assert tasks["y"] == {**tasks["y"], "trials": 2, "passed": 1, "failed_runs": 1, "excluded": 1, "flaky": True}


def test_interleaved_trials_keep_one_task_id_per_task_and_the_same_table():
    compacted, plain = StatisticsCollector(), StatisticsCollector()
    compacted._compact_at = 4  # compact after every few task changes
    for trial in range(3):
        for task in ("t1", "t2", "t3", "t4", "t5"):
            for c in (compacted, plain):
                c.add_trace(task, (trial + len(task) + int(task[1])) % 2 == 0)
    assert len(compacted._name_at) < len(plain._name_at) == 15
    assert compacted.finish({})["trials"]["tasks"] == plain.finish({})["trials"]["tasks"]
    assert [t["task_id"] for t in plain.finish({})["trials"]["tasks"]] == ["t1", "t2", "t3", "t4", "t5"]


def test_junit_fails_a_failed_run_and_skips_an_excluded_trial():
    import xml.etree.ElementTree as ET

    from assay.report._ci import to_junit

    records = [trace("a", 0), trace("a", 1, status="failed", answer="", error="agent timed out"),
               trace("b", 0, harness_fault="unreachable", harness_error="connection refused")]
    root = ET.fromstring(to_junit(assay.evaluate([Trace(**r) for r in records], ["latency_score"])))
    suite = next(s for s in root if s.get("name") == "assay.trials")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("2", "1", "1")
    failure = suite.find("testcase[@name='a#1']/failure")
    assert failure is not None and "timed out" in failure.get("message")
    assert "connection refused" in suite.find("testcase[@name='b#0']/skipped").get("message")


def test_a_trial_no_metric_scored_is_counted_as_unscored_not_dropped():
    records = [trace("a", 0), trace("a", 1), {**trace("a", 2), "latency_ms": None}]
    tasks = assay.evaluate([Trace(**r) for r in records], ["latency_score"]).statistics["trials"]["tasks"]
    assert tasks == [{**tasks[0], "task_id": "a", "trials": 2, "passed": 2, "unscored": 1}]


def test_assert_passes_names_a_failed_run_and_an_excluded_trial():
    from assay.pytest_plugin import assert_passes

    records = [trace("a", 0, status="failed", answer="", error="agent timed out"),
               trace("a", 1, harness_fault="tools", harness_error="tool server crashed")]
    with pytest.raises(AssertionError) as caught:
        assert_passes([Trace(**r) for r in records], ["latency_score"])
    text = str(caught.value)
    assert "a#0: the agent's run failed: agent timed out" in text and "tool server crashed" in text
    assert "latency_score scored" not in text  # its metric passed: the run's failure is what failed it
