"""Stream JSON values out of a file: JSON Lines, one top-level array, or whole documents.

The shape is told from the first lines: a first line that is complete JSON followed by more
content means JSON Lines (one value a line, read line by line); a head whose first line is not
whole but which parses on as one value (whatever its indentation) is a document; a file opening
with ``[`` is an array whose elements are streamed one at a time; anything else is a sequence of documents
(usually one pretty-printed object), each decoded whole, except that the array under one of
the ``unwrap`` keys (``{"test_cases": [...]}``) is streamed element by element.

A first line that cannot be read (a comment, a bad byte, a cut record) does not decide the
shape: when a later line holds a whole object or array, the file is JSON Lines.

Memory stays flat for JSON Lines and arrays; a document is held in memory while it is read.
Every value passes the record limits and text checks of ``_limits`` (nesting depth, record and
string size, invalid UTF-8, lone surrogates); a value that fails them is an InputIssue for that
record only. Reading time is linear in the file size, whatever the length of a line.
Problems become InputIssues with file, line and, where known, column: a bad line is skipped and
reading goes on; a syntax error inside an array or a document ends the reading of that file,
because JSON cannot be resynchronised, and the issue says so.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import IO, Any

from ..model import InputIssue
from . import _limits
from ._limits import Limits, RecordError, check_value, decode_text, depth_exceeds
from ._sniff import broken_line, later_lines, scan_keys, structural_first_line

CHUNK = 1 << 20
_WS = " \t\r\n"
_BOM = b"\xef\xbb\xbf"
_TAIL = 8
"""A decode error this close to the end of the buffer may only mean 'read more'."""


class Value:
    """One JSON value read from a file and where it started (a plain slotted class: one per record,
    and a frozen dataclass costs four times as much to make)."""

    __slots__ = ("value", "line", "path", "mode", "key")

    def __init__(self, value: Any, line: int, path: str = "", mode: str = "lines", key: str | None = None) -> None:
        self.value = value
        self.line = line
        self.path = path
        """'' for a line or a document, '[3]' for an array element, 'test_cases[3]' when unwrapped."""
        self.mode = mode
        """'lines', 'array' or 'document'."""
        self.key = key
        """The unwrapped key this element came from, if any."""

    def __repr__(self) -> str:
        return f"Value(value={self.value!r}, line={self.line!r}, path={self.path!r}, mode={self.mode!r}, key={self.key!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not Value:
            return NotImplemented
        return (self.value, self.line, self.path, self.mode, self.key) == (other.value, other.line, other.path,
                                                                           other.mode, other.key)

    __hash__ = None  # type: ignore[assignment]


class Lines:
    """Whole JSON Lines lines read at once (``iter_values(..., raw_lines="blocks")``): ``n`` lines from line
    ``line`` on, each ending with ``\\n``, none with ``\\r``, none longer than the string and record limits,
    none with more brackets than the depth limit: what the per-line checks of ``raw_lines`` pass, checked
    a chunk at a time. The reader takes each line as ``raw_lines`` gives it (blank ones are skipped)."""

    __slots__ = ("data", "line", "n", "end")

    def __init__(self, data: bytes, line: int, n: int, end: int | None = None) -> None:
        self.data, self.line, self.n = data, line, n
        self.end = len(data) if end is None else end
        """The lines are ``data[:end]`` (what follows is the start of a later line)."""

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """``(line number, line without its newline)``, one at a time (one line held, not the chunk's list)."""
        data, start, end = self.data, 0, self.end
        for lineno in range(self.line, self.line + self.n):
            nl = data.find(b"\n", start, end)
            yield lineno, data[start:nl]
            start = nl + 1


class _Stop(Exception):
    """A syntax error after which the rest of the file cannot be read."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line, self.message = line, message


def byte_chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while chunk := stream.read(CHUNK):
        yield chunk


def iter_values(stream: IO[bytes] | Iterable[bytes], source: str, *, unwrap: tuple[str, ...] = (),
                raw_lines: bool | str = False, limits: Limits | None = None) -> Iterator[Any]:
    """Yield every JSON value of the file, or an InputIssue where one cannot be read.

    With ``raw_lines`` a JSON Lines file yields each line that the cheap checks show is within the
    limits as a plain ``(line number, bytes)`` tuple, undecoded (the native reader validates it
    straight from bytes; no Value per record); other lines come decoded. With ``raw_lines="blocks"``
    a chunk's whole lines come as one ``Lines`` when they all pass those checks (checked for the
    chunk at once), else line by line as with ``raw_lines``. ``limits`` defaults to
    those set by ``reading_limits``.
    """
    limits = limits or _limits.current()
    chunks = byte_chunks(stream) if hasattr(stream, "read") else iter(stream)  # type: ignore[arg-type]
    mode, head = _sniff_mode(chunks, unwrap)
    if b"\r" in head and b"\n" not in head:  # CR alone ends each line (old Mac files): read it as LF
        chunks = (chunk.replace(b"\r", b"\n") for chunk in chain([head], chunks))  # (JSON has no raw CR in strings)
        mode, head = _sniff_mode(chunks, unwrap)
    chunks = chain([head], chunks)
    if mode == "empty":
        return
    if mode == "lines":
        yield from _iter_lines(chunks, source, raw_lines, limits)
    else:
        yield from _iter_text(chunks, source, mode, unwrap, limits)


def _sniff_mode(chunks: Iterator[bytes], unwrap: tuple[str, ...] = ()) -> tuple[str, bytes]:
    """Read enough of the file to see its first lines; return the mode and the bytes read.

    A first line longer than CHUNK is a JSON Lines record (a one-line document reads the same
    way) unless it opens an array, or an object holding one of the ``unwrap`` arrays.
    """
    parts: list[bytes] = []
    data = b""
    eof = False
    while len(data) < CHUNK:
        stripped = data.lstrip(_BOM).lstrip(b" \t\r\n")
        at = stripped.find(b"\n")
        if at >= 0 and stripped.count(b"\n", at + 1) >= 8:
            break  # enough lines to see the shape
        chunk = next(chunks, b"")
        if not chunk:
            eof = True
            break
        parts.append(chunk)
        data = b"".join(parts)
    stripped = data.lstrip(_BOM).lstrip(b" \t\r\n")
    if not stripped:
        return "empty", data
    opener = stripped[:1]
    first, nl, rest = stripped.partition(b"\n")
    if not nl:  # the first line is all there is, or longer than CHUNK
        if opener == b"[":
            return "array", data
        if opener == b"{" and unwrap and len(data) >= CHUNK and \
                scan_keys(stripped[:1 << 16].decode("utf-8", "replace"), 0) & set(unwrap):
            return "document", data
        return "lines", data
    if not rest.strip(b" \t\r\n"):
        return ("array" if opener == b"[" and _complete(first) else "lines"), data
    if _complete(first) or opener not in (b"{", b"["):
        return "lines", data  # (no JSON document of records opens with anything else)
    if _one_value(stripped, eof):
        return ("array" if opener == b"[" else "document"), data  # decided by parsing, whatever the layout
    if not structural_first_line(first) and later_lines(stripped):
        return "lines", data  # JSON Lines whose first line is broken
    if broken_line(first.decode("utf-8", "surrogateescape")):
        return "lines", data  # broken before its end: a bad line, not a pretty-printed document's first
    second = next((x.rstrip(b"\r") for x in rest.split(b"\n") if x.strip()), b"")
    if not structural_first_line(first) and second[:1] not in (b" ", b"\t", b'"', b"}", b"]") \
            and second[-1:] != b",":
        return "lines", data  # broken lines, none of them the inside of a pretty-printed document
    return ("array" if opener == b"[" else "document"), data


def _one_value(head: bytes, eof: bool) -> bool:
    """Whether ``head`` (starting at a value, its first line not whole) parses as one JSON value that
    goes on past the first line: whole, or cut only by the end of what was read so far."""
    text = head.decode("utf-8", "surrogateescape")
    try:
        json.JSONDecoder().raw_decode(text)
    except RecursionError:
        return False
    except json.JSONDecodeError as exc:
        cut = exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
        return cut and not eof
    return True


def _complete(line: bytes) -> bool:
    """Whether the line is one whole JSON value (one too deep to decode here counts)."""
    try:
        json.loads(line.decode("utf-8", "surrogateescape"))
        return True
    except RecursionError:  # too deep to decode: whole if its brackets balance (strings aside, roughly)
        s = line.rstrip(b" \t\r")
        return s[-1:] in (b"]", b"}") and s.count(b"[") + s.count(b"{") == s.count(b"]") + s.count(b"}")
    except ValueError:
        return False


_BRACKETS_AND_NL = bytes(c for c in range(256) if c not in b"[{\n")
"""What ``bytes.translate`` deletes to keep a text's opening brackets and newlines."""


def _iter_blocks(chunks: Iterator[bytes], source: str,
                 limits: Limits) -> Iterator[Value | InputIssue | tuple[int, bytes] | Lines]:
    """``_iter_lines`` with ``raw_lines="blocks"``: the whole lines of each chunk as one ``Lines`` when all of
    them pass the per-line checks at once, else line by line (``_iter_lines``) for that chunk."""
    most = min(limits.max_string_bytes, limits.max_record_bytes)
    max_depth = limits.max_depth
    lineno = 0  # lines before the current chunk
    pending = b""
    parts: list[bytes] = []  # a line longer than a chunk, in parts (joined once, when it ends)
    size = 0
    for chunk in chunks:
        if b"\n" not in chunk:
            parts.append(chunk)
            size += len(chunk)
            if len(pending) + size > most:  # over the limits: the line reader measures it without holding it
                yield from _iter_lines(chain([pending, *parts], chunks), source, True, limits, lineno + 1)
                return
            continue
        if parts:
            chunk = b"".join([pending, *parts, chunk])
            parts, size, pending = [], 0, b""
        data = pending + chunk if pending else chunk
        cut = data.rfind(b"\n") + 1  # the whole lines: data[:cut] (not copied out: a reader takes them in place)
        pending = data[cut:]
        brackets = data.translate(None, _BRACKETS_AND_NL)  # (the cut line's brackets count with the last line's)
        n = brackets.count(b"\n")
        if lineno and data.find(b"\r", 0, cut) < 0 and (cut <= most or _longest(data, cut) < most) and \
                (len(brackets) - n <= max_depth or max(map(len, brackets.split(b"\n"))) <= max_depth):
            yield Lines(data, lineno + 1, n, cut)  # (no line has more brackets than max_depth: none nests deeper)
        else:  # (the first lines always: a BOM, the sniffed head)
            yield from _iter_lines(iter([data[:cut]]), source, True, limits, lineno + 1)
        lineno += n
    if pending or parts:
        yield from _iter_lines(iter([pending, *parts]), source, True, limits, lineno + 1)


def _longest(data: bytes, end: int) -> int:
    """The length of the longest line in ``data[:end]`` (without its newline)."""
    longest = start = 0
    while start < end:
        nl = data.find(b"\n", start, end)
        nl = end if nl < 0 else nl
        longest = max(longest, nl - start)
        start = nl + 1
    return longest


def _iter_lines(chunks: Iterator[bytes], source: str, raw: bool | str,
                limits: Limits, start: int = 1) -> Iterator[Value | InputIssue | tuple[int, bytes] | Lines]:
    if raw == "blocks" and limits.on_bad_text != "replace":
        yield from _iter_blocks(chunks, source, limits)
        return
    max_string, max_depth, replace = limits.max_string_bytes, limits.max_depth, limits.on_bad_text == "replace"
    for lineno, line in enumerate(_split_lines(chunks, limits.max_record_bytes), start):
        if type(line) is int:
            yield _issue(source, lineno, _limits.too_large(line, limits))
            continue
        if lineno == 1 and line.startswith(_BOM):
            line = line[len(_BOM):]
        line = line.rstrip(b"\r\n")  # so that an error at the end of the line gets its column
        if not line or line.isspace():  # (the same test as `not line.strip()`, without a copy of the line)
            continue
        if raw and len(line) <= max_string and not (replace and (not line.isascii() or _ESCAPE.search(line))):
            # lone surrogates and bad bytes need no check here: msgspec rejects them, and the
            # native reader then finds and names them (parse_trace)
            if depth_exceeds(line, max_depth):
                yield _issue(source, lineno, _limits.too_deep(limits))
            else:
                yield lineno, line
            continue
        parsed = parse_line(line, source, lineno, limits)
        yield parsed if isinstance(parsed, InputIssue) else Value(parsed, lineno)


def _issue(source: str, line: int, exc: RecordError, path: str = "") -> InputIssue:
    field = exc.field
    if path:
        field = f"{path}{'' if not field or field.startswith('[') else '.'}{field or ''}"
    return InputIssue(source, line, field or None, exc.message)


def parse_line(line: bytes, source: str, lineno: int, limits: Limits | None = None) -> Any:
    """One JSON Lines line as a Python value within the limits, or an InputIssue saying why not."""
    limits = limits or _limits.current()
    try:
        text = decode_text(line, limits)
        try:
            value = json.loads(text, parse_constant=_limits.reject_constant)
        except RecursionError:
            raise _limits.too_deep(limits) from None
        return check_value(value, limits, raw=text)
    except RecordError as exc:
        return _issue(source, lineno, exc)
    except json.JSONDecodeError as exc:
        return InputIssue(source, lineno, None, f"not valid JSON: {exc.msg} at column {exc.colno}")


def _split_lines(chunks: Iterator[bytes], max_bytes: int) -> Iterator[bytes | int]:
    """The lines of the file; a line over ``max_bytes`` comes as its length, without being held."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        start = 0
        while (nl := chunk.find(b"\n", start)) >= 0:
            if not size:  # the whole line is in this chunk (the usual case): no list, no join
                if nl + 1 - start > max_bytes:
                    yield nl + 1 - start
                else:
                    yield chunk[start:nl + 1]
                start = nl + 1
                continue
            size += nl + 1 - start
            if size > max_bytes:
                yield size
            else:
                parts.append(chunk[start:nl + 1])
                yield b"".join(parts)
            parts, size, start = [], 0, nl + 1
        if start < len(chunk):
            size += len(chunk) - start
            if size <= max_bytes:
                parts.append(chunk[start:])
            else:
                parts = []
    if size:
        yield b"".join(parts) if size <= max_bytes else size


_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""The start of a surrogate escape: a line without one cannot hold a lone surrogate."""
_IN_STRING = re.compile(r'["\\]')
_STRUCTURE = re.compile(r'["\[\]{}]')
_SCALAR_END = re.compile(r'[,\]}\s]')


class _Text:
    """A text buffer over byte chunks that knows the line and column of every position.

    Bytes that are not UTF-8 arrive as surrogate escapes (or U+FFFD under 'replace'), so that the
    value holding them is rejected by the text check while the rest of the file is read.
    """

    def __init__(self, chunks: Iterator[bytes], limits: Limits) -> None:
        self._chunks = chunks
        errors = "replace" if limits.on_bad_text == "replace" else "surrogateescape"
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors)
        self.limits = limits
        self.buf, self.pos, self.line, self.col0, self.eof = "", 0, 1, 0, False

    def fill(self, at_least: int = 1) -> bool:
        """Append the next chunks, ``at_least`` characters if the file has them; False at end of file.

        The chunks are joined once, so reading a long value costs time linear in its length.
        """
        texts: list[str] = []
        got = 0
        while not self.eof and got < at_least:
            chunk = next(self._chunks, None)
            text = self._decoder.decode(chunk or b"", final=chunk is None)
            if chunk is None:
                self.eof = True
            if text:
                texts.append(text)
                got += len(text)
        if not texts:
            return False
        dropped = self.buf[:self.pos]
        nl = dropped.rfind("\n")
        self.col0 = len(dropped) - nl - 1 if nl >= 0 else self.col0 + len(dropped)
        self.buf, self.pos = "".join([self.buf[self.pos:], *texts]), 0
        return True

    def grow(self) -> bool:
        """Read until the unread text is twice as long (at least a chunk more): linear time on long values."""
        return self.fill(max(len(self.buf) - self.pos, CHUNK))

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

    def value(self, decoder: json.JSONDecoder = json.JSONDecoder(parse_constant=_limits.reject_constant)) -> Any:  # noqa: B008 - one decoder, built once
        """Decode the value at the current position (after whitespace), within the limits.

        A value over a limit is skipped without being held, and raises RecordError: the reading
        goes on after it.
        """
        self.peek()
        limits = self.limits
        while True:
            try:
                obj, end = decoder.raw_decode(self.buf, self.pos)
            except RecursionError:
                self.skip()
                raise _limits.too_deep(limits) from None
            except RecordError:  # NaN or Infinity, raised from inside the decoder
                self.skip()
                raise
            except json.JSONDecodeError as exc:
                truncated = exc.pos >= len(self.buf) - _TAIL or exc.msg.startswith("Unterminated string")
                if truncated and len(self.buf) - self.pos > limits.max_record_bytes:
                    raise _limits.too_large(self.skip(), limits) from None
                if truncated and self.grow():
                    continue
                raise _Stop(self.line_at(exc.pos), f"not valid JSON: {exc.msg} at column {self.column(exc.pos)}") from None
            if end >= len(self.buf) and not isinstance(obj, (dict, list, str)) and self.fill():
                continue  # a number or literal cut by the chunk boundary
            size = end - self.pos
            span = self.buf[self.pos:end] if isinstance(obj, (dict, list, str)) else ""
            self.advance(end)
            if size > limits.max_record_bytes:
                raise _limits.too_large(size, limits)
            return check_value(obj, limits, raw=span) if span else obj

    def skip(self) -> int:
        """Move past the value at the current position without decoding or holding it; its length."""
        self.peek()
        size = 0
        if self.buf[self.pos:self.pos + 1] not in ("[", "{", '"'):
            while True:
                m = _SCALAR_END.search(self.buf, self.pos)
                if m:
                    size += m.start() - self.pos
                    self.advance(m.start())
                    return size
                size += len(self.buf) - self.pos
                self.advance(len(self.buf))
                if not self.fill():
                    return size
        depth, in_string, i = 0, False, self.pos
        while True:
            buf = self.buf
            m = (_IN_STRING if in_string else _STRUCTURE).search(buf, i)
            if m is None:
                i = len(buf)
            else:
                c, j = m.group(), m.end()
                if c != "\\":
                    i = j
                    if c == '"':
                        in_string = not in_string
                    else:
                        depth += 1 if c in "[{" else -1
                    if not in_string and depth <= 0:
                        size += i - self.pos
                        self.advance(i)
                        return size
                    continue
                if j < len(buf):
                    i = j + 1
                    continue
                i = j - 1  # keep the backslash: the character it escapes comes with the next chunk
            size += i - self.pos
            self.advance(i)
            if not self.fill():
                raise _Stop(self.line, "not valid JSON: the file ends inside a value")
            i = self.pos

    def expect(self, chars: str, what: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            got = repr(c) if c else "end of file"
            raise _Stop(self.line, f"not valid JSON: expected {what}, got {got} at column {self.column(self.pos)}")
        self.advance(self.pos + 1)
        return c


def _iter_text(chunks: Iterator[bytes], source: str, mode: str, unwrap: tuple[str, ...],
               limits: Limits) -> Iterator[Value | InputIssue]:
    text = _Text(chunks, limits)
    try:
        if mode == "array":
            yield from _array(text, source, "", None, "array")
            if text.peek():
                raise _Stop(text.line, f"not valid JSON: unexpected {text.peek()!r} after the array at column "
                                       f"{text.column(text.pos)}")
            return
        while text.peek():
            start = text.line
            if text.peek() == "{" and unwrap:
                yield from _object(text, source, unwrap)
            else:
                try:
                    yield Value(text.value(), start, "", "document")
                except RecordError as exc:
                    yield _issue(source, start, exc)
    except _Stop as stop:
        yield InputIssue(source, stop.line, None, f"{stop.message}; reading stopped here")


def _array(text: _Text, source: str, prefix: str, key: str | None, mode: str) -> Iterator[Value | InputIssue]:
    text.expect("[", "'['")
    index = 0
    if text.peek() == "]":
        text.advance(text.pos + 1)
        return
    while True:
        text.peek()
        line = text.line
        try:
            yield Value(text.value(), line, f"{prefix}[{index}]", mode, key)
        except RecordError as exc:
            yield _issue(source, line, exc, f"{prefix}[{index}]" if key else "")
        index += 1
        if text.expect(",]", "',' or ']'") == "]":
            return


def _object(text: _Text, source: str, unwrap: tuple[str, ...]) -> Iterator[Value | InputIssue]:
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
        line = text.line
        try:
            key = text.value()
        except RecordError as exc:  # a bad key: its value goes with it
            text.expect(":", "':'")
            text.skip()
            yield _issue(source, line, exc)
        else:
            text.expect(":", "':'")
            if key in unwrap and text.peek() == "[":
                found = True
                yield from _array(text, source, key, key, "document")
            else:
                try:
                    rest[key] = text.value()
                except RecordError as exc:
                    yield _issue(source, line, exc, key)
        if text.expect(",}", "',' or '}'") == "}":
            break
    if not found:
        yield Value(rest, start, "", "document")
