"""Hostile input: each case is a located issue for the bad record only, and every good record is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.importers import Limits
from assay.importers._limits import depth_exceeds, loads
from assay.importers._stream import CHUNK
from assay.model import InputIssue, Trace

from ._helpers import read_all


def good(i: int) -> dict:
    return {"id": f"t{i}", "turns": [{"input": "hi", "output": "hello"}]}


def line(obj: object) -> str:
    return json.dumps(obj) + "\n"


def outcome(path: Path | str, **kwargs: object) -> list[str]:
    """Trace ids and issue texts in file order."""
    return [x.id if isinstance(x, Trace) else str(x) for _, x in read_all(path, **kwargs)]


DEEP = "[" * 10_000 + "]" * 10_000


@pytest.mark.parametrize("body, expected", [
    (line(good(1)) + '{"id": "d", "turns": [{"input": "x"}], "metadata": {"x": ' + DEEP + "}}\n" + line(good(2)),
     ["t1", "t.jsonl:2: nested deeper than 256 levels (the limit; see --max-depth)", "t2"]),
    (DEEP + "\n" + line(good(1)) + line(good(2)),
     ["t.jsonl:1: nested deeper than 256 levels (the limit; see --max-depth)", "t1", "t2"]),
    (line(good(1)) + '{"id": "d", "turns": [{"tool_calls": [{"name": "x", "result": ' + DEEP + "}]}]}\n",
     ["t1", "t.jsonl:2: nested deeper than 256 levels (the limit; see --max-depth)"]),
], ids=["metadata", "first-line-array", "tool-result"])
def test_deep_nesting_in_json_lines(in_tmp: Path, body: str, expected: list[str]) -> None:
    Path("t.jsonl").write_text(body)
    assert outcome("t.jsonl") == expected


def test_deep_array_file_and_deep_element(in_tmp: Path) -> None:
    Path("a.json").write_text(DEEP)
    assert outcome("a.json", input_format="assay") == ["a.json:1: nested deeper than 256 levels (the limit; see --max-depth)"]
    Path("b.json").write_text("[" + json.dumps(good(1)) + ",\n" + DEEP + ",\n" + json.dumps(good(2)) + "]")
    assert outcome("b.json") == ["t1", "b.json:2: nested deeper than 256 levels (the limit; see --max-depth)", "t2"]


def test_deep_value_in_an_unwrapped_document_names_the_case(in_tmp: Path) -> None:
    case = {"trace": {"messages": [{"role": "user", "content": "hi"}]}}
    Path("c.json").write_text('{"test_cases": [\n' + json.dumps(case)[:-1] + ', "x": ' + DEEP + "},\n"
                              + json.dumps(case) + "\n]}")
    out = outcome("c.json")
    assert out[0] == "c.json:2: test_cases[0]: nested deeper than 256 levels (the limit; see --max-depth)"
    assert len(out) == 2 and not out[1].startswith("c.json")


def test_the_depth_limit_is_exact_and_configurable(in_tmp: Path) -> None:
    def nested(d: int) -> dict:
        v: object = 1
        for _ in range(d - 2):
            v = [v]
        return {**good(1), "metadata": {"x": v}}  # the record is level 1, metadata level 2
    Path("ok.jsonl").write_text(line(nested(256)))
    Path("deep.jsonl").write_text(line(nested(257)))
    assert outcome("ok.jsonl") == ["t1"]
    assert outcome("deep.jsonl") == ["deep.jsonl:1: nested deeper than 256 levels (the limit; see --max-depth)"]
    assert outcome("deep.jsonl", limits=Limits(max_depth=300)) == ["t1"]
    with pytest.raises(ValueError, match="max_depth"):
        Limits(max_depth=100_000)


def test_depth_ignores_brackets_inside_strings() -> None:
    tricky = json.dumps({"a": ["[[[[" * 100, '\\"]]]]' * 100, {"b": "{" * 300}]})
    assert not depth_exceeds(tricky, 3) and depth_exceeds(tricky, 2)
    assert not depth_exceeds(tricky.encode(), 3)


@pytest.mark.parametrize("record, message", [
    ('{"id": "s\\ud800", "turns": [{"input": "x"}]}', "id: lone surrogate \\ud800 (not valid Unicode)"),
    ('{"id": "s", "turns": [{"input": "\\udc00x"}]}', "turns[0].input: lone surrogate \\udc00 (not valid Unicode)"),
    ('{"id": "k", "turns": [{"input": "x"}], "metadata": {"\\ud800": 1}}', 'metadata: key "\\ud800": lone surrogate \\ud800'),
], ids=["id", "text", "key"])
def test_lone_surrogates_are_rejected_with_their_place(in_tmp: Path, record: str, message: str) -> None:
    Path("s.jsonl").write_text(line(good(1)) + record + "\n" + line(good(2)))
    out = outcome("s.jsonl")
    assert out[0] == "t1" and out[2] == "t2"
    assert out[1].startswith(f"s.jsonl:2: {message}") and "--on-bad-text=replace" in out[1]


def test_on_bad_text_replace_keeps_the_record_with_replacement_characters(in_tmp: Path) -> None:
    Path("s.jsonl").write_bytes(b'{"id": "s\\ud800", "turns": [{"input": "x"}], "metadata": {"\\udfff": "\xff"}}\n')
    [(_, t)] = read_all("s.jsonl", limits=Limits(on_bad_text="replace"))
    assert isinstance(t, Trace) and t.id == "s\ufffd" and t.metadata == {"\ufffd": "\ufffd"}
    t.model_dump_json().encode("utf-8")  # writable: nothing unencodable got through


def test_a_valid_surrogate_pair_is_text(in_tmp: Path) -> None:
    Path("e.jsonl").write_text('{"id": "\\ud83d\\ude00", "turns": [{"input": "x"}]}\n')
    assert outcome("e.jsonl") == ["\U0001f600"]


def test_invalid_utf8_in_an_array_is_that_element_only(in_tmp: Path) -> None:
    Path("a.json").write_bytes(b"[" + json.dumps(good(1)).encode() + b',\n{"id": "b\xff", "turns": [{"input": "x"}]},\n'
                               + json.dumps(good(2)).encode() + b"]")
    assert outcome("a.json") == ["t1", "a.json:2: id: not valid UTF-8: byte 0xff; use --on-bad-text=replace to "
                                       "keep the record with U+FFFD", "t2"]
    assert outcome("a.json", limits=Limits(on_bad_text="replace"))[1] == "b\ufffd"


@pytest.mark.parametrize("first", [b"# a comment", b'"a bare string"', b'{"id": "\xff"}', DEEP.encode(),
                                   b"garbage\n{broken"], ids=["comment", "string", "bad-byte", "deep", "two-broken"])
def test_a_bad_first_line_loses_only_itself(in_tmp: Path, first: bytes) -> None:
    Path("t.jsonl").write_bytes(first + b"\n" + b"".join(line(good(i)).encode() for i in (1, 2, 3)))
    out = outcome("t.jsonl")
    bad = first.count(b"\n") + 1
    assert out[bad:] == ["t1", "t2", "t3"]
    assert [o.split(":")[:2] for o in out[:bad]] == [["t.jsonl", str(n)] for n in range(1, bad + 1)]


def test_a_header_record_of_no_format_does_not_hide_the_traces(in_tmp: Path) -> None:
    Path("t.jsonl").write_text(line({"comment": "exported by hand"}) + line(good(1)) + line(good(2)))
    out = outcome("t.jsonl")
    assert out[0].startswith("t.jsonl:1: comment: unknown field") and out[1:] == ["t1", "t2"]


def test_a_first_line_longer_than_a_chunk_then_a_bad_line(in_tmp: Path) -> None:
    big = {**good(0), "metadata": {"blob": "x" * (2 * CHUNK)}}
    Path("t.jsonl").write_text(line(big) + "{bad\n" + line(good(1)) + line(good(2)))
    assert outcome("t.jsonl") == ["t0", "t.jsonl:2: not valid JSON: Expecting property name enclosed in double "
                                        "quotes at column 2", "t1", "t2"]


def test_records_over_the_size_limits_are_skipped_not_held(in_tmp: Path) -> None:
    small = Limits(max_record_bytes=4000, max_string_bytes=1000)
    first = line({**good(0), "metadata": {"b": "x" * 5000}})
    Path("t.jsonl").write_text(first + line(good(1)) + line({**good(2), "metadata": {"b": "y" * 2000}}) + line(good(3)))
    assert outcome("t.jsonl", limits=small) == [
        f"t.jsonl:1: record is {len(first)} bytes, over the limit of 4000 bytes (see --max-record-mb)", "t1",
        "t.jsonl:3: metadata.b: a string of 2000 bytes, over the limit of 1000 bytes", "t3"]
    Path("a.json").write_text(json.dumps([{**good(0), "metadata": {"b": "x" * (3 * CHUNK)}}, good(1)], indent=1))
    out = outcome("a.json", limits=Limits(max_record_bytes=CHUNK, max_string_bytes=CHUNK))
    assert out[0].startswith("a.json:2: record is ") and out[1] == "t1"


def test_json_nested_in_strings_obeys_the_limits() -> None:
    with pytest.raises(ValueError, match="nested deeper"):
        loads(DEEP)
    with pytest.raises(ValueError, match="lone surrogate"):
        loads('{"a": "\\ud800"}')
    assert loads('{"a": "\\ud800"}', Limits(on_bad_text="replace")) == {"a": "\ufffd"}


def test_tool_arguments_as_a_json_string_cannot_smuggle_a_surrogate(in_tmp: Path) -> None:
    def trace(arguments: str) -> dict:
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
        return {"id": "m", "messages": [{"role": "user", "content": "hi"},
                                        {"role": "assistant", "content": None, "tool_calls": [call]}]}
    Path("m.jsonl").write_text(line(trace('{"q": "\\ud800"}')) + line(trace("[" * 1000 + "]" * 1000)))
    out = outcome("m.jsonl")
    assert out[0].startswith("m.jsonl:1: messages[1].tool_calls[0].function.arguments: lone surrogate \\ud800")
    assert out[1].startswith("m.jsonl:2: messages[1].tool_calls[0].function.arguments: nested deeper than 256")
    [(_, t)] = read_all("m.jsonl", limits=Limits(on_bad_text="replace"))[:1]
    assert isinstance(t, Trace) and t.turns[0].tool_calls[0].arguments == {"q": "\ufffd"}


def test_crlf_bom_and_blank_lines(in_tmp: Path) -> None:
    Path("t.jsonl").write_bytes(b"\xef\xbb\xbf" + line(good(1)).encode().replace(b"\n", b"\r\n") + b"\r\n\r\n"
                                + line(good(2)).encode().replace(b"\n", b"\r\n"))
    assert outcome("t.jsonl") == ["t1", "t2"]
    Path("e.jsonl").write_bytes(b"")
    assert outcome("e.jsonl") == []


def test_cr_only_line_endings_are_lines(in_tmp: Path) -> None:
    """Old Mac line endings (CR alone): every record read, issues on the right line, past a chunk too."""
    many = [good(i) for i in range(CHUNK // 40)]  # over one CHUNK
    Path("t.jsonl").write_bytes("".join(line(g) for g in many[:2]).replace("\n", "\r").encode() + b"not json\r"
                                + "".join(line(g) for g in many[2:]).replace("\n", "\r").encode())
    out = outcome("t.jsonl")
    assert out[:2] == ["t0", "t1"] and out[2].startswith("t.jsonl:3: not valid JSON")
    assert out[3:] == [g["id"] for g in many[2:]]
    Path("a.json").write_bytes(json.dumps([good(1), good(2)], indent=2).replace("\n", "\r").encode())
    assert outcome("a.json") == ["t1", "t2"]
    Path("b.jsonl").write_bytes(b"\xef\xbb\xbf" + line(good(1)).replace("\n", "\r").encode())
    assert outcome("b.jsonl") == ["t1"]


def test_every_issue_is_an_input_issue_with_a_line(in_tmp: Path) -> None:
    Path("t.jsonl").write_bytes(b"\n".join([b"x", DEEP.encode(), b'{"id": "\\ud800"}', b"\xff", b"[1]", b"null"]))
    issues = [x for _, x in read_all("t.jsonl", input_format="assay")]
    assert all(isinstance(x, InputIssue) and x.line is not None for x in issues) and len(issues) == 6
