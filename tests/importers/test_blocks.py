"""The native reader takes a chunk's whole lines at once when they all pass the per-line checks
(``_stream.Lines``); what it reads must be what reading line by line gives, record for record,
wherever the chunks are cut and whatever the lines hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.importers import Limits, read_traces
from assay.importers import _native, _stream


def _line(i: int) -> bytes:
    return json.dumps({"id": f"t{i}", "turns": [{"input": f"question {i}", "output": "answer",
                                                 "tool_calls": [{"name": "f", "arguments": {"a": [i, {"b": i}]}}]}]},
                      separators=(",", ":")).encode()


ODD = [
    b"",  # blank
    b"   \t",  # white space only
    b'[{"id":"l1","turns":[{"input":"a","output":"b"}]},{"id":"l2","turns":[{"input":"c","output":"d"}]}]',
    b"not json",
    b"42",
    b'{"id":"two","turns":[{"input":"a","output":"b"}]} {"id":"three","turns":[]}',  # two values on a line
    b'{"id":"open","turns":[',  # cut
    b'{"id":"deep","turns":[{"input":"a","output":"b","metadata":' + b'{"x":' * 12 + b"1" + b"}" * 12 + b"}]}",
    b'{"id":"wide","turns":[{"input":"a","output":"b"}],"metadata":{"k":[[1],[2],[3],[4],[5],[6],[7]]}}',
    b'{"id":"surrogate","turns":[{"input":"\\ud800","output":"b"}]}',
    b'{"id":"bad-utf8","turns":[{"input":"\xff","output":"b"}]}',
    b'{"id":"bad-field","turns":"nope"}',
    b'{"id":"empty","turns":[]}',
    b'{"id":"big","turns":[{"input":"' + b"x" * 3000 + b'","output":"b"}]}',  # over max_record_bytes below
    b'{"id":"crlf","turns":[{"input":"a","output":"b"}]}\r',
    b'  {"id":"indented","turns":[{"input":"a","output":"b"}]}',
    b'{"id":"t5","turns":[{"input":"a duplicate id","output":"b"}]}',
]


def _file(tmp_path: Path, seed: int) -> Path:
    lines = [_line(i) for i in range(1500)]
    for k, odd in enumerate(ODD):  # spread through the file, past the first chunk too
        lines.insert(40 + k * 15 + seed % 7, odd)
    path = tmp_path / f"traces-{seed}.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if seed % 2 else b""))  # with and without a last newline
    return path


def _per_line(monkeypatch: pytest.MonkeyPatch, path: Path, limits: Limits) -> list:
    real = _native.iter_values
    with monkeypatch.context() as m:
        m.setattr(_native, "iter_values", lambda stream, source, **kw: real(stream, source, **{**kw, "raw_lines": True}))
        return list(read_traces(path, limits=limits))


@pytest.mark.parametrize("chunk", [61, 256, 1000, 4096, 1 << 20])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lines_read_a_chunk_at_a_time_are_the_lines_read_one_by_one(tmp_path, monkeypatch, chunk, seed):
    path = _file(tmp_path, seed)
    limits = Limits(max_depth=10, max_record_bytes=2500)
    monkeypatch.setattr(_stream, "CHUNK", chunk)
    blocks = []
    real = _stream.Lines.__init__

    def seen(self, data, line, n, end=None):  # count the blocks taken at once: the test must exercise them
        blocks.append(n)
        real(self, data, line, n, end)

    monkeypatch.setattr(_stream.Lines, "__init__", seen)
    with pytest.warns(Warning):  # the duplicate id
        got = list(read_traces(path, limits=limits))
    with pytest.warns(Warning):
        want = _per_line(monkeypatch, path, limits)
    assert got == want
    assert sum(1 for _, item in got if type(item).__name__ == "Trace") >= 1500
    assert sum(1 for _, item in got if type(item).__name__ != "Trace") >= 10  # the odd lines' issues
    if chunk < 1 << 20:
        assert sum(blocks) > 100  # most lines came in blocks


def test_lines_give_their_lines_one_at_a_time():
    data = b'{"a":1}\n\n  \n{"b":2}\n{"c"'
    assert list(_stream.Lines(data, 7, 4, data.rfind(b"\n") + 1).lines()) == \
        [(7, b'{"a":1}'), (8, b""), (9, b"  "), (10, b'{"b":2}')]
