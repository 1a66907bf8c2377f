from __future__ import annotations

import pytest

from assay.errors import DataError
from assay.importers.deepeval import test_case_to_trace as to_trace

from ._helpers import DATA, plain, read_all, traces_of


def test_llm_test_case() -> None:
    t = traces_of(DATA / "deepeval_cases.json")["shoe-refund"]
    assert plain(t) == {"id": "shoe-refund", "turns": [{
        "input": "What if these shoes don't fit?", "output": "We offer a 30-day full refund at no extra cost.",
        "tool_calls": [{"name": "WebSearch", "arguments": {"q": "refund policy"}, "result": ["policy page"]},
                       {"name": "ToolQuery", "arguments": {"sku": "SH-1"}}],
        "context": ["Only shoes can be refunded.", "Refunds take 5 business days."],
        "latency_ms": 1800.0, "usage": {"cost_usd": 0.0021},
        "expected": {"output": "You're eligible for a 30 day refund at no extra cost.", "tool_calls": [{"name": "WebSearch"}]},
    }], "metadata": {"team": "support", "context": ["All customers are eligible for a 30 day full refund at no extra cost."],
                     "tags": ["refunds"]}}


def test_camel_case_spelling() -> None:
    t = plain(traces_of(DATA / "deepeval_cases.json")["camel-case"])
    assert t["turns"][0] == {"input": "Reset my password", "output": "I've sent a reset link to your email.",
                             "tool_calls": [{"name": "send_reset", "arguments": {"user": "u1"}, "result": "sent"}],
                             "context": ["Password resets are done via email link."],
                             "expected": {"output": "A reset link is sent.",
                                          "tool_calls": [{"name": "send_reset", "arguments": {"user": "u1"}}]}}


def test_conversational_test_case() -> None:
    t = plain(traces_of(DATA / "deepeval_cases.json")["refund-chat"])
    assert t == {"id": "refund-chat", "turns": [
        {"input": "My order is two weeks late.",
         "output": "Sorry about that. Let me check.\nIt is late; I've issued a refund.",
         "tool_calls": [{"name": "lookup_order", "arguments": {"id": "A7"}, "result": {"late": True}}],
         "context": ["Refund policy: late > 10 days."]},
        {"input": "Thanks!", "output": "You're welcome."}],
        "expected": {"role": "A polite support agent", "goal": "The customer gets a refund confirmation."},
        "metadata": {"scenario": "A customer wants a refund for a late order.", "user_description": "Returning customer",
                     "context": ["Late orders are refundable."]}}


def test_malformed_cases_are_located_issues_and_the_rest_is_read() -> None:
    out = read_all(DATA / "deepeval_malformed.jsonl")
    assert [x.id if hasattr(x, "id") else (x.line, x.field, x.message) for _, x in out] == [
        "deepeval_malformed-1",
        (2, "turns[1].role", "expected 'user' or 'assistant', got 'bot'"),
        (3, "tools_called", "expected an array, got object"),
        "deepeval_malformed-4",
    ]


def test_helper() -> None:
    assert to_trace({"input": "a", "actual_output": "b"}, default_id="x").turns[0].output == "b"
    with pytest.raises(DataError) as info:
        to_trace({"input": "a", "retrieval_context": [3]}, default_id="x")
    assert info.value.field == "retrieval_context[0]"
    golden = to_trace({"input": "a", "expected_output": "b", "name": "g"})
    assert golden.turns[0].output is None and golden.turns[0].expected.output == "b"
