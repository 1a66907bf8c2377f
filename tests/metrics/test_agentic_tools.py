"""Fair Forge tool correctness (seed 001): the pure function and the per-turn metric."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay import ConfigError
from assay.metrics.agentic_tools import tool_correctness_score
from assay.model import Warning


def ff(name, params=None, step=1):
    return {"tool_name": name, "parameters": params or {}, "step": step}


def test_seed_example_is_fully_correct():
    used = [{"tool_name": "calculator", "parameters": {"a": 5, "b": 3}, "result": 8, "step": 1}]
    expected = [{"tool_name": "calculator", "parameters": {"a": 5, "b": 3}, "step": 1}]
    s = tool_correctness_score(used, expected, sequence_matters=False, uses_results=True)
    assert s["overall_correctness"] == 1.0 and s["is_correct"] is True
    assert set(s) == {"tool_selection_correct", "parameter_accuracy", "sequence_correct", "result_utilization",
                      "overall_correctness", "is_correct", "reasoning"}


@pytest.mark.parametrize("used, expected, want", [
    (["a", "b"], ["a", "b"], 1.0), (["a"], ["a", "b"], 0.5), (["a", "b", "c", "d"], ["a", "b"], 0.5),
    (["a", "c"], ["a", "b"], 1 / 3), ([], ["a"], 0.0),
], ids=["equal", "subset", "superset", "jaccard", "none-used"])
def test_selection(used, expected, want):
    s = tool_correctness_score([ff(n) for n in used], [ff(n) for n in expected], False, True)
    assert s["tool_selection_correct"] == pytest.approx(want)


@pytest.mark.parametrize("used, expected, want", [
    ({"a": 1, "b": 2}, {"a": 1, "b": 2}, 1.0), ({"a": 1, "b": 3}, {"a": 1, "b": 2}, 0.5),
    ({"a": 1, "c": 2}, {"a": 1, "b": 2}, 1 / 3), ({"a": True}, {"a": 1}, 0.0),
], ids=["equal", "one-of-two", "union-of-three", "bool-is-not-int"])
def test_parameters(used, expected, want):
    s = tool_correctness_score([ff("t", used)], [ff("t", expected)], False, True)
    assert s["parameter_accuracy"] == pytest.approx(want)


def test_ith_expected_call_compared_with_ith_used_call():
    # Fair Forge compares every expected call with the first used call of that name.
    used = [ff("s", {"q": "a"}, 1), ff("s", {"q": "b"}, 2)]
    expected = [ff("s", {"q": "a"}, 1), ff("s", {"q": "b"}, 2)]
    s = tool_correctness_score(used, expected, True, True)
    assert s["parameter_accuracy"] == 1.0 and s["sequence_correct"] == 1.0


def test_sequence_by_step():
    used = [ff("a", step=2), ff("b", step=1)]
    expected = [ff("a", step=1), ff("b", step=2)]
    assert tool_correctness_score(used, expected, True, True)["sequence_correct"] == 0.0
    assert tool_correctness_score(used, expected, False, True)["sequence_correct"] == 1.0


def test_missing_steps_default_to_position():
    used = [{"tool_name": "a"}, {"tool_name": "b"}]
    assert tool_correctness_score(used, [ff("a", step=1), ff("b", step=2)], True, True)["sequence_correct"] == 1.0


def test_weights_and_threshold():
    s = tool_correctness_score([ff("a")], [ff("a"), ff("b")], False, True,
                               weights={"selection": 0.5, "utilization": 0.5}, threshold=0.75)
    assert s["overall_correctness"] == pytest.approx(0.75) and s["is_correct"]
    with pytest.raises(ConfigError, match="unknown aspect"):
        tool_correctness_score([], [], weights={"speed": 1.0})


def test_unknown_utilization_is_left_out():
    s = tool_correctness_score([ff("a")], [ff("a")], True, None)
    assert s["result_utilization"] is None and s["overall_correctness"] == 1.0


def turn(used, expected, uses=True, order=None):
    t = {"input": "q", "output": "a", "tool_calls": [{"name": n, "arguments": a} for n, a in used],
         "expected": {"tool_calls": [{"name": n, "arguments": a} for n, a in expected]}, "uses_tool_results": uses}
    if order:
        t["expected"]["tool_order"] = order
    return t


def test_metric_averages_turns_and_keeps_breakdown(build, run):
    t = build([turn([("calc", {"a": 5})], [("calc", {"a": 5})]),
               turn([("calc", {"a": 6})], [("calc", {"a": 5})], uses=False),
               {"input": "thanks", "output": "bye"}])
    r = run("tool_correctness", t)
    assert r.details["interactions"] == 2 and r.details["correct_interactions"] == 1
    assert r.score == pytest.approx((1.0 + 0.5) / 2)
    assert [p["interaction"] for p in r.details["per_turn"]] == ["turn 1", "turn 2"]


def test_metric_interaction_with_expected_tools_but_none_used_scores_zero(build, run):
    # Fair Forge skips such an interaction (None): a missing call went unpunished.
    r = run("tool_correctness", build([turn([], [("calc", {"a": 5})], uses=False)]))
    assert r.score == 0.0 and r.details["per_turn"][0]["is_correct"] is False


def test_metric_trace_level_expectations_and_missing(build, run, mk):
    t = build([{"input": "q", "tool_calls": [mk.call("a")], "uses_tool_results": True}],
              expected={"tool_calls": [mk.expected("a")], "tool_order": "any"})
    assert run("tool_correctness", t).score == 1.0
    assert run("tool_correctness", build()).warning == Warning.MISSING_DATA


def test_metric_tool_threshold_param(build, run):
    t = build([turn([("calc", {"a": 6})], [("calc", {"a": 5})])])
    r = run("tool_correctness", t, tool_threshold=0.7)
    assert r.details["correct_interactions"] == 1


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=4), st.lists(st.sampled_from("abcd"), max_size=4),
       st.booleans(), st.sampled_from([True, False, None]))
def test_bounded_and_identity(used, expected, seq, uses):
    s = tool_correctness_score([ff(n, step=i) for i, n in enumerate(used)],
                               [ff(n, step=i) for i, n in enumerate(expected)], seq, uses)
    assert 0.0 <= s["overall_correctness"] <= 1.0
    same = tool_correctness_score([ff(n, step=i) for i, n in enumerate(used)],
                                  [ff(n, step=i) for i, n in enumerate(used)], seq, True)
    assert same["overall_correctness"] == pytest.approx(1.0)
