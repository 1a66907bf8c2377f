from __future__ import annotations

import json
from pathlib import Path

from assay.model import InputIssue

from ._helpers import DATA, plain, read_all, traces_of

AGENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_agent_trace_with_tool_and_sub_agent() -> None:
    t = plain(traces_of(DATA / "otel_agent.json")[AGENT_TRACE])
    assert t["system"] == "You are a travel assistant."
    # two chat spans answering the same user message are one turn
    assert t["turns"] == [{
        "input": "What's the weather in Paris, and find me a museum?",
        "output": "It is 18°C and cloudy in Paris. I asked our researcher for a museum: the Musée d'Orsay is open until 18:00.",
        "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "result": {"temp_c": 18, "sky": "cloudy"},
                        "timestamp": "2026-01-01T10:00:00.610Z", "duration_ms": 120.0, "agent": "orchestrator", "id": "call_1"}],
        "reasoning": "Weather known; museum needs research.",
        "latency_ms": 2280.0, "usage": {"input_tokens": 330, "output_tokens": 63}, "agent": "orchestrator"}]
    assert t["agents"] == {"researcher": {"turns": [{
        "input": "Find one museum in Paris open today.", "output": "Musée d'Orsay, open 9:30-18:00.",
        "tool_calls": [{"name": "web_search", "arguments": {"query": "museum Paris open today"}, "error": "rate limited",
                        "timestamp": "2026-01-01T10:00:01.210Z", "duration_ms": 440.0, "agent": "researcher", "id": "call_r1"}],
        "latency_ms": 900.0, "usage": {"input_tokens": 40, "output_tokens": 12}, "agent": "researcher"}]}}
    assert t["handoffs"] == [{"from": "orchestrator", "to": "researcher", "message": "Find one museum in Paris open today.",
                              "timestamp": "2026-01-01T10:00:00.740Z"}]
    assert (t["status"], t["latency_ms"]) == ("completed", 2300.0)  # from the root span
    assert t["metadata"] == {"conversation_id": "conv-42", "provider": "openai", "service_name": "travel-agent",
                             "models": ["gpt-4o-2024-08-06", "gpt-4o", "gpt-4o-mini"], "agent_name": "orchestrator",
                             "root_span": "invoke_agent orchestrator"}


def test_older_prompt_and_completion_events_and_create_agent() -> None:
    t = plain(traces_of(DATA / "otel_agent.json")["5b8efff798038103d269b633813fc60c"])
    assert t["system"] == "Be brief."
    assert t["turns"] == [{"input": "Capital of France?", "output": "Paris.", "latency_ms": 900.0,
                           "usage": {"input_tokens": 30, "output_tokens": 9}}]
    assert t["metadata"]["created_agents"] == [{"name": "helper", "id": "asst_1", "model": "gpt-4o-mini"}]


def test_one_export_per_line_with_a_trace_split_over_lines() -> None:
    out = read_all(DATA / "otel_lines.jsonl")
    assert [(loc.rsplit(":", 1)[1], t.id) for loc, t in out] == [
        ("1", "0af7651916cd43dd8448eb211c80319c"), ("2", "aaaabbbbccccddddeeeeffff00001111")]
    t = plain(out[0][1])
    # flattened gen_ai.prompt.N / gen_ai.completion.N attributes; the execute span takes the model's arguments
    assert t["turns"] == [{
        "input": "Book a table for two at 8pm.", "output": "Done: table for two at 20:00, booking A12.",
        "tool_calls": [{"name": "book_table", "arguments": {"party": 2, "time": "20:00"}, "result": "confirmed #A12",
                        "timestamp": "2026-01-01T10:00:00.810Z", "duration_ms": 190.0, "agent": "booker", "id": "toolu_1"}],
        "latency_ms": 1390.0, "usage": {"input_tokens": 130, "output_tokens": 35}, "agent": "booker"}]
    assert t["latency_ms"] == 1500.0 and "status" not in t  # root status unset: unknown


def test_malformed_spans_are_issues_naming_line_and_attribute() -> None:
    out = read_all(DATA / "otel_malformed.jsonl")
    assert sorted(str(x) if isinstance(x, InputIssue) else x.id for _, x in out) == sorted([
        "e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0",
        f"{DATA / 'otel_malformed.jsonl'}:2: resourceSpans[0].scopeSpans[0].spans[0].attributes[gen_ai.tool.call.arguments]: "
        "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1)) "
        "(trace f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0 not imported)",
        f"{DATA / 'otel_malformed.jsonl'}:3: not valid JSON: Expecting value at column 47",
        f"{DATA / 'otel_malformed.jsonl'}:4: resourceSpans[0].scopeSpans[0].spans[0].traceId: required field is missing",
    ])


def _export(*spans: dict) -> dict:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def _span(sid: str, parent: str | None, start: int, end: int, **attrs: object) -> dict:
    s = {"traceId": "ab" * 16, "spanId": sid, "name": "s", "startTimeUnixNano": str(start), "endTimeUnixNano": end,
         "attributes": [{"key": k.replace("__", "."), "value": {"stringValue": v} if isinstance(v, str) else
                         {"intValue": v}} for k, v in attrs.items()]}
    if parent:
        s["parentSpanId"] = parent
    return s


def test_turns_follow_the_user_messages_and_tools_their_time_windows(in_tmp: Path) -> None:
    def msgs(*texts: str) -> str:
        return json.dumps([{"role": r, "parts": [{"type": "text", "content": x}]}
                           for i, x in enumerate(texts) for r in ["user" if i % 2 == 0 else "assistant"]])

    spans = [
        _span("0000000000000001", None, 1, 10_000_000_001, gen_ai__operation__name="invoke_agent"),
        _span("0000000000000002", "0000000000000001", 1_000, 2_000, gen_ai__operation__name="chat",
              gen_ai__input__messages=msgs("q1"),
              gen_ai__output__messages=json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "a1"}]}])),
        _span("0000000000000003", "0000000000000001", 3_000, 4_000, gen_ai__operation__name="execute_tool",
              gen_ai__tool__name="t2"),
        _span("0000000000000004", "0000000000000001", 2_500, 5_000, gen_ai__operation__name="chat",
              gen_ai__input__messages=msgs("q1", "a1", "q2")),
        _span("0000000000000005", "0000000000000001", 500, 600, gen_ai__operation__name="execute_tool",
              gen_ai__tool__name="t0", gen_ai__tool__call__arguments='{"x": 1}'),
    ]
    (in_tmp / "t.json").write_text(json.dumps(_export(*spans)))
    (t,) = [x for _, x in read_all("t.json")]
    assert [(u.input, u.output, [c.name for c in u.tool_calls]) for u in t.turns] == [
        ("q1", "a1", ["t0"]), ("q2", None, ["t2"])]
    assert t.latency_ms == 10_000.0  # the root span's 10 s


def test_many_traces_in_one_file(in_tmp: Path) -> None:
    with open("many.jsonl", "w") as f:
        for i in range(300):
            span = _span("00000000000000aa", None, 0, 1000, gen_ai__operation__name="chat")
            span["traceId"] = f"{i:032x}"
            f.write(json.dumps(_export(span)) + "\n")
    out = read_all("many.jsonl")
    assert [t.id for _, t in out] == [f"{i:032x}" for i in range(300)]
    assert [loc for loc, _ in out][-1] == "many.jsonl:300"


def test_base64_ids_and_snake_case_keys(in_tmp: Path) -> None:
    import base64

    tid = base64.b64encode(bytes(range(16))).decode()
    doc = {"resource_spans": [{"scope_spans": [{"spans": [{"trace_id": tid, "span_id": base64.b64encode(b"12345678").decode(),
                                                           "name": "chat x", "start_time_unix_nano": 5, "end_time_unix_nano": 2_000_005}]}]}]}
    (in_tmp / "s.json").write_text(json.dumps(doc))
    (t,) = [x for _, x in read_all("s.json", input_format="otel")]
    assert t.id == bytes(range(16)).hex() and t.latency_ms == 2.0


def _agent_chain(n: int, cycle: bool = False) -> list[dict]:
    """``n`` agents, each invoked by the one before (the first by the last when ``cycle``), each with one chat."""
    msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])
    spans = []
    for i in range(n):
        parent = f"{i:016x}" if i else (f"{n:016x}" if cycle else None)
        spans.append(_span(f"{i + 1:016x}", parent, i, 10**9, gen_ai__operation__name="invoke_agent",
                           gen_ai__agent__name=f"agent{i}"))
        spans.append(_span(f"{i + 1:08x}0000000f", f"{i + 1:016x}", i, 10**9, gen_ai__operation__name="chat",
                           gen_ai__input__messages=msgs))
    return spans


def test_a_deep_chain_of_nested_agents_imports_and_a_parent_cycle_is_a_located_issue(in_tmp: Path) -> None:
    (in_tmp / "deep.json").write_text(json.dumps(_export(*_agent_chain(1500))))  # deeper than Python's recursion
    (t,) = [x for _, x in read_all("deep.json")]
    assert len(t.agents) == 1499 and [h.to_agent for h in t.handoffs][:2] == ["agent1", "agent2"]
    (in_tmp / "cycle.json").write_text(json.dumps(_export(*_agent_chain(1500, cycle=True))))
    ((_, issue),) = read_all("cycle.json")
    assert isinstance(issue, InputIssue) and "RecursionError" not in str(issue)
    assert "spans[0]: span '0000000000000001' is its own ancestor" in str(issue) and "after 1500 span(s)" in str(issue)
