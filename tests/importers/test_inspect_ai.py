"""Inspect AI eval logs: one trace per sample and epoch, task_id = sample id, trial = epoch."""

from __future__ import annotations

from ._helpers import DATA, issues_of, plain, traces_of
from .test_openai_chat import run_cli


def test_each_sample_and_epoch_is_a_trial_of_the_sample() -> None:
    t = traces_of(DATA / "inspect_eval_log.json")
    assert [(x.id, x.task_id, x.trial) for x in t.values()] == [
        ("3-epoch1", "3", 1), ("3-epoch2", "3", 2), ("4-epoch1", "4", 1), ("4-epoch2", "4", 2)]
    first = plain(t["3-epoch1"])
    assert first["system"] == "You are a helpful assistant with a calculator."
    assert first["turns"] == [{"input": "What is 3 squared?", "output": "9", "reasoning": "Use the calculator.",
                               "tool_calls": [{"name": "calculator", "arguments": {"expression": "3**2"}, "result": "9",
                                               "id": "call_3_1"}]}]
    assert first["expected"] == {"output": "9"}
    assert first["usage"] == {"input_tokens": 180, "output_tokens": 24, "total_tokens": 204}  # model_usage
    assert first["latency_ms"] == 1500.0 and first["status"] == "completed"
    assert first["metadata"]["scores"]["match"]["value"] == "C"
    assert first["metadata"]["model"] == "openai/gpt-4o-mini" and first["metadata"]["eval"]["task"] == "squares"


def test_a_tool_error_is_the_calls_error() -> None:
    call = plain(traces_of(DATA / "inspect_eval_log.json")["4-epoch2"])["turns"][0]["tool_calls"][0]
    assert call["error"] == "calculator timed out" and "result" not in call


def test_malformed_samples_are_issues_naming_the_sample() -> None:
    issues = [str(i).split("inspect_malformed.json:", 1)[1] for i in issues_of(DATA / "inspect_malformed.json")]
    assert issues[0].startswith("1: samples[0].messages[2].tool_calls[0].arguments: not valid JSON")
    assert issues[1:] == ["1: samples[1].epoch: expected an integer",
                          "1: trace '4-epoch1' has no turns: no user message, answer or tool call was found in it, "
                          "so there is nothing to score",
                          "1: samples[3].id: required field is missing"]
    assert traces_of(DATA / "inspect_malformed.json") == {}


def test_assay_run_detects_the_log_and_computes_pass_at_k_across_epochs() -> None:
    out = run_cli(DATA / "inspect_eval_log.json", "-m", "latency_score")
    assert [(t["task_id"], t["trial"]) for t in out["traces"]] == [("3", 1), ("3", 2), ("4", 1), ("4", 2)]
    trials = out["statistics"]["trials"]
    assert trials["n_tasks"] == 2 and trials["trials_per_task"] == {"min": 2, "max": 2}
    assert [row["k"] for row in trials["by_metric"]["latency_score"]] == [1, 2]
