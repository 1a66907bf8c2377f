"""Fair Forge's Agentic metric (seed 001) as agentic_correctness: with and without a judge."""

from __future__ import annotations

import pytest
from scripted import ScriptedJudge
from test_machinery import run

from assay import ConfigError, Warning, evaluate
from assay.judge import errored
from assay.metrics import Requirement
from assay.metrics._base import REGISTRY
from assay.stats import BayesianMode

CALC = {"id": "conversation_001", "turns": [
    {"input": "What is 5 + 3?", "output": "The result is 8.",
     "tool_calls": [{"name": "calculator", "arguments": {"a": 5, "b": 3}, "result": 8, "step": 1}],
     "uses_tool_results": True,
     "expected": {"output": "8", "tool_calls": [{"name": "calculator", "arguments": {"a": 5, "b": 3}, "step": 1}],
                  "tool_order": "any"}},
    {"input": "What is 100 / 4?", "output": "100 divided by 4 is 25.", "expected": {"output": "25"}},
]}


def ten(correct: int) -> dict:
    turns = [{"input": f"q{i}", "output": f"answer {i}", "expected": {"output": f"answer {i}"}} for i in range(10)]
    for t in turns[correct:]:
        t["output"] = "something else entirely"
    return {"id": f"ten{correct}", "turns": turns}


def correctness(values: dict[str, float]):
    def answer(request):
        user = request.messages[1]["content"]
        return {"evidence": [], "reasoning": "r", "correctness": next(v for k, v in values.items() if k in user)}
    return answer


def test_declared_without_a_judge_requirement_and_opt_in():
    spec = REGISTRY.get("agentic_correctness").spec
    assert Requirement.JUDGE not in spec.requires and Requirement.EXPECTED_OUTPUT in spec.requires
    assert spec.default is False


def test_seed_example_without_a_judge_uses_reference_matchers():
    r = run("agentic_correctness", CALC, None)
    assert r.score == 1.0 and r.passed is True
    d = r.details
    assert d["correctness_method"] == "reference" and d["reference_matchers"] == ["numeric", "numeric"]
    assert "no judge" in r.reason and r.judge_calls == 0
    assert (d["total_interactions"], d["correct_interactions"], d["is_fully_correct"]) == (2, 2, True)
    assert d["correct_indices"] == [0, 1] and d["correctness_scores"] == [1.0, 1.0]
    tool = d["tool_correctness_scores"]
    assert tool[1] is None and tool[0]["overall_correctness"] == 1.0 and tool[0]["is_correct"] is True
    assert (d["k"], d["pass_at_k"], d["pass_pow_k"], d["pass_at_k_ci_low"]) == (3, 1.0, 1.0, None)


def test_with_a_judge_one_call_per_interaction():
    j = ScriptedJudge(correctness({"The result is 8.": 0.9, "100 divided by 4": 0.6}))
    r = run("agentic_correctness", CALC, j)
    assert len(j.requests) == 2 and r.judge_calls == 2
    d = r.details
    assert d["correctness_method"] == "judge" and d["correctness_scores"] == [0.9, 0.6]
    assert d["correct_indices"] == [0] and d["is_fully_correct"] is False
    assert r.score == 0.5 and r.passed is False  # passed iff fully correct
    assert all("EXPECTED_ANSWER" in q.messages[1]["content"] for q in j.requests)
    assert len({q.messages[0]["content"] for q in j.requests}) == 1  # one static rubric: a reusable prefix
    assert len({q.messages[1]["content"].split("\n", 1)[0] for q in j.requests}) == 2  # one fence nonce each


def test_correct_iff_correctness_reaches_the_threshold():
    j = ScriptedJudge(correctness({"The result is 8.": 0.7, "100 divided by 4": 0.69}))
    d = run("agentic_correctness", CALC, j).details
    assert d["correct_indices"] == [0]
    j = ScriptedJudge(correctness({"The result is 8.": 0.7, "100 divided by 4": 0.69}))
    d = run("agentic_correctness", CALC, j, answer_threshold=0.6).details
    assert d["correct_indices"] == [0, 1]


def test_frequentist_pass_at_k_for_7_of_10():
    r = run("agentic_correctness", ten(7), None, k=3)
    d = r.details
    assert (d["total_interactions"], d["correct_interactions"]) == (10, 7) and r.score == 0.7
    assert d["pass_at_k"] == pytest.approx(0.973) and d["pass_pow_k"] == pytest.approx(0.343)
    assert d["statistical_mode"] == "frequentist" and d["pass_pow_k_ci_high"] is None


def test_bayesian_mode_gives_intervals():
    d = run("agentic_correctness", ten(10), None, k=3, statistical_mode="bayesian").details
    assert d["pass_pow_k"] == pytest.approx(11 / 14, abs=1e-3)  # Beta(11, 1): E[p^3] = 11/14 = 0.786
    assert d["pass_pow_k_ci_low"] < d["pass_pow_k"] < d["pass_pow_k_ci_high"]


def test_a_statistical_mode_instance_is_accepted():
    r = evaluate([ten(7)], [REGISTRY.get("agentic_correctness")(statistical_mode=BayesianMode(ci_level=0.9))])
    assert r.traces[0].metrics["agentic_correctness"].details["statistical_mode"] == "bayesian_exact"


def test_require_tools_makes_a_wrong_tool_call_an_incorrect_interaction():
    wrong = {**CALC, "turns": [{**CALC["turns"][0], "tool_calls": [
        {"name": "calculator", "arguments": {"a": 5, "b": 4}, "result": 9, "step": 1}]}, CALC["turns"][1]]}
    assert run("agentic_correctness", wrong, None).details["correct_interactions"] == 2
    d = run("agentic_correctness", wrong, None, require_tools=True).details
    assert d["correct_interactions"] == 1 and d["tool_correctness_scores"][0]["is_correct"] is False


def test_tool_weights_and_threshold_reach_tool_correctness():
    d = run("agentic_correctness", CALC, None, tool_threshold=0.75,
            tool_weights={"selection": 1.0, "parameters": 0, "sequence": 0, "utilization": 0}).details
    assert d["tool_correctness_scores"][0]["overall_correctness"] == 1.0


def test_trace_level_expected_output_is_one_interaction():
    trace = {"id": "final", "turns": [{"input": "hi", "output": "hello"}, {"input": "2+2?", "output": "It's 4."}],
             "expected": {"output": "4"}}
    d = run("agentic_correctness", trace, None).details
    assert d["total_interactions"] == 1 and d["interaction_turns"] == [2] and d["is_fully_correct"]


def test_missing_answer_is_an_incorrect_interaction_and_all_missing_is_null():
    trace = {"id": "m", "turns": [{"input": "a", "output": "8", "expected": {"output": "8"}},
                                  {"input": "b", "expected": {"output": "9"}}]}
    r = run("agentic_correctness", trace, None)
    assert r.score == 0.5 and r.details["turns_without_answer"] == [2]
    r = run("agentic_correctness", {"id": "n", "turns": [{"input": "b", "expected": {"output": "9"}}]}, None)
    assert r.score is None and r.warning is Warning.MISSING_DATA


def test_no_ground_truth_is_missing_data():
    r = run("agentic_correctness", {"id": "g", "turns": [{"input": "a", "output": "b"}]}, None)
    assert r.score is None and r.warning is Warning.MISSING_DATA


def test_a_judge_error_in_one_interaction_is_an_errored_result():
    def answer(request):
        if "100 divided by 4" in request.messages[1]["content"]:
            return errored("m", "HTTP 500 after 6 attempts", raw="bad gateway")
        return {"evidence": [], "reasoning": "ok", "correctness": 1.0}

    j = ScriptedJudge(answer)
    r = run("agentic_correctness", CALC, j)
    assert r.score is None and r.warning is Warning.JUDGE_ERROR and r.details["raw"] == "bad gateway"
    assert r.judge_calls == 2 and r.details["interactions_failed"] == 1


def test_a_skipped_judge_call_is_not_evaluated():
    r = run("agentic_correctness", CALC, ScriptedJudge(errored("m", "dry run: not sent", skipped=True)))
    assert r.score is None and r.warning is Warning.NOT_EVALUATED


@pytest.mark.parametrize("params, problem", [
    ({"k": 0}, "k must be"), ({"answer_threshold": 1.5}, "answer_threshold"),
    ({"statistical_mode": "bootstrap"}, "statistical mode"), ({"tool_weights": {"speed": 1.0}}, "speed")])
def test_bad_parameters_are_configuration_errors(params, problem):
    with pytest.raises(ConfigError, match=problem):
        REGISTRY.create("agentic_correctness", **params)
