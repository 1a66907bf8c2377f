"""Stream JSON values out of a file: JSON Lines, one top-level array, or whole documents.

The shape is told from the first lines: a first line that is complete JSON followed by more
content means JSON Lines (one value a line, read line by line); a file opening with ``[`` is
an array whose elements are streamed one at a time; anything else is a sequence of documents
(usually one pretty-printed object), each decoded whole, except that the array under one of
the ``unwrap`` keys (``{"test_cases": [...]}``) is streamed element by element.

Memory stays flat for JSON Lines and arrays; a document is held in memory while it is read.
Problems become InputIssues with file, line and, where known, column: a bad line is skipped and
reading goes on; a syntax error inside an array or a document ends the reading of that file,
because JSON cannot be resynchronised, and the issue says so.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import IO, Any

from ..model import InputIssue

CHUNK = 1 << 20
_WS = " \t\r\n"
_BOM = b"\xef\xbb\xbf"
_TAIL = 8
"""A decode error this close to the end of the buffer may only mean 'read more'."""


@dataclass(frozen=True, slots=True)
class Value:
    """One JSON value read from a file and where it started."""

    value: Any
    line: int
    path: str = ""
    """'' for a line or a document, '[3]' for an array element, 'test_cases[3]' when unwrapped."""
    mode: str = "lines"
    """'lines', 'array' or 'document'."""
    key: str | None = None
    """The unwrapped key this element came from, if any."""


class _Stop(Exception):
    """A syntax error after which the rest of the file cannot be read."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line, self.message = line, message


def byte_chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while chunk := stream.read(CHUNK):
        yield chunk


def iter_values(stream: IO[bytes] | Iterable[bytes], source: str, *, unwrap: tuple[str, ...] = (),
                raw_lines: bool = False) -> Iterator[Value | InputIssue]:
    """Yield every JSON value of the file, or an InputIssue where one cannot be read.

    With ``raw_lines`` a JSON Lines file yields each line's bytes undecoded (the native reader
    validates them straight from bytes).
    """
    chunks = byte_chunks(stream) if hasattr(stream, "read") else iter(stream)  # type: ignore[arg-type]
    mode, head = _sniff_mode(chunks)
    chunks = chain([head], chunks)
    if mode == "empty":
        return
    if mode == "lines":
        yield from _iter_lines(chunks, source, raw_lines)
    else:
        yield from _iter_text(chunks, source, mode, unwrap)


def _sniff_mode(chunks: Iterator[bytes]) -> tuple[str, bytes]:
    """Read enough of the file to see its first two non-blank lines; return the mode and the bytes read."""
    parts: list[bytes] = []
    data = b""
    while len(data) < CHUNK:  # a longer first line is read as a document: same values, same lines
        stripped = data.lstrip(_BOM).lstrip(b" \t\r\n")
        nl = stripped.find(b"\n")
        if nl >= 0 and b"\n" in stripped[nl + 1:].lstrip(b" \t\r\n"):
            break  # the first two non-blank lines are in
        chunk = next(chunks, b"")
        if not chunk:
            break
        parts.append(chunk)
        data = b"".join(parts)
    stripped = data.lstrip(_BOM).lstrip(b" \t\r\n")
    if not stripped:
        return "empty", data
    first, _, rest = stripped.partition(b"\n")
    rest = rest.lstrip(b" \t\r\n")
    opener = stripped[:1]
    if _complete(first):
        return ("array" if opener == b"[" and not rest else "lines"), data
    if opener == b"{" and rest[:1] == b"{" and _complete(rest.partition(b"\n")[0]):
        return "lines", data  # JSON Lines whose first line is broken
    return ("array" if opener == b"[" else "document"), data


def _complete(line: bytes) -> bool:
    try:
        json.loads(line.decode("utf-8"))
        return True
    except (ValueError, UnicodeDecodeError):
        return False


def _iter_lines(chunks: Iterator[bytes], source: str, raw: bool) -> Iterator[Value | InputIssue]:
    for lineno, line in enumerate(_split_lines(chunks), 1):
        if lineno == 1 and line.startswith(_BOM):
            line = line[len(_BOM):]
        line = line.rstrip(b"\r\n")  # so that an error at the end of the line gets its column
        if not line.strip():
            continue
        if raw:
            yield Value(line, lineno)
            continue
        parsed = parse_line(line, source, lineno)
        yield parsed if isinstance(parsed, InputIssue) else Value(parsed, lineno)


def parse_line(line: bytes, source: str, lineno: int) -> Any:
    """One JSON Lines line as a Python value, or an InputIssue saying why not."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return InputIssue(source, lineno, None, f"not valid UTF-8: byte 0x{line[exc.start]:02x} at column {exc.start + 1}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return InputIssue(source, lineno, None, f"not valid JSON: {exc.msg} at column {exc.colno}")


def _split_lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    parts: list[bytes] = []
    for chunk in chunks:
        start = 0
        while (nl := chunk.find(b"\n", start)) >= 0:
            parts.append(chunk[start:nl + 1])
            yield b"".join(parts)
            parts, start = [], nl + 1
        if start < len(chunk):
            parts.append(chunk[start:])
    if parts:
        yield b"".join(parts)


class _Text:
    """A text buffer over byte chunks that knows the line and column of every position."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.buf, self.pos, self.line, self.col0, self.eof = "", 0, 1, 0, False
        self._broken: _Stop | None = None

    def fill(self) -> bool:
        """Append the next chunk; False at end of file."""
        if self.eof and self._broken is not None:
            raise self._broken
        while not self.eof:
            chunk = next(self._chunks, None)
            try:
                text = self._decoder.decode(chunk or b"", final=chunk is None)
            except UnicodeDecodeError as exc:
                # keep the valid text before the bad byte; the error comes when it is used up
                text = self._decoder.decode(exc.object[:exc.start]) if chunk is not None else ""
                bad = exc.object[exc.start]
                self._broken = _Stop(0, f"not valid UTF-8 (byte 0x{bad:02x})")
                chunk = None
            if chunk is None:
                self.eof = True
                if self._broken is not None:
                    self._broken.line = self.line + self.buf.count("\n", self.pos) + text.count("\n")
                    if not text:
                        raise self._broken
            if text:
                dropped = self.buf[:self.pos]
                nl = dropped.rfind("\n")
                self.col0 = len(dropped) - nl - 1 if nl >= 0 else self.col0 + len(dropped)
                self.buf, self.pos = self.buf[self.pos:] + text, 0
                return True
        return False

    def column(self, p: int) -> int:
        nl = self.buf.rfind("\n", 0, p)
        return p - nl if nl >= 0 else self.col0 + p + 1

    def line_at(self, p: int) -> int:
        return self.line + self.buf.count("\n", self.pos, p)

    def advance(self, to: int) -> None:
        self.line += self.buf.count("\n", self.pos, to)
        self.pos = to

    def peek(self) -> str:
        """The next non-whitespace character ('' at end of file), skipping to it."""
        while True:
            buf, p = self.buf, self.pos
            n = len(buf)
            while p < n and buf[p] in _WS:
                p += 1
            self.advance(p)
            if p < n or not self.fill():
                return self.buf[self.pos:self.pos + 1]

    def value(self, decoder: json.JSONDecoder = json.JSONDecoder()) -> Any:
        """Decode the value at the current position (after whitespace)."""
        self.peek()
        while True:
            try:
                obj, end = decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                truncated = exc.pos >= len(self.buf) - _TAIL or exc.msg.startswith("Unterminated string")
                if truncated and self.fill():
                    continue
                raise _Stop(self.line_at(exc.pos), f"not valid JSON: {exc.msg} at column {self.column(exc.pos)}") from None
            if end >= len(self.buf) and not isinstance(obj, (dict, list, str)) and self.fill():
                continue  # a number or literal cut by the chunk boundary
            self.advance(end)
            return obj

    def expect(self, chars: str, what: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            got = repr(c) if c else "end of file"
            raise _Stop(self.line, f"not valid JSON: expected {what}, got {got} at column {self.column(self.pos)}")
        self.advance(self.pos + 1)
        return c


def _iter_text(chunks: Iterator[bytes], source: str, mode: str, unwrap: tuple[str, ...]) -> Iterator[Value | InputIssue]:
    text = _Text(chunks)
    try:
        if mode == "array":
            yield from _array(text, "", None, "array")
            if text.peek():
                raise _Stop(text.line, f"not valid JSON: unexpected {text.peek()!r} after the array at column "
                                       f"{text.column(text.pos)}")
            return
        while text.peek():
            start = text.line
            if text.peek() == "{" and unwrap:
                yield from _object(text, unwrap)
            else:
                yield Value(text.value(), start, "", "document")
    except _Stop as stop:
        yield InputIssue(source, stop.line, None, f"{stop.message}; reading stopped here")


def _array(text: _Text, prefix: str, key: str | None, mode: str) -> Iterator[Value]:
    text.expect("[", "'['")
    index = 0
    if text.peek() == "]":
        text.advance(text.pos + 1)
        return
    while True:
        text.peek()
        line = text.line
        yield Value(text.value(), line, f"{prefix}[{index}]", mode, key)
        index += 1
        if text.expect(",]", "',' or ']'") == "]":
            return


def _object(text: _Text, unwrap: tuple[str, ...]) -> Iterator[Value]:
    """Stream the arrays under ``unwrap`` keys; an object without them is yielded whole."""
    start = text.line
    text.expect("{", "'{'")
    rest: dict[str, Any] = {}
    found = False
    if text.peek() == "}":
        text.advance(text.pos + 1)
        yield Value(rest, start, "", "document")
        return
    while True:
        if text.peek() != '"':
            text.expect('"', "a property name")
        key = text.value()
        text.expect(":", "':'")
        if key in unwrap and text.peek() == "[":
            found = True
            yield from _array(text, key, key, "document")
        else:
            rest[key] = text.value()
        if text.expect(",}", "',' or '}'") == "}":
            break
    if not found:
        yield Value(rest, start, "", "document")
