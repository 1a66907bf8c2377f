"""Anthropic Messages logs: system prompt, content blocks, tool_use / tool_result matched by id, usage."""

from __future__ import annotations

import json
from pathlib import Path

from assay.importers import detect_format

from ._helpers import DATA, issues_of, plain, traces_of
from .test_openai_chat import run_cli


def test_request_response_log_with_tool_use_thinking_and_cache_usage() -> None:
    t = plain(traces_of(DATA / "anthropic_messages.jsonl")["anthropic_messages-1"])
    assert t["system"] == "You are a financial assistant."
    assert t["turns"] == [{"input": "What is ACME trading at?", "output": "Let me look that up.\nACME is at 41.50 USD.",
                           "reasoning": "The tool returned 41.5 USD.",
                           "tool_calls": [{"name": "get_stock_price", "arguments": {"ticker": "ACME"},
                                           "result": {"price": 41.5, "currency": "USD"}, "id": "toolu_01"}]}]
    assert t["usage"] == {"input_tokens": 512, "output_tokens": 38}  # 412 + 100 read from the cache
    assert t["metadata"]["model"] == "claude-sonnet-4-5-20250929" and t["metadata"]["stop_reason"] == "end_turn"
    assert t["metadata"]["request"]["max_tokens"] == 1024


def test_messages_record_with_system_blocks_and_an_error_result() -> None:
    t = plain(traces_of(DATA / "anthropic_messages.jsonl")["support-7"])
    assert t["system"] == "You help with orders."
    assert t["turns"] == [{"input": "Cancel order 99.", "output": "Order 99 has already shipped, so it cannot be cancelled.",
                           "tool_calls": [{"name": "cancel_order", "arguments": {"order_id": 99},
                                           "error": "order 99 already shipped", "id": "toolu_02"}]}]
    assert t["metadata"] == {"model": "claude-haiku-4-5"}


def test_malformed_records_name_the_block() -> None:
    issues = [str(i).split("anthropic_malformed.jsonl:", 1)[1] for i in issues_of(DATA / "anthropic_malformed.jsonl")]
    assert issues == [
        "1: messages[1].content[0].input: expected an object, got string",
        "2: messages[0].content[0].tool_use_id: no earlier tool call has id 'missing'",
        "3: messages[1].content[0].name: required field is missing",
        "5: request.messages[0].content: expected a string or a list of content blocks, got integer",
    ]
    assert list(traces_of(DATA / "anthropic_malformed.jsonl")) == ["anthropic_malformed-4"]


def test_an_id_and_messages_record_with_tool_use_blocks_is_not_native(in_tmp: Path) -> None:
    rec = {"id": "x", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "f", "input": {}}]}]}
    assert detect_format(json.dumps(rec).encode(), "x.jsonl") == "anthropic"
    plain_chat = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    assert detect_format(json.dumps(plain_chat).encode(), "x.jsonl") == "openai"


def test_assay_run_scores_the_samples_without_a_flag() -> None:
    out = run_cli(DATA / "anthropic_messages.jsonl")
    assert [t["id"] for t in out["traces"]] == ["anthropic_messages-1", "support-7"]
    assert out["traces"][0]["metrics"]["prompt_injection_detection"]["score"] == 1.0
    bad = run_cli(DATA / "anthropic_malformed.jsonl")
    assert len(bad["traces"]) == 1 and len(bad["input_issues"]) == 4
