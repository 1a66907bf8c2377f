"""assay's own trace format: JSON Lines, JSON arrays, pretty-printed objects; located issues."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.errors import ConfigError, DataError
from assay.importers import parse_trace, read_traces
from assay.importers._native import read_native
from assay.importers._stream import CHUNK
from assay.model import (
    AgentRun, Expected, ExpectedToolCall, Handoff, InputIssue, ToolCall, Trace, Turn, TurnExpected, Usage,
)

from ._helpers import plain, read_all

GOOD = {"id": "t1", "turns": [{"input": "hi", "output": "hello"}]}


def line(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def write(path: Path, text: str | bytes) -> str:
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path.name)


# ---------------------------------------------------------------- shapes


def test_jsonl_with_blank_lines_and_crlf(in_tmp: Path) -> None:
    name = write(in_tmp / "traces.jsonl", line(GOOD) + "\n   \n" + json.dumps({**GOOD, "id": "t2"}) + "\r\n\n")
    out = read_all(name)
    assert [(loc, t.id) for loc, t in out] == [("traces.jsonl:1", "t1"), ("traces.jsonl:4", "t2")]


def test_json_array_one_element_per_line(in_tmp: Path) -> None:
    name = write(in_tmp / "traces.json", "[\n" + json.dumps(GOOD) + ",\n" + json.dumps({**GOOD, "id": "t2"}) + "\n]\n")
    assert [(loc, t.id) for loc, t in read_all(name)] == [("traces.json:2", "t1"), ("traces.json:3", "t2")]


def test_pretty_printed_objects_one_after_another(in_tmp: Path) -> None:
    text = json.dumps(GOOD, indent=2) + "\n" + json.dumps({**GOOD, "id": "t2"}, indent=2) + "\n"
    name = write(in_tmp / "traces.json", text)
    assert [(loc, t.id) for loc, t in read_all(name)] == [("traces.json:1", "t1"), ("traces.json:10", "t2")]


@pytest.mark.parametrize("body", [line(GOOD), "[" + json.dumps(GOOD) + "]"], ids=["jsonl", "array"])
def test_byte_order_mark_is_skipped(in_tmp: Path, body: str) -> None:
    name = write(in_tmp / "bom.json", b"\xef\xbb\xbf" + body.encode())
    (item,) = [t for _, t in read_all(name)]
    assert isinstance(item, Trace) and item.id == "t1"


def test_empty_files_hold_no_traces(in_tmp: Path) -> None:
    assert read_all(write(in_tmp / "a.jsonl", "")) == []
    assert read_all(write(in_tmp / "b.jsonl", "\n  \n")) == []
    assert read_all(write(in_tmp / "c.json", "[]")) == []


def test_array_elements_split_across_the_chunk_boundary(in_tmp: Path) -> None:
    """Elements cut by the 1 MiB read boundary, also inside a multi-byte character, decode whole."""
    traces = []
    i = 0
    size = 2
    while size < 2 * CHUNK + 50_000:
        t = {"id": f"t{i}", "turns": [{"input": "é" * (1000 + i % 7), "output": "ok"}], "latency_ms": i + 0.5}
        traces.append(t)
        size += len(json.dumps(t, ensure_ascii=False).encode()) + 2
        i += 1
    text = "[\n" + ",\n".join(json.dumps(t, ensure_ascii=False) for t in traces) + "\n]"
    raw = text.encode()
    boundaries = [CHUNK, 2 * CHUNK]
    # some element must straddle each boundary, and one boundary must fall inside an 'é'
    assert all(raw[b - 1:b + 1] not in (b",\n", b"\n{") for b in boundaries)
    name = write(in_tmp / "big.json", raw)
    out = read_all(name)
    assert all(isinstance(t, Trace) for _, t in out)
    assert [t.id for _, t in out] == [t["id"] for t in traces]
    assert [loc for loc, _ in out] == [f"big.json:{n + 2}" for n in range(len(traces))]
    assert out[-1][1].latency_ms == traces[-1]["latency_ms"]


def test_number_at_the_chunk_boundary_is_not_cut(in_tmp: Path) -> None:
    """A bare number whose digits straddle the boundary must not be read as its first half."""
    prefix = "[" + json.dumps({"id": "pad", "turns": [], "metadata": {"x": "a" * (CHUNK - 60)}}) + ", "
    pad = CHUNK - len(prefix.encode()) - 3
    text = prefix + " " * pad + "123456789]"
    out = list(read_native(io.BytesIO(text.encode()), "n.json"))
    issue = out[-1][1]
    assert isinstance(issue, InputIssue) and issue.message == "expected a trace object, got integer"


def test_messages_shape_is_detected_on_the_first_lines_not_the_extension(in_tmp: Path) -> None:
    name = write(in_tmp / "traces.json", line(GOOD) + line({**GOOD, "id": "t2"}))
    assert [t.id for _, t in read_all(name)] == ["t1", "t2"]


# ---------------------------------------------------------------- OpenAI messages


def test_messages_become_turns() -> None:
    trace = parse_trace(json.dumps({"id": "m", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": "Use metric units."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]},
        {"role": "tool", "tool_call_id": "c2", "content": '{"temp_c": 24}'},
        {"role": "tool", "tool_call_id": "c1", "content": "18 degrees"},
        {"role": "assistant", "content": "Paris 18°C,"},
        {"role": "assistant", "content": [{"type": "text", "text": "Rome 24°C."}, {"type": "image_url", "image_url": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks"}, {"type": "input_text", "text": "!"}]},
    ]}), "m.jsonl", 1)
    assert isinstance(trace, Trace)
    assert plain(trace) == {"id": "m", "system": "Be brief.\n\nUse metric units.", "turns": [
        {"input": "Weather in Paris and Rome?", "output": "Paris 18°C,\nRome 24°C.", "tool_calls": [
            {"name": "get_weather", "arguments": {"city": "Paris"}, "result": "18 degrees", "id": "c1"},
            {"name": "get_weather", "arguments": {"city": "Rome"}, "result": {"temp_c": 24}, "id": "c2"}]},
        {"input": "Thanks\n!"}]}


def test_assistant_before_any_user_opens_a_turn_without_input() -> None:
    trace = parse_trace(json.dumps({"id": "m", "messages": [
        {"role": "assistant", "content": "Hi, I'm your assistant."},
        {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "How can I help?"}]}), "m", 1)
    assert isinstance(trace, Trace)
    assert [(t.input, t.output) for t in trace.turns] == [(None, "Hi, I'm your assistant."), ("Hello", "How can I help?")]


def test_agents_take_messages_too() -> None:
    trace = parse_trace(json.dumps({"id": "m", "turns": [], "agents": {"researcher": {"messages": [
        {"role": "user", "content": "find"}, {"role": "assistant", "content": "found"}]}}}), "m", 1)
    assert isinstance(trace, Trace) and trace.agents["researcher"].turns[0].output == "found"


@pytest.mark.parametrize(("messages", "field", "message"), [
    ([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [
        {"id": "c", "function": {"name": "f", "arguments": "[1, 2]"}}]}],
     "messages[1].tool_calls[0].function.arguments", "expected an object, got array"),
    ([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [
        {"id": "c", "function": {"name": "f", "arguments": "{'a': 1}"}}]}],
     "messages[1].tool_calls[0].function.arguments", "not valid JSON (Expecting property name enclosed in double quotes at column 2)"),
    ([{"role": "tool", "tool_call_id": "nope", "content": "r"}],
     "messages[0].tool_call_id", "no earlier assistant tool call has id 'nope'"),
    ([{"role": "robot", "content": "beep"}],
     "messages[0].role", "expected one of 'system', 'user', 'assistant', 'tool', got 'robot'"),
    ([{"role": "user", "content": 5}],
     "messages[0].content", "expected a string or a list of content parts, got integer"),
], ids=["arguments-array", "arguments-not-json", "unknown-call-id", "bad-role", "content-number"])
def test_bad_messages_name_the_message(messages: list[dict], field: str, message: str) -> None:
    issue = parse_trace(json.dumps({"id": "m", "messages": messages}), "chat.jsonl", 3)
    assert isinstance(issue, InputIssue)
    assert (issue.field, issue.message) == (field, message)


# ---------------------------------------------------------------- located issues


def test_the_example_from_the_issue(in_tmp: Path) -> None:
    bad = {"id": "t17", "turns": [{}, {}, {"tool_calls": [{"name": "f", "arguments": "Paris"}]}]}
    lines = [line({**GOOD, "id": f"t{n}"}) for n in range(1, 17)] + [line(bad)]
    name = write(in_tmp / "traces.jsonl", "".join(lines))
    out = read_all(name)
    assert str(out[-1][1]) == "traces.jsonl:17: turns[2].tool_calls[0].arguments: expected an object, got string"
    assert out[-1][0] == "traces.jsonl:17"


@pytest.mark.parametrize(("text", "expected"), [
    ('{"id": "a", "turns": [}', "bad.jsonl:2: not valid JSON: Expecting value at column 23"),
    ('{"id": "a", "turns": []} trailing', "bad.jsonl:2: not valid JSON: Extra data at column 26"),
    ("[1, 2]", "bad.jsonl:2: expected a trace object, got array"),
    ('"just text"', "bad.jsonl:2: expected a trace object, got string"),
    ("null", "bad.jsonl:2: expected a trace object, got null"),
    ('{"id": "a", "turns": [], "score": 1}', "bad.jsonl:2: score: unknown field (put custom data under 'metadata')"),
    ('{"id": "a", "turns": [{"input": "x", "tool_call": []}]}',
     "bad.jsonl:2: turns[0].tool_call: unknown field (did you mean 'tool_calls'? put custom data under 'metadata')"),
    ('{"id": "a"}', "bad.jsonl:2: turns: required field is missing (give 'turns' or 'messages')"),
    ('{"turns": []}', "bad.jsonl:2: id: required field is missing"),
    ('{"id": "a", "turns": [], "status": "done"}', "bad.jsonl:2: status: expected 'completed', 'failed' or 'partial', got 'done'"),
    ('{"id": "a", "turns": [], "expected": {"tool_order": "sorted"}}',
     "bad.jsonl:2: expected.tool_order: expected 'strict' or 'any', got 'sorted'"),
    ('{"id": "a", "turns": [], "latency_ms": "fast"}', "bad.jsonl:2: latency_ms: expected a number or null, got string"),
    ('{"id": "a", "turns": [], "messages": []}', "bad.jsonl:2: give either 'turns' or 'messages', not both"),
    ('{"id": "a", "turns": [], "handoffs": [{"from": "x"}]}', "bad.jsonl:2: handoffs[0].to: required field is missing"),
    (b'{"id": "\xff", "turns": []}', "bad.jsonl:2: not valid UTF-8: byte 0xff at column 9; "
                                    "use --on-bad-text=replace to keep the record with U+FFFD"),
    # binary junk with NUL bytes: json.loads would read it as UTF-32 and name a NUL at column 5
    (b'\x00\x00\x00\x01\x00i\xff', "bad.jsonl:2: not valid UTF-8: byte 0xff at column 7; "
                                    "use --on-bad-text=replace to keep the record with U+FFFD"),
    (b'\x01\x00\x00\x00\xd0a\x00\x00', "bad.jsonl:2: not valid UTF-8: byte 0xd0 at column 5; "
                               "use --on-bad-text=replace to keep the record with U+FFFD"),
], ids=["syntax", "trailing", "array", "string", "null", "unknown-field", "unknown-nested", "missing-turns",
        "missing-id", "status-enum", "tool-order-enum", "wrong-type", "turns-and-messages", "handoff-to",
        "utf8", "utf8-nul-junk", "utf8-not-utf32"])
def test_bad_lines_are_issues_naming_file_line_and_field(in_tmp: Path, text: str | bytes, expected: str) -> None:
    body = text if isinstance(text, bytes) else text.encode()
    name = write(in_tmp / "bad.jsonl", line(GOOD).encode() + body + b"\n" + line({**GOOD, "id": "t3"}).encode())
    out = read_all(name)
    assert [str(x) if isinstance(x, InputIssue) else x.id for _, x in out] == ["t1", expected, "t3"]


def test_syntax_error_in_an_array_stops_with_its_position(in_tmp: Path) -> None:
    name = write(in_tmp / "a.json", "[\n" + json.dumps(GOOD) + ",\n" + '{"id": "t2", "turns": [}' + ",\n"
                 + json.dumps(GOOD) + "\n]")
    out = read_all(name)
    assert isinstance(out[0][1], Trace)
    assert str(out[1][1]) == "a.json:3: not valid JSON: Expecting value at column 24; reading stopped here"
    assert len(out) == 2


def test_missing_comma_and_trailing_garbage_in_an_array_are_reported(in_tmp: Path) -> None:
    name = write(in_tmp / "a.json", "[\n" + json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n]")
    assert str(read_all(name)[-1][1]) == "a.json:3: not valid JSON: expected ',' or ']', got '{' at column 1; reading stopped here"
    name = write(in_tmp / "b.json", "[\n" + json.dumps(GOOD) + "\n] ]")
    assert str(read_all(name)[-1][1]) == "b.json:3: not valid JSON: unexpected ']' after the array at column 3; reading stopped here"


def test_unterminated_array(in_tmp: Path) -> None:
    name = write(in_tmp / "a.json", "[\n" + json.dumps(GOOD) + ",\n")
    out = read_all(name)
    assert isinstance(out[0][1], Trace)
    assert str(out[1][1]).startswith("a.json:3: not valid JSON: ") and out[1][1].message.endswith("reading stopped here")


def test_array_elements_that_are_not_objects(in_tmp: Path) -> None:
    name = write(in_tmp / "a.json", '[\n"x",\n' + json.dumps(GOOD) + "\n]")
    out = read_all(name, input_format="assay")
    assert str(out[0][1]) == "a.json:2: expected a trace object, got string"
    assert isinstance(out[1][1], Trace)


def test_strict_raises_at_the_first_bad_record_after_yielding_the_good_ones(in_tmp: Path) -> None:
    name = write(in_tmp / "s.jsonl", line(GOOD) + '{"id": "x", "turns": [], "status": "done"}\n' + "nonsense\n")
    seen = []
    with pytest.raises(DataError) as info:
        for _, t in read_traces(name, strict=True):
            seen.append(t.id)
    assert seen == ["t1"]
    assert str(info.value) == "s.jsonl:2: status: expected 'completed', 'failed' or 'partial', got 'done'"
    assert (info.value.source, info.value.line, info.value.field) == ("s.jsonl", 2, "status")


def test_nothing_is_dropped_silently(in_tmp: Path) -> None:
    bodies = [line(GOOD), "{bad json\n", "[1]\n", line({"id": "x"}), "\n", line({**GOOD, "id": "t5"}), "42\n",
              line({"id": "t7", "turns": [], "extra": 1}), line({**GOOD, "id": "t8"})]
    name = write(in_tmp / "mix.jsonl", "".join(bodies))
    out = read_all(name)
    non_blank = [i + 1 for i, b in enumerate(bodies) if b.strip()]
    assert sorted(int(loc.rsplit(":", 1)[1]) for loc, _ in out) == non_blank
    assert sum(isinstance(t, Trace) for _, t in out) == 3
    assert sum(isinstance(t, InputIssue) for _, t in out) == len(non_blank) - 3


def test_missing_file_and_directory_are_data_errors(in_tmp: Path) -> None:
    with pytest.raises(DataError, match="no such file"):
        read_all("nope.jsonl")
    (in_tmp / "d").mkdir()
    with pytest.raises(DataError, match="is a directory"):
        read_all("d")


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stdin:
        buffer = io.BufferedReader(io.BytesIO((line(GOOD) * 3).encode()))

    monkeypatch.setattr("sys.stdin", Stdin)
    assert [loc for loc, _ in read_traces("-")] == ["<stdin>:1", "<stdin>:2", "<stdin>:3"]


@pytest.mark.parametrize("kind", ["gzip", "bz2", "lzma", "zstd"])
def test_a_compressed_file_is_named_as_such_not_read_as_broken_lines(in_tmp: Path, kind: str) -> None:
    """``traces.jsonl.gz`` was read as one line of bad UTF-8 ("use --on-bad-text=replace", which would keep
    garbage); whatever the format named, the file is refused with how to read it, and nothing is scored."""
    import bz2
    import gzip
    import lzma

    data = (line(GOOD) * 3).encode()
    packed = {"gzip": gzip.compress, "bz2": bz2.compress, "lzma": lzma.compress,
              "zstd": lambda d: b"\x28\xb5\x2f\xfd" + d}[kind](data)  # (zstd: its magic is what is checked)
    path = in_tmp / "traces.jsonl.x"
    path.write_bytes(packed)
    tool = {"gzip": "gzip", "bz2": "bzip2", "lzma": "xz", "zstd": "zstd"}[kind]
    for fmt in (None, "assay"):
        with pytest.raises(DataError, match=rf"compressed; decompress it first \({tool} -dk .*traces.jsonl.x\)"):
            list(read_traces(str(path), input_format=fmt))


@pytest.mark.parametrize(("codec", "named"), [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16LE"), ("utf-16-be", "UTF-16BE"),
                                              ("utf-32", "UTF-32")])
def test_a_file_in_utf16_or_utf32_is_named_as_such(in_tmp: Path, codec: str, named: str) -> None:
    """A JSON Lines file saved as UTF-16 (Windows tools do) was 'not valid UTF-8: byte 0xff at column 1; use
    --on-bad-text=replace' and 'not valid JSON' on every line: now its encoding and the conversion to make."""
    path = in_tmp / "wide.jsonl"
    path.write_bytes((line(GOOD) * 2).encode(codec))
    with pytest.raises(DataError, match=rf"{named} text; assay reads UTF-8: convert it first \(iconv -f {named} -t UTF-8"):
        list(read_traces(str(path)))


def test_compressed_standard_input_says_to_decompress_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    class Stdin:
        buffer = io.BufferedReader(io.BytesIO(gzip.compress((line(GOOD) * 3).encode())))

    monkeypatch.setattr("sys.stdin", Stdin)
    with pytest.raises(DataError, match=r"<stdin>: gzip-compressed: pipe it through `gzip -dc` first"):
        list(read_traces("-"))


def test_a_distributed_run_refuses_a_compressed_file_too(in_tmp: Path) -> None:
    import gzip

    from assay.engine._shards import plan_shards

    path = in_tmp / "t.jsonl.gz"
    path.write_bytes(gzip.compress((line(GOOD) * 3).encode()))
    with pytest.raises(DataError, match="gzip-compressed"):
        plan_shards(str(path))


def test_a_distributed_run_refuses_a_pipe_by_name(in_tmp: Path) -> None:
    """`--executor dask <(cat t.jsonl)`: the workers open the path themselves, which a pipe cannot give them
    (it was "no such file", from a worker); refused before anything is read, the pipe left unopened."""
    from assay.engine._shards import plan_shards

    import threading

    fifo = in_tmp / "fifo"
    os.mkfifo(fifo)

    def writer() -> None:  # so that code which opens the pipe reads a trace instead of hanging
        try:
            with open(fifo, "w") as f:
                f.write(line(GOOD))
        except OSError:
            pass

    threading.Thread(target=writer, daemon=True).start()
    with pytest.raises(ConfigError, match=r"'.*fifo' is a pipe or a device .* save it to a file first"):
        plan_shards(str(fifo))
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # lets the writer's open return


# ---------------------------------------------------------------- round trip

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6)
_text = st.text(max_size=12)
_opt_text = st.none() | _text
_num = st.none() | st.floats(min_value=0, max_value=1e9, allow_nan=False)
_int = st.none() | st.integers(0, 2**40)
_args = st.dictionaries(st.text(max_size=5), _json, max_size=3)

_usage = st.none() | st.builds(Usage, input_tokens=_int, output_tokens=_int, total_tokens=_int, cost_usd=_num)
_expected_call = st.builds(ExpectedToolCall, name=_text, arguments=st.none() | _args, step=st.none() | st.integers(0, 50))
_call = st.builds(ToolCall, name=_text, arguments=_args, result=_json, error=_opt_text, timestamp=_opt_text,
                  duration_ms=_num, agent=_opt_text, id=_opt_text, step=st.none() | st.integers(0, 50))
_turn_expected = st.none() | st.builds(TurnExpected, output=_opt_text,
                                       tool_calls=st.none() | st.lists(_expected_call, max_size=2),
                                       tool_order=st.sampled_from([None, "strict", "any"]))
_turn = st.builds(Turn, input=_opt_text, output=_opt_text, tool_calls=st.lists(_call, max_size=2),
                  context=st.lists(_text, max_size=2), reasoning=_opt_text, latency_ms=_num, usage=_usage,
                  expected=_turn_expected, uses_tool_results=st.none() | st.booleans(), agent=_opt_text)
_expected = st.none() | st.builds(Expected, output=_opt_text, goal=_opt_text, success_criteria=st.lists(_text, max_size=2),
                                  role=_opt_text, instructions=_opt_text,
                                  tool_calls=st.none() | st.lists(_expected_call, max_size=2),
                                  tool_order=st.sampled_from(["strict", "any"]), turns=st.none() | st.integers(0, 20))
_handoff = st.builds(Handoff, from_agent=_text, to_agent=_text, kind=_text, message=_opt_text, timestamp=_opt_text)
_trace = st.builds(
    Trace, id=_text, task_id=_opt_text, trial=st.none() | st.integers(0, 100), system=_opt_text,
    turns=st.lists(_turn, max_size=3), expected=_expected,
    agents=st.dictionaries(_text, st.builds(AgentRun, turns=st.lists(_turn, max_size=2), usage=_usage, role=_opt_text),
                           max_size=2),
    handoffs=st.lists(_handoff, max_size=2), status=st.sampled_from([None, "completed", "failed", "partial"]),
    usage=_usage, latency_ms=_num, throughput_rps=_num,
    metadata=st.dictionaries(st.text(max_size=6), _json, max_size=3))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_trace)
def test_round_trip_through_json(trace: Trace) -> None:
    again = parse_trace(trace.model_dump_json(), "rt.jsonl", 1)
    assert again == trace


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_trace, min_size=1, max_size=4), st.booleans())
def test_round_trip_through_files(traces: list[Trace], as_array: bool) -> None:
    bodies = [t.model_dump_json() for t in traces]
    text = ("[\n" + ",\n".join(bodies) + "\n]") if as_array else "\n".join(bodies) + "\n"
    out = [t for _, t in read_native(io.BytesIO(text.encode()), "rt")]
    assert out == traces


def test_the_documented_example_is_a_valid_trace() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "trace-format.md").read_text()
    example = doc.split("```json\n", 1)[1].split("```", 1)[0]
    trace = parse_trace(example, "trace-format.md", None)
    assert isinstance(trace, Trace), str(trace)
    assert trace.handoffs[0].from_agent == "orchestrator" and trace.expected.tool_order == "strict"


def test_json_lines_whose_first_line_is_broken(in_tmp: Path) -> None:
    name = write(in_tmp / "t.jsonl", '{"id": "a", "turns": [\n' + line(GOOD) + line({**GOOD, "id": "t2"}))
    out = [str(x) if isinstance(x, InputIssue) else x.id for _, x in read_all(name, input_format="assay")]
    assert out == ["t.jsonl:1: not valid JSON: Expecting value at column 23", "t1", "t2"]
