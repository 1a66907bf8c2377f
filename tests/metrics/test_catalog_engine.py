"""The deterministic catalog through the registry and the engine: declarations, defaults, params."""

from __future__ import annotations

import dataclasses
import math

import pytest

import assay
from assay import ConfigError
from assay.metrics import Requirement
from assay.metrics._base import REGISTRY

DETERMINISTIC = {
    "tool_selection_accuracy": "tool_calling", "tool_sequence_correctness": "tool_calling",
    "parameter_quality": "tool_calling", "mcp_compliance": "tool_calling", "tool_correctness": "tool_calling",
    "latency_score": "performance", "token_efficiency": "performance", "cost_efficiency": "performance",
    "throughput": "performance", "turn_efficiency": "multi_turn", "agent_utilization": "multi_agent",
    "coordination_efficiency": "multi_agent", "prompt_injection_detection": "responsible_ai",
    "exact_match": "response_quality", "numeric_match": "response_quality", "token_f1": "response_quality",
    "contains": "response_quality", "regex_match": "response_quality", "json_schema_valid": "response_quality",
    "stickler_overall_score": "structured_output", "stickler_field_precision": "structured_output",
    "stickler_field_recall": "structured_output", "stickler_field_f1": "structured_output",
    "stickler_false_alarm_rate": "structured_output", "stickler_false_discovery_rate": "structured_output",
}
OPT_IN = {"tool_correctness", "exact_match", "numeric_match", "token_f1", "contains", "regex_match",
          "json_schema_valid"} | {n for n in DETERMINISTIC if n.startswith("stickler_")}


@pytest.mark.parametrize("name", sorted(DETERMINISTIC))
def test_declaration(name):
    cls = REGISTRY.get(name)
    spec = cls.spec
    assert spec.dimension == DETERMINISTIC[name]
    assert Requirement.JUDGE not in spec.requires
    assert spec.summary and cls.__doc__
    assert spec.default is (name not in OPT_IN)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    assert 0.0 <= fields["threshold"].default <= 1.0


def test_default_set_without_judge_is_the_deterministic_core():
    names = {m.spec.name for m in assay.Evaluation().metrics}
    assert names >= set(DETERMINISTIC) - OPT_IN
    assert not names & OPT_IN


FULL = {
    "id": "full", "task_id": "task", "latency_ms": 2500, "throughput_rps": 5,
    "usage": {"total_tokens": 2000, "cost_usd": 0.02}, "metadata": {"quality_score": 0.8},
    "turns": [
        {"input": "Find the refund policy", "output": "Refunds take 5-7 days.",
         "tool_calls": [{"name": "search", "arguments": {"q": "refund"}, "timestamp": "2025-01-01T00:00:00Z"},
                        {"name": "mcp__docs__read", "arguments": {"id": 3}, "timestamp": "2025-01-01T00:00:01Z"}],
         "expected": {"tool_calls": [{"name": "search", "arguments": {"q": "refund"}},
                                     {"name": "mcp__docs__read", "arguments": {"id": 3}}]},
         "context": ["Refunds are issued within 5-7 business days."], "uses_tool_results": True},
        {"input": "thanks", "output": "You're welcome."},
    ],
    "agents": {"a": {"turns": [{"input": "x", "output": "y"}]}, "b": {"turns": [{"input": "x", "output": "y"}]}},
    "handoffs": [{"from": "a", "to": "b"}],
}


def test_evaluate_default_set_on_a_full_trace():
    r = assay.evaluate([FULL])
    m = r.traces[0].metrics
    assert m["tool_selection_accuracy"].score == 1.0 and m["parameter_quality"].score == 1.0
    assert m["latency_score"].score == pytest.approx(0.8)
    assert m["token_efficiency"].score == pytest.approx(0.8 / 2 ** 0.5)
    assert m["throughput"].score == 0.5 and m["turn_efficiency"].score == 1.0
    assert m["agent_utilization"].score == 1.0 and m["coordination_efficiency"].score == pytest.approx(math.exp(-0.75))
    assert m["prompt_injection_detection"].score == 1.0 and m["mcp_compliance"].score == 1.0
    assert set(r.traces[0].dimensions) == {"tool_calling", "performance", "multi_turn", "multi_agent",
                                           "responsible_ai"}


def test_evaluate_with_params_as_strings():
    r = assay.evaluate([FULL], ["latency_score:threshold_ms=5000", "token_efficiency:penalty=heavy,expected_tokens=500",
                                "mcp_compliance:all_mcp=true", "tool_correctness:tool_threshold=0.9"])
    m = r.traces[0].metrics
    assert m["latency_score"].score == 1.0
    assert m["token_efficiency"].score == pytest.approx(0.8 / 4)
    assert m["mcp_compliance"].score == 1.0 and m["tool_correctness"].score == 1.0
    params = {d["name"]: d["params"] for d in r.run["metrics"]}
    assert params["token_efficiency"]["penalty"] == "heavy"


def test_evaluate_with_a_single_string_value():
    r = assay.evaluate([FULL], ["contains:values=welcome"])
    assert r.traces[0].metrics["contains"].score == 1.0


def test_evaluate_with_mapping_params():
    # both look at the final answer ("You're welcome."), not at earlier turns
    r = assay.evaluate([FULL], [{"name": "contains", "values": ["WELCOME", "refund"]},
                                {"name": "regex_match", "pattern": r"welcome\.$", "threshold": 0.5}])
    m = r.traces[0].metrics
    assert m["contains"].score == 0.5 and m["regex_match"].passed is True


def test_default_set_skips_metrics_whose_data_is_missing():
    r = assay.evaluate([{"id": "bare", "turns": [{"input": "What's the weather?", "output": "Sunny."}]}])
    assert set(r.traces[0].metrics) == {"prompt_injection_detection"}


def test_efficiency_and_turn_metrics_run_after_the_metrics_they_read():
    spec = REGISTRY.get("token_efficiency").spec
    assert {"answer_relevance", "completeness", "accuracy", "hallucination_score"} <= set(spec.after)
    assert "conversation_completeness" in REGISTRY.get("turn_efficiency").spec.after


@pytest.mark.parametrize("arg, match", [
    ("latency_score:threshold_ms=-1", "threshold_ms"), ("token_efficiency:penalty=medium", "penalty"),
    ("numeric_match:mode=first", "mode"), ("tool_correctness:tool_threshold=2", "tool_threshold"),
    ("stickler_overall_score:string_match=fuzzy", "string_match"), ("coordination_efficiency:decay=0", "decay"),
    ("latency_score:threshold_msx=1", "Did you mean"),
])
def test_bad_params_are_config_errors(arg, match):
    with pytest.raises(ConfigError, match=match):
        assay.evaluate([FULL], [arg])


def test_shared_per_trace_memo_never_leaks_between_passes():
    # Tool metrics share derived data within one scoring pass; a second pass over the same
    # (mutated) Trace object must see the mutation.
    from assay.model import Trace

    t = Trace.model_validate({"id": "m", "turns": [{"input": "q", "tool_calls": [{"name": "a"}]}],
                              "expected": {"tool_calls": [{"name": "a"}]}})
    first = assay.evaluate([t], ["tool_selection_accuracy", "parameter_quality"])
    t.turns[0].tool_calls[0].name = "b"
    second = assay.evaluate([t], ["tool_selection_accuracy", "parameter_quality"])
    assert first.traces[0].metrics["tool_selection_accuracy"].score == 1.0
    assert second.traces[0].metrics["tool_selection_accuracy"].score == 0.0
    assert second.traces[0].metrics["parameter_quality"].score == 0.0
