"""assay's own trace format: JSON Lines, or one JSON array, of trace objects.

Files are streamed: JSONL line by line, arrays element by element, so memory stays flat on
files of any size. Each element yields a Trace or an InputIssue naming file, line and field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO

from ..model import InputIssue, Trace, TraceValidationError

Record = tuple[str, "Trace | InputIssue"]

_CHUNK = 1 << 20


def parse_trace(text: str | bytes, source: str, line: int | None) -> Trace | InputIssue:
    """Validate one JSON document as a Trace; failures become an InputIssue."""
    try:
        return Trace.model_validate_json(text)
    except TraceValidationError as exc:
        if exc.message.startswith("not valid JSON"):
            try:  # let the stdlib say where, in its words
                json.loads(text)
            except json.JSONDecodeError as jexc:
                return InputIssue(source, line, None, f"not valid JSON: {jexc.msg} at column {jexc.colno}")
        if not exc.path and exc.message.startswith("expected an object"):
            return InputIssue(source, line, None, f"expected a trace object{exc.message[18:]}")
        return InputIssue(source, line, exc.path or None, exc.message)


def read_jsonl(stream: IO[bytes], source: str) -> Iterator[Record]:
    for lineno, raw in enumerate(stream, 1):
        if not raw.strip():
            continue
        yield f"{source}:{lineno}", parse_trace(raw, source, lineno)


def read_json_array(stream: IO[bytes], source: str) -> Iterator[Record]:
    """Stream the elements of a top-level JSON array without loading the file."""
    decoder = json.JSONDecoder()
    buf, pos, line, eof = "", 0, 1, False
    text_stream = _decode(stream)

    def fill() -> bool:
        nonlocal buf, pos, eof
        chunk = next(text_stream, "")
        if not chunk:
            eof = True
            return False
        buf, pos = buf[pos:] + chunk, 0
        return True

    def skip_ws() -> None:
        nonlocal pos, line
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                line += buf[pos] == "\n"
                pos += 1
            if pos < len(buf) or not fill():
                return

    skip_ws()
    if buf[pos:pos + 1] != "[":
        raise ValueError("expected a JSON array")
    pos += 1
    index = 0
    while True:
        skip_ws()
        if pos >= len(buf):
            yield f"{source}:{line}", InputIssue(source, line, None, "not valid JSON: unterminated array")
            return
        if buf[pos] == "]":
            return
        if index and buf[pos] == ",":
            pos += 1
            skip_ws()
        while True:
            try:
                obj, end = decoder.raw_decode(buf, pos)
                break
            except json.JSONDecodeError as exc:
                if eof or not fill():
                    yield f"{source}:{line}", InputIssue(source, line, f"[{index}]", f"not valid JSON: {exc.msg}")
                    return
        start_line = line
        line += buf.count("\n", pos, end)
        pos = end
        yield f"{source}:{start_line}", _from_obj(obj, source, start_line, index)
        index += 1


def _from_obj(obj: object, source: str, line: int, index: int) -> Trace | InputIssue:
    if not isinstance(obj, dict):
        from ._errors import json_type
        return InputIssue(source, line, f"[{index}]", f"expected a trace object, got {json_type(obj)}")
    try:
        return Trace.model_validate(obj)
    except TraceValidationError as exc:
        return InputIssue(source, line, exc.path or None, exc.message)


def _decode(stream: IO[bytes]) -> Iterator[str]:
    import codecs
    dec = codecs.getincrementaldecoder("utf-8-sig")()
    while chunk := stream.read(_CHUNK):
        yield dec.decode(chunk)
    tail = dec.decode(b"", final=True)
    if tail:
        yield tail
