"""assay's own trace format: JSON Lines, one JSON array, or pretty-printed JSON objects.

Files are streamed: JSON Lines line by line, arrays element by element, so memory stays flat on
files of any size (a pretty-printed object is held while it is read). Each record yields a Trace
or an InputIssue naming file, line and field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import IO, Any

import msgspec

from ..model import InputIssue, Trace, TraceValidationError
from ..model._trace import _decoder
from ._errors import json_type
from ._limits import RecordError, check_value, current, reject_constant, too_deep
from ._sniff import inspect
from ._stream import Lines, iter_values, parse_line

Record = tuple[str, "Trace | InputIssue"]

_BOM = b"\xef\xbb\xbf"
_ANTHROPIC = re.compile(r'"type"\s*:\s*"(?:tool_use|tool_result)"')
"""Anthropic content blocks: messages the native reader would read without their tool calls."""
TRACE_KEYS = frozenset(Trace.__struct_encode_fields__)
"""The top-level fields of a trace."""


def parse_trace(text: str | bytes, source: str, line: int | None) -> Trace | InputIssue:
    """Validate one JSON document as a Trace; failures become an InputIssue."""
    if isinstance(text, bytes) and text.startswith(_BOM):
        text = text[len(_BOM):]
    elif isinstance(text, str) and text.startswith("\ufeff"):
        text = text[1:]
    try:
        return Trace.model_validate_json(text)
    except RecursionError:
        return InputIssue(source, line, None, too_deep(current()).message)
    except TraceValidationError as exc:
        if exc.message.startswith("not valid JSON"):
            try:  # let the stdlib say where, in its words, and the text check what and where
                # (bytes decoded as UTF-8 here: json.loads would guess UTF-16 or UTF-32 from NUL bytes and name
                # a byte and column of that guess as the UTF-8 error)
                value = json.loads(text.decode("utf-8") if isinstance(text, bytes) else text,
                                   parse_constant=reject_constant)
            except RecordError as rexc:
                return InputIssue(source, line, None, rexc.message)
            except RecursionError:
                return InputIssue(source, line, None, too_deep(current()).message)
            except UnicodeDecodeError as uexc:
                return InputIssue(source, line, None,
                                  f"not valid UTF-8: byte 0x{uexc.object[uexc.start]:02x} at column {uexc.start + 1}; "
                                  "use --on-bad-text=replace to keep the record with U+FFFD")
            except json.JSONDecodeError as jexc:
                return InputIssue(source, line, None, f"not valid JSON: {jexc.msg} at column {jexc.colno}")
            try:  # the stdlib accepts what msgspec refused: a lone surrogate
                value = check_value(value, current())
            except RecordError as rexc:
                return InputIssue(source, line, rexc.field, rexc.message)
            return trace_from_value(value, source, line)
        return _issue(exc, source, line, (b'"messages"' if isinstance(text, bytes) else '"messages"') in text)


def _issue(exc: TraceValidationError, source: str, line: int | None, chat: bool = False) -> InputIssue:
    if not exc.path and exc.message.startswith("expected an object"):
        return InputIssue(source, line, None, "expected a trace object" + exc.message[len("expected an object"):])
    if chat and exc.path == "id" and exc.message == "required field is missing":
        return InputIssue(source, line, "id", "required field is missing (chat records without ids are read by "
                                              "--input-format openai, or without --input-format)")
    return InputIssue(source, line, exc.path or None, exc.message)


def trace_from_value(obj: Any, source: str, line: int | None) -> Trace | InputIssue:
    """Validate an already decoded JSON value as a Trace."""
    if not isinstance(obj, dict):
        return InputIssue(source, line, None, f"expected a trace object, got {json_type(obj)}")
    try:
        return Trace.model_validate(obj)
    except TraceValidationError as exc:
        return _issue(exc, source, line, "messages" in obj)


def read_native(stream: IO[bytes], source: str) -> Iterator[Record]:
    """Every trace of a native file, in whichever of the three shapes it comes."""
    decode = _decoder(Trace).decode
    for item in iter_values(stream, source, raw_lines="blocks"):
        if type(item) is Lines:  # a chunk's whole lines, all within the limits: as the tuples below, at once
            data, start, end = item.data, 0, item.end
            for lineno in range(item.line, item.line + item.n):  # (Lines.lines, inlined: one line at a time)
                nl = data.find(b"\n", start, end)
                line = data[start:nl]
                start = nl + 1
                if line[:1] == b"{":
                    try:
                        trace = decode(line)
                    except (msgspec.MsgspecError, RecursionError):
                        trace = parse_trace(line, source, lineno)
                    yield f"{source}:{lineno}", trace
                elif line and not line.isspace():
                    yield from _other_line(line, source, lineno)
        elif type(item) is tuple:  # a JSON Lines line that passed the cheap checks, undecoded
            lineno, line = item
            if line[:1] == b"{":  # the usual record: decoded here, any failure explained by parse_trace
                try:
                    trace = decode(line)
                except (msgspec.MsgspecError, RecursionError):
                    trace = parse_trace(line, source, lineno)
                yield f"{source}:{lineno}", trace
            else:
                yield from _other_line(line, source, lineno)
        elif isinstance(item, InputIssue):
            yield f"{source}:{item.line}", item
        elif item.mode == "lines" and isinstance(item.value, list):  # decoded by the text checks
            yield from _list_elements(item.value, source, item.line)
        else:
            yield f"{source}:{item.line}", trace_from_value(item.value, source, item.line)


def _other_line(line: bytes, source: str, lineno: int) -> Iterator[Record]:
    """A JSON Lines line that does not open with ``{``: a list of traces, or whatever it is, explained."""
    if line.lstrip(b"\xef\xbb\xbf \t")[:1] == b"[":
        yield from _list_line(line, source, lineno)
    else:
        yield f"{source}:{lineno}", parse_trace(line, source, lineno)


def _list_line(line: bytes, source: str, lineno: int) -> Iterator[Record]:
    """A JSON Lines line holding a list of traces: each element is one trace (or issue)."""
    value = parse_line(line, source, lineno)
    if isinstance(value, InputIssue):
        yield f"{source}:{lineno}", value
        return
    yield from _list_elements(value, source, lineno)


def _list_elements(value: list[Any], source: str, lineno: int) -> Iterator[Record]:
    loc = f"{source}:{lineno}"
    if not any(isinstance(v, dict) for v in value):  # not a list of records: one issue for the line
        yield loc, InputIssue(source, lineno, None, "expected a trace object, got array" + ("" if value else " (empty)"))
        return
    for i, element in enumerate(value):
        item = trace_from_value(element, source, lineno)
        if isinstance(item, InputIssue):
            item = InputIssue(source, lineno, f"[{i}]" + (f".{item.field}" if item.field else ""), item.message)
        yield loc, item


read_jsonl = read_native
read_json_array = read_native
"""Kept for callers of the first version: the shape is now told from the content."""


def sniff_native(head: bytes, filename: str) -> bool:
    """A trace object: 'id' and 'turns' (or OpenAI 'messages' with roles), only trace fields."""
    h = inspect(head)
    rec = h.record
    if h.container == "array" and isinstance(rec, list):
        return False
    keys = h.keys
    if "id" not in keys or not keys <= TRACE_KEYS:
        return False
    if not ({"turns", "messages"} & keys) and h.complete:
        return False  # (when the first record is cut, 'turns' may come after the head)
    if isinstance(rec, dict) and isinstance(rec.get("messages"), list) and rec["messages"]:
        first = rec["messages"][0]
        return isinstance(first, dict) and "role" in first and not _ANTHROPIC.search(h.text)
    return True


__all__ = ["Record", "parse_trace", "read_native", "sniff_native", "trace_from_value"]
