"""Provider-neutral payload reading, the unparsed-payload check, validate -v, skipped objects, hints.

The inputs here are written by these tests (synthetic, small, one shape each); the genuine files
that show each shape as real tools write it are in tests/data/real (test_real_corpus_genuine.py).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay import evaluate
from assay.cli import main
from assay.errors import ConfigError, InputWarning
from assay.importers import read_traces
from assay.importers._payload import normalise
from assay.model import InputIssue, ReadingWarning, Trace
from assay.model._status import run_status

REAL = Path(__file__).resolve().parents[1] / "data" / "real"


def _items(path: Path) -> list[Trace | InputIssue]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [item for _, item in read_traces(str(path))]


# ---------------------------------------------------------------- normalise: one place, every shape

def test_vercel_ai_sdk_prompt_with_tool_call_and_result_parts() -> None:
    prompt = {"system": "Be brief.", "prompt": [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "weather",
                                           "input": {"city": "Paris"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "weather",
                                      "output": {"type": "text", "value": "sunny"}}]}]}
    assert normalise(json.dumps(prompt)) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "function": {"name": "weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]


def test_llamaindex_args_wrapper_and_double_encoded_json() -> None:
    wrapped = json.dumps(json.dumps({"args": [[{"role": "user", "content": "What is Langfuse?"}]], "kwargs": {}}))
    assert normalise(wrapped) == [{"role": "user", "content": "What is Langfuse?"}]
    assert normalise('"{\\"args\\": [\\"programming\\"], \\"kwargs\\": {}}"') == [{"role": "user", "content": "programming"}]


def test_gemini_calls_without_ids_pair_with_their_responses_by_name() -> None:
    request = {"contents": [
        {"role": "user", "parts": [{"text": "Weather in Paris and Rome?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {"city": "Paris"}}},
                                    {"functionCall": {"name": "weather", "args": {"city": "Rome"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "weather", "response": {"result": "sunny"}}},
                                   {"functionResponse": {"name": "weather", "response": {"result": "rain"}}}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]}}
    msgs = normalise(request)
    assert msgs is not None
    calls = msgs[2]["tool_calls"]
    assert [(c["id"], c["function"]["arguments"]) for c in calls] == [("weather#1", {"city": "Paris"}),
                                                                        ("weather#2", {"city": "Rome"})]
    assert [(m["tool_call_id"], m["content"]) for m in msgs[3:]] == [("weather#1", "sunny"), ("weather#2", "rain")]
    assert msgs[0] == {"role": "system", "content": "Be brief."}


def test_python_repr_is_read_with_a_warning() -> None:
    text = "[UserMessage(content='How far is the moon?'), AssistantMessage(content='About 384,400 km.')]"
    with pytest.warns(InputWarning, match="a Python repr, not JSON"):
        msgs = normalise(text, where="observations[3].input")
    assert msgs == [{"role": "user", "content": "How far is the moon?"},
                    {"role": "assistant", "content": "About 384,400 km."}]


def test_plain_text_stays_text_and_an_unknown_object_is_none() -> None:
    assert normalise("just a question") == [{"role": "user", "content": "just a question"}]
    assert normalise({"weather": "sunny"}) is None


# ---------------------------------------------------------------- never silently wrong

def _native(tmp_path: Path, turn: dict[str, object], system: str | None = None) -> Path:
    p = tmp_path / "t.jsonl"
    rec: dict[str, object] = {"id": "t1", "turns": [turn]}
    if system:
        rec["system"] = system
    p.write_text(json.dumps(rec) + "\n")
    return p


@pytest.mark.parametrize(("turn", "system", "field", "why"), [
    ({"input": json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}), "output": "hello"},
     None, "turns[0].input", "a request with 'messages' as JSON text"),
    ({"input": "hi", "output": json.dumps({"candidates": [{"content": {"role": "model", "parts": [{"text": "hey"}]}}]})},
     None, "turns[0].output", "a Gemini request or response as JSON text"),
    ({"input": "hi", "output": "{'role': 'assistant', 'text': 'Hello!'}"}, None, "turns[0].output", "Python repr"),
    ({"input": "system: Be brief.\nuser: Say hello", "output": "Hello"}, None, "turns[0].input", "flattened"),
    ({"input": "You are a careful assistant who answers questions about the weather.", "output": "ok"},
     "You are a careful assistant who answers questions about the weather.", "turns[0].input", "the system prompt"),
])
def test_a_turn_that_still_holds_a_payload_is_a_located_warning(tmp_path: Path, turn: dict[str, object],
                                                                 system: str | None, field: str, why: str) -> None:
    items = _items(_native(tmp_path, turn, system))
    traces = [i for i in items if isinstance(i, Trace)]
    (warning,) = [i for i in items if isinstance(i, ReadingWarning)]
    assert len(traces) == 1  # the trace is still read; the warning says it looks wrong
    assert warning.field == field and why in warning.message and warning.line == 1


def test_plain_json_answers_are_not_flagged(tmp_path: Path) -> None:
    items = _items(_native(tmp_path, {"input": "Give me JSON", "output": '{"answer": 42, "unit": "m"}'}))
    assert [i for i in items if isinstance(i, InputIssue)] == []


def test_the_warning_is_in_input_issues_and_does_not_skip_anything(tmp_path: Path) -> None:
    path = _native(tmp_path, {"input": "[{'role': 'user', 'content': 'hi'}]", "output": "hello"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate(str(path), ["exact_match"])
    assert len(result.traces) == 1
    assert [type(i) for i in result.input_issues] == [ReadingWarning]
    assert "Python repr" in result.input_issues[0].message
    assert run_status(result)[0] != "invalid_input"


def test_the_warning_stays_a_warning_after_a_round_trip(tmp_path: Path) -> None:
    # a results file or the run store gives the run back with the same status: the warning is not
    # read back as a skipped record (which would turn a clean run into an input error)
    from assay.model import RunResult, read_results
    from assay.store import RunStore

    path = _native(tmp_path, {"input": "[{'role': 'user', 'content': 'hi'}]", "output": "hello"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate(str(path), ["exact_match"], store=str(tmp_path / "runs.sqlite3"))
    again = [RunResult.from_dict(json.loads(json.dumps(result.to_dict()))),
             read_results(json.dumps(result.to_dict()).encode(), "r.json")]
    again.append(RunStore(tmp_path / "runs.sqlite3").load(result.run["run_id"]))
    for back in again:
        assert [type(i) for i in back.input_issues] == [ReadingWarning]
        assert run_status(back) == run_status(result)
    plain = InputIssue("a.jsonl", 3, "turns", "bad")
    back = RunResult.from_dict({**result.to_dict(), "input_issues": [msgspec_builtins(plain)]})
    assert [type(i) for i in back.input_issues] == [InputIssue]


def msgspec_builtins(issue: InputIssue) -> dict:
    import msgspec

    return msgspec.to_builtins(issue)


def test_validate_prints_the_warning_and_passes(tmp_path: Path) -> None:
    path = _native(tmp_path, {"input": json.dumps([{"role": "user", "content": "hi"}]), "output": "hello"})
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 0
    assert "Warning: " in r.output and "turns[0].input" in r.output and "a list of chat messages" in r.output


def test_validate_verbose_shows_what_was_read() -> None:
    r = CliRunner().invoke(main, ["validate", "-v", str(REAL / "langfuse" / "framework-koog-2025-08-26.json")])
    assert r.exit_code == 0, r.output
    assert "read as langfuse (1 trace)" in r.output
    assert "input:  'Greet and say goodbye to the user in the same message." in r.output
    assert "output: 'Hello my darling Bob! And, bye my dear Bob!'" in r.output
    assert "tool calls: 2" in r.output and "HelloTool" in r.output and "-> 'Hello my darling Bob!'" in r.output


@pytest.mark.parametrize(("name", "fmt"), [("anthropic/anthropic-mcp.1.json", "anthropic"),
                                           ("openai/openai-text.json", "openai"),
                                           ("gemini/google-text.json", "gemini")])
def test_validate_names_the_format_of_a_bare_response(name: str, fmt: str) -> None:
    r = CliRunner().invoke(main, ["validate", str(REAL / name)])
    assert r.exit_code == 0 and f"read as {fmt} (1 trace)" in r.output


# ---------------------------------------------------------------- skipped objects, hints

def test_openai_objects_that_are_no_conversation_are_skipped_with_one_line(tmp_path: Path) -> None:
    p = tmp_path / "recording.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in [
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
        {"id": "file-abc", "object": "file", "bytes": 120, "filename": "notes.txt", "purpose": "assistants"},
        {"id": "vs_1", "object": "vector_store", "name": "docs", "status": "completed"}]) + "\n")
    items = _items(p)
    assert sum(isinstance(i, Trace) for i in items) == 1
    skipped = [i for i in items if isinstance(i, ReadingWarning)]
    assert [(s.line, s.message.split(" (")[0]) for s in skipped] == [
        (2, "skipped: an OpenAI 'file' object"), (3, "skipped: an OpenAI 'vector_store' object")]
    r = CliRunner().invoke(main, ["validate", str(p)])
    assert r.exit_code == 0 and "1 valid trace(s), 0 invalid record(s)" in r.output


def test_closest_format_hint_counts_the_fields_shared(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"eval_set_id": "s1", "name": "s1", "eval_cases": "not a list"}))
    with pytest.raises(ConfigError, match=r"the closest is adk_evalset"):
        _items(p)


# ---------------------------------------------------------------- the documented examples read as documented

DOC = (Path(__file__).resolve().parents[2] / "docs" / "trace-format.md").read_text(encoding="utf-8")
NEW_FORMATS = ("gemini", "tau_bench", "adk_evalset", "swe_agent", "langsmith")


def _read_as(tmp_path: Path, text: str) -> tuple[list[Trace], list[InputIssue], dict[str, dict[str, int]]]:
    p = tmp_path / "example.json"
    p.write_text(text, encoding="utf-8")
    formats: dict[str, dict[str, int]] = {}
    items = [item for _, item in read_traces(str(p), formats=formats)]
    return ([i for i in items if isinstance(i, Trace)], [i for i in items if isinstance(i, InputIssue)],
            formats)


@pytest.mark.parametrize("name", NEW_FORMATS)
def test_each_new_format_s_documented_examples_read_as_that_format(name: str, tmp_path: Path) -> None:
    row = next(line for line in DOC.splitlines() if line.startswith(f"| `{name}` | "))
    minimal = row.split(" | ", 1)[1].split("`")[1]
    section = DOC.split(f"(`{name}`)\n", 1)[1]
    example = section.split("```json\n", 1)[1].split("```", 1)[0]
    for text in (minimal, example):
        traces, issues, formats = _read_as(tmp_path, text)
        assert issues == [] and len(traces) >= 1
        assert list(formats.values())[0] == {name: len(traces)}
        assert traces[0].turns and (traces[0].turns[0].input or traces[0].turns[0].output)


# ---------------------------------------------------------------- pydantic-ai / logfire, first instrumentation version

def test_pydantic_ai_version_1_messages_in_one_events_attribute(tmp_path: Path) -> None:
    """Version 1 of pydantic-ai's instrumentation keeps the messages as one JSON ``events`` attribute
    (shape as pydantic-ai's own tests show it); a user message holding only the tool result is no new turn."""
    events = [
        {"event.name": "gen_ai.system.message", "content": "Be nice", "role": "system"},
        {"event.name": "gen_ai.user.message", "content": "What is the weather like in Paris today?", "role": "user"},
        {"event.name": "gen_ai.assistant.message", "role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'}}]},
        {"event.name": "gen_ai.tool.message", "role": "tool", "id": "call_1", "name": "get_weather",
         "content": "rainy, 24 C"},
        {"event.name": "gen_ai.choice", "index": 0,
         "message": {"role": "assistant", "content": "It is raining in Paris, 24 C."}}]

    def attr(key: str, value: str) -> dict[str, object]:
        return {"key": key, "value": {"stringValue": value}}

    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "chat gpt-4.1",
            "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000",
            "attributes": [attr("gen_ai.operation.name", "chat"), attr("gen_ai.system", "openai"),
                           attr("gen_ai.request.model", "gpt-4.1"), attr("events", json.dumps(events))]}
    p = tmp_path / "v1.json"
    p.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    (trace,) = [i for i in _items(p) if isinstance(i, Trace)]
    assert len(trace.turns) == 1 and trace.system == "Be nice"
    turn = trace.turns[0]
    assert turn.input == "What is the weather like in Paris today?"
    assert turn.output == "It is raining in Paris, 24 C."
    assert [(c.name, c.arguments, c.result) for c in turn.tool_calls] == [("get_weather", {"location": "Paris"},
                                                                          "rainy, 24 C")]


def test_gemini_lines_in_a_mixed_recording_are_read_as_gemini(tmp_path: Path) -> None:
    """A recording that logs a chat.completion then a Gemini response, one per line (the two genuine
    responses of the corpus, compacted onto lines)."""
    p = tmp_path / "recording.jsonl"
    lines = [json.dumps(json.loads((REAL / name).read_text(encoding="utf-8")))
             for name in ("openai/openai-text.json", "gemini/google-text.json", "anthropic/anthropic-mcp.1.json")]
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    formats: dict[str, dict[str, int]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        items = [item for _, item in read_traces(str(p), formats=formats)]
    assert [i for i in items if isinstance(i, InputIssue)] == []
    # the chat reader reads both chat flavours (the bare Anthropic message too); the Gemini line is
    # detected on its own
    assert formats[str(p)] == {"openai": 2, "gemini": 1}
    traces = [t for t in items if isinstance(t, Trace)]
    assert traces[1].turns[0].output == "There are **3** r's in strawberry.\n\nHere is the breakdown: st**r**awbe**rr**y."
    assert [(c.name, c.result) for c in traces[2].turns[0].tool_calls] == [("echo", "Tool echo: hello world")]


def test_langfuse_generation_holding_anthropic_blocks_reads_calls_and_results(tmp_path: Path) -> None:
    """The same payload reader inside a span format: an Anthropic request and a bare Anthropic
    response as a Langfuse generation's input and output."""
    gen = {"id": "g1", "traceId": "tr1", "type": "GENERATION", "startTime": "2026-01-01T09:00:00Z",
           "input": {"system": "Be brief.", "messages": [
               {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "tu1", "name": "weather",
                                                   "input": {"city": "Oslo"}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "snow"}]}]},
           "output": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "stop_reason": "end_turn",
                      "content": [{"type": "text", "text": "It is snowing in Oslo."}]}}
    p = tmp_path / "obs.json"
    p.write_text(json.dumps([gen]))
    (trace,) = [i for i in _items(p) if isinstance(i, Trace)]
    assert len(trace.turns) == 1 and trace.system == "Be brief."
    turn = trace.turns[0]
    assert (turn.input, turn.output) == ("Weather in Oslo?", "It is snowing in Oslo.")
    assert [(c.name, c.arguments, c.result) for c in turn.tool_calls] == [("weather", {"city": "Oslo"}, "snow")]


def test_a_tool_span_without_its_result_takes_the_one_the_model_was_given(tmp_path: Path) -> None:
    """pydantic-ai's second instrumentation version: the tool span records the call, not its result;
    the next model request's input holds the tool_call_response. One question, one turn."""
    def attr(key: str, value: str) -> dict[str, object]:
        return {"key": key, "value": {"stringValue": value}}

    trace_id = "0af7651916cd43dd8448eb211c80319c"
    ask = {"role": "user", "parts": [{"type": "text", "content": "Hello"}]}
    call = {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "my_ret", "arguments": {"x": 0}}]}
    back = {"role": "user", "parts": [{"type": "tool_call_response", "id": "call_1", "name": "my_ret", "result": "1"}]}
    done = {"role": "assistant", "parts": [{"type": "text", "content": '{"my_ret":"1"}'}]}
    spans = [
        {"traceId": trace_id, "spanId": "a000000000000001", "name": "chat test", "startTimeUnixNano": "1000",
         "endTimeUnixNano": "2000", "attributes": [attr("gen_ai.operation.name", "chat"),
                                                  attr("gen_ai.input.messages", json.dumps([ask])),
                                                  attr("gen_ai.output.messages", json.dumps([call]))]},
        {"traceId": trace_id, "spanId": "a000000000000002", "name": "running tool", "startTimeUnixNano": "2100",
         "endTimeUnixNano": "2200", "attributes": [attr("gen_ai.operation.name", "execute_tool"),
                                                  attr("gen_ai.tool.name", "my_ret"),
                                                  attr("gen_ai.tool.call.id", "call_1")]},
        {"traceId": trace_id, "spanId": "a000000000000003", "name": "chat test", "startTimeUnixNano": "2300",
         "endTimeUnixNano": "3000", "attributes": [attr("gen_ai.operation.name", "chat"),
                                                  attr("gen_ai.input.messages", json.dumps([ask, call, back])),
                                                  attr("gen_ai.output.messages", json.dumps([done]))]}]
    p = tmp_path / "v2.json"
    p.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    (trace,) = [i for i in _items(p) if isinstance(i, Trace)]
    assert len(trace.turns) == 1
    assert (trace.turns[0].input, trace.turns[0].output) == ("Hello", '{"my_ret":"1"}')
    assert [(c.name, c.arguments, c.result) for c in trace.turns[0].tool_calls] == [("my_ret", {"x": 0}, "1")]


def test_a_traceloop_entity_input_that_is_not_text_is_kept_as_json(tmp_path: Path) -> None:
    """An OpenLLMetry workflow span whose entity input is an OTLP array value (not a string)."""
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "greet.workflow",
            "startTimeUnixNano": "1000", "endTimeUnixNano": "2000", "attributes": [
                {"key": "traceloop.span.kind", "value": {"stringValue": "workflow"}},
                {"key": "traceloop.entity.input", "value": {"arrayValue": {"values": [{"stringValue": "a"},
                                                                                       {"stringValue": "b"}]}}},
                {"key": "traceloop.entity.output", "value": {"stringValue": "done"}}]}
    p = tmp_path / "tl.json"
    p.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    (trace,) = [i for i in _items(p) if isinstance(i, Trace)]
    assert (trace.turns[0].input, trace.turns[0].output) == ('["a", "b"]', "done")
