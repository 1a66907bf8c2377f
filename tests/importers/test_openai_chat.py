"""OpenAI chat shapes: {messages} records without ids, extra fields, message lists, {request, response} logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.importers import detect_format, read_traces
from assay.model import InputIssue

from ._helpers import DATA, issues_of, plain, read_all, traces_of


def run_cli(path: Path, *args: str) -> dict:
    """``assay run`` with format detection, as a user types it; the JSON results."""
    r = CliRunner().invoke(main, ["run", str(path), "--no-store", "-f", "json", *args], catch_exceptions=False)
    assert r.exit_code in (0, 1, 2), r.output  # 2: some input records were skipped
    return json.loads(r.stdout)


@pytest.mark.parametrize("name", ["openai_finetune.jsonl", "openai_request_response.jsonl",
                                  "openai_message_lists.jsonl", "openai_conversation.json", "openai_malformed.jsonl"])
def test_every_sample_is_detected_without_a_flag(name: str) -> None:
    assert detect_format((DATA / name).read_bytes()[:65536], name) == "openai"


def test_messages_without_an_id_get_stem_and_number_and_extras_go_to_metadata() -> None:
    t = traces_of(DATA / "openai_finetune.jsonl")
    assert list(t) == ["openai_finetune-1", "openai_finetune-2", "conv-3"]
    first = plain(t["openai_finetune-1"])
    assert first["system"] == "You are a concise weather assistant."
    assert first["turns"] == [{"input": "What's the weather in Paris?", "output": "18°C and cloudy in Paris.",
                               "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"},
                                               "result": {"temp_c": 18, "sky": "cloudy"}, "id": "call_1"}]}]
    assert first["metadata"]["tools"][0]["function"]["name"] == "get_weather"
    assert first["metadata"]["parallel_tool_calls"] is False
    second = plain(t["openai_finetune-2"])
    assert second["usage"] == {"input_tokens": 14, "output_tokens": 2, "total_tokens": 16}
    assert second["metadata"] == {"model": "gpt-4o-mini", "split": "eval"}
    third = plain(t["conv-3"])
    assert third["system"] == "Answer in one word."
    assert [(x["input"], x["output"]) for x in third["turns"]] == [("Capital of Italy?", "Rome"), ("And of Spain?", "Madrid")]


def test_request_response_logs_join_request_messages_and_the_response_message() -> None:
    t = traces_of(DATA / "openai_request_response.jsonl")
    assert list(t) == ["openai_request_response-1", "openai_request_response-2", "batch_req_3"]
    first = plain(t["openai_request_response-1"])
    assert first["system"] == "You are terse."
    assert first["turns"] == [{"input": "Weather in Oslo?", "tool_calls": [
        {"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "call_9"}]}]
    assert first["usage"] == {"input_tokens": 61, "output_tokens": 17, "total_tokens": 78}
    assert first["latency_ms"] == 640
    assert first["metadata"]["model"] == "gpt-4o-mini-2024-07-18"
    assert first["metadata"]["finish_reason"] == "tool_calls"
    assert first["metadata"]["request"]["temperature"] == 0
    batch = plain(t["batch_req_3"])  # Batch API: request and response bodies under "body"
    assert batch["turns"] == [{"input": "Colour of the sky?", "output": "Blue."}]
    assert batch["usage"]["total_tokens"] == 14


def test_a_line_of_messages_and_a_file_of_messages_are_one_conversation_each() -> None:
    lines = traces_of(DATA / "openai_message_lists.jsonl")
    assert [(k, [(x.input, x.output) for x in v.turns]) for k, v in lines.items()] == [
        ("openai_message_lists-1", [("hi", "Hello! How can I help?")]),
        ("openai_message_lists-2", [("2+2?", "4")])]
    assert lines["openai_message_lists-2"].system == "You are a calculator."
    conv = traces_of(DATA / "openai_conversation.json")
    assert list(conv) == ["openai_conversation-1"]
    turns = conv["openai_conversation-1"].turns
    assert [(x.input, x.output) for x in turns] == [("Find me a flight to Lisbon.", "TP123 at 180 EUR."),
                                                    ("Book it.", "Booked.")]
    assert turns[0].tool_calls[0].result == [{"flight": "TP123", "price": 180}]


def test_a_line_holding_a_list_of_records_yields_several_traces(in_tmp: Path) -> None:
    rec = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}], "model": "m"}
    bad = {"messages": [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "x", "content": "r"}]}
    (in_tmp / "batch.jsonl").write_text(json.dumps([rec, {**rec, "id": "named"}, bad]) + "\n" + json.dumps(rec) + "\n")
    out = read_all("batch.jsonl")
    assert [(loc, getattr(item, "id", None)) for loc, item in out] == [
        ("batch.jsonl:1", "batch-1.1"), ("batch.jsonl:1", "named"), ("batch.jsonl:1", None), ("batch.jsonl:2", "batch-2")]
    assert str(out[2][1]) == "batch.jsonl:1: [2].messages[1].tool_call_id: no earlier tool call has id 'x'"


def test_native_records_with_only_trace_fields_stay_native(in_tmp: Path) -> None:
    rec = {"id": "t", "messages": [{"role": "user", "content": "q"}]}
    assert detect_format(json.dumps(rec).encode(), "x.jsonl") == "assay"
    assert detect_format(json.dumps({**rec, "model": "gpt-4o"}).encode(), "x.jsonl") == "openai"
    assert detect_format(json.dumps({"messages": rec["messages"]}).encode(), "x.jsonl") == "openai"


def test_malformed_records_are_issues_with_line_and_field() -> None:
    issues = [str(i).split("openai_malformed.jsonl:", 1)[1] for i in issues_of(DATA / "openai_malformed.jsonl")]
    assert issues == [
        "2: not valid JSON: Expecting ',' delimiter at column 52",
        "3: messages[1].tool_calls[0].function.arguments: not valid JSON (Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1))",
        "4: messages[1].tool_call_id: no earlier tool call has id 'nope'",
        "5: messages[0].role: expected one of 'system', 'developer', 'user', 'assistant', 'tool', 'function', "
        "got 'narrator'",
        "6: trace 'openai_malformed-5' has no turns: no user message, answer or tool call was found in it, so there is "
        "nothing to score",
        "7: usage.prompt_tokens: expected an integer, got string",
    ]
    assert list(traces_of(DATA / "openai_malformed.jsonl")) == ["openai_malformed-1"]


def test_strict_stops_at_an_empty_trace(in_tmp: Path) -> None:
    (in_tmp / "e.jsonl").write_text(json.dumps({"messages": []}) + "\n")
    with pytest.raises(Exception, match="e.jsonl:1: trace 'e-1' has no turns"):
        list(read_traces("e.jsonl", strict=True))


@pytest.mark.parametrize(("name", "n_traces", "n_issues"), [
    ("openai_finetune.jsonl", 3, 0), ("openai_request_response.jsonl", 3, 0), ("openai_message_lists.jsonl", 2, 0),
    ("openai_conversation.json", 1, 0), ("openai_malformed.jsonl", 1, 6)])
def test_assay_run_scores_each_sample_without_a_flag(name: str, n_traces: int, n_issues: int) -> None:
    out = run_cli(DATA / name)
    assert len(out["traces"]) == n_traces and len(out["input_issues"]) == n_issues
    scored = {m for t in out["traces"] for m, r in t["metrics"].items() if r["score"] is not None}
    assert "prompt_injection_detection" in scored


def test_the_empty_import_warning_reaches_the_cli(in_tmp: Path) -> None:
    (in_tmp / "e.jsonl").write_text(json.dumps({"id": "x", "turns": []}) + "\n" + json.dumps(
        {"id": "y", "turns": [{"input": "q", "output": "a"}]}) + "\n")
    r = CliRunner().invoke(main, ["run", "e.jsonl", "--no-store"], catch_exceptions=False)
    assert "e.jsonl:1: trace 'x' has no turns" in r.output
    assert isinstance(next(i for _, i in read_traces("e.jsonl")), InputIssue)


def test_forcing_the_native_format_on_id_less_chat_records_says_where_they_are_read(in_tmp: Path) -> None:
    (in_tmp / "c.jsonl").write_text(json.dumps({"messages": [{"role": "user", "content": "q"}]}) + "\n")
    (issue,) = issues_of("c.jsonl", input_format="assay")
    assert str(issue) == ("c.jsonl:1: id: required field is missing (chat records without ids are read by "
                          "--input-format openai, or without --input-format)")
