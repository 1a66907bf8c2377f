from __future__ import annotations

import pytest

from assay.errors import DataError
from assay.importers.eval_lib import test_case_to_trace as to_trace

from ._helpers import DATA, issues_of, plain, traces_of


def test_single_turn_case() -> None:
    t = traces_of(DATA / "eval_lib_cases.jsonl")["refund-policy"]
    assert plain(t) == {"id": "refund-policy", "turns": [{
        "input": "What if these shoes don't fit?", "output": "We offer a 30-day full refund at no extra cost.",
        # bare names: arguments unknown (empty), expected calls accept any arguments
        "tool_calls": [{"name": "WebSearch"}, {"name": "ToolQuery"}],
        "context": ["All customers are eligible for a 30 day full refund at no extra cost."],
        "reasoning": "Policy lookup first, then answer.",
        "expected": {"output": "You're eligible for a 30 day refund at no extra cost.", "tool_calls": [{"name": "WebSearch"}]},
    }]}


def test_conversational_case_has_a_turn_per_case_and_the_chatbot_role() -> None:
    t = traces_of(DATA / "eval_lib_cases.jsonl")["import-error"]
    assert plain(t) == {"id": "import-error", "turns": [
        {"input": "My script fails with ModuleNotFoundError: requests", "output": "Run `pip install requests` and try again."},
        {"input": "It worked, thanks!", "output": "Glad to help."}],
        "expected": {"role": "A patient Python support engineer"}}


def test_execution_trace_gives_tool_arguments_and_resource_usage() -> None:
    t = traces_of(DATA / "eval_lib_cases.jsonl")["eval_lib_cases-4"]
    turn = plain(t)["turns"][0]
    assert turn["tool_calls"] == [{"name": "track", "arguments": {"id": 1182}, "result": {"status": "delivered"},
                                   "timestamp": "2026-01-01T10:00:00.500000Z", "duration_ms": 210, "id": "s2"}]
    assert turn["usage"] == {"input_tokens": 90, "output_tokens": 12, "cost_usd": 0.0002}
    assert turn["latency_ms"] == 1300
    assert t.metadata["model"] == "gpt-4o-mini" and t.metadata["agent_confidence"] == 0.8
    assert t.metadata["execution_trace"][0]["type"] == "llm_call"  # kept whole


def test_the_seed_conversation() -> None:
    (t,) = traces_of(DATA / "eval_lib_conversation.json").values()
    assert t.id == "eval_lib_conversation-1" and [x.input for x in t.turns][0].startswith("What's the population")


def test_malformed_case_is_a_located_issue() -> None:
    (issue,) = issues_of(DATA / "eval_lib_cases.jsonl")
    assert (issue.line, issue.field, issue.message) == (3, "actual_output", "required field is missing")


@pytest.mark.parametrize(("case", "field", "message"), [
    ({"input": "x", "actual_output": "y", "tools_called": "search"}, "tools_called", "expected an array, got string"),
    ({"input": "x", "actual_output": "y", "tools_called": [{"name": "s"}]}, "tools_called[0]", "expected a string, got object"),
    ({"turns": [{"input": "x", "actual_output": 3}]}, "turns[0].actual_output", "expected a string, got integer"),
    ({"input": "x", "actual_output": "y", "resource_usage": {"input_tokens": "many"}}, "resource_usage.input_tokens",
     "expected an integer, got string"),
])
def test_helper_raises_located_data_errors(case: dict, field: str, message: str) -> None:
    with pytest.raises(DataError) as info:
        to_trace(case, default_id="c")
    assert (info.value.field, info.value.detail) == (field, message)


def test_helper_needs_an_id() -> None:
    assert to_trace({"input": "x", "actual_output": "y", "name": "n"}).id == "n"
    with pytest.raises(DataError, match="name: required field is missing"):
        to_trace({"input": "x", "actual_output": "y"})
