"""Look at the first record of a file's head, for the importers' ``sniff`` functions.

The head is at most 64 KiB and may end in the middle of a record. The first record is decoded
when it fits; otherwise the keys of its top level are scanned from the partial text, so that a
sniffer can still tell formats apart by the names they use - unless the first line is broken
before its end (``{not json``): the first line of a longer document is always a valid prefix of
it, so such a line is a bad JSON Lines record and lends the head no keys. A record too deep to
decode counts as not decoded; nothing here raises.

For JSON Lines whose first line cannot be read (a comment, a bad byte, a cut record),
``later_lines`` finds the lines that can: the registry sniffs from them and the stream reads
the file as JSON Lines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class Head:
    """The first record of a file, as far as the head shows it."""

    text: str
    """The decoded head (invalid or cut UTF-8 dropped)."""
    container: str = ""
    """'array' when the file opens with '[', 'object' with '{', '' otherwise."""
    record: Any = None
    """The first record, decoded; None when it did not fit in the head."""
    complete: bool = False
    """Whether ``record`` is the whole first record."""
    keys: frozenset[str] = field(default_factory=frozenset)
    """Top-level keys of the first record when it is an object (decoded or scanned)."""

    def has(self, marker: str) -> bool:
        """Whether the head's text contains ``marker`` anywhere."""
        return marker in self.text

    @property
    def first(self) -> Any:
        """``record``, or its first item when it is a non-empty array (a file of one array of records)."""
        rec = self.record
        return rec[0] if isinstance(rec, list) and rec else rec


_DECODER = json.JSONDecoder()


@lru_cache(maxsize=8)
def inspect(head: bytes) -> Head:
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff \t\r\n")
    if not text:
        return Head(text)
    if text[0] == "[":
        pos = _skip_ws(text, 1)
        return _record_at(text, pos, "array")
    if text[0] == "{":
        first, newline, _ = text.partition("\n")
        try:
            record = json.loads(first)
            return Head(text, "object", record, True, _keys_of(record))
        except (ValueError, RecursionError):
            if newline and broken_line(first):
                return Head(text, "object")  # a bad record, not the first line of a longer document
            return _record_at(text, 0, "object")
    return Head(text)


_MAX_LATER = 16
"""How many lines after a first line that cannot be read are looked at."""


def broken_line(line: str) -> bool:
    """Whether the line is invalid JSON before its end: then it cannot open a multi-line document
    (whose first line is always a valid prefix, failing only where the line ends)."""
    line = line.rstrip(" \t\r")
    try:
        json.loads(line)
    except json.JSONDecodeError as exc:
        return exc.pos < len(line)
    except (ValueError, RecursionError):
        return False
    return False


def structural_first_line(line: bytes) -> bool:
    """Whether a first line that is not whole JSON opens a pretty-printed document or array."""
    s = line.strip(b" \t\r")
    return s in (b"{", b"[") or (s[:1] == b"[" and s[-1:] == b",")  # '[' or '[{...},': an array's first line


def later_lines(head: bytes) -> list[int]:
    """Offsets in ``head`` of the lines after the first that hold a whole JSON object or array.

    Only lines starting at column 0 count (pretty-printed documents indent what is inside them),
    and none when the head shows a multi-line document instead: a line opening with '}' or ']',
    or as many lines ending in ',' as whole lines (``[{...},`` / ``{...}`` / ``]``).
    """
    out: list[int] = []
    commas = 0
    start = head.find(b"\n") + 1
    n = 0
    while 0 < start < len(head) and n < _MAX_LATER:
        end = head.find(b"\n", start)
        line = head[start:end if end >= 0 else len(head)]
        s = line.strip(b" \t\r")
        if s[:1] in (b"}", b"]"):
            return []
        commas += s[-1:] == b","
        if line[:1] in (b"{", b"[") and _whole(line):
            out.append(start)
        if s:
            n += 1
        if end < 0:
            break
        start = end + 1
    first = head[:head.find(b"\n")].strip(b" \t\r")
    commas += first[-1:] == b","
    return out if len(out) > commas else []


def _whole(line: bytes) -> bool:
    try:
        json.loads(line.decode("utf-8"))
        return True
    except (ValueError, RecursionError):
        return False


def _record_at(text: str, pos: int, container: str) -> Head:
    try:
        record, _ = _DECODER.raw_decode(text, pos)
        return Head(text, container, record, True, _keys_of(record))
    except (ValueError, RecursionError):
        keys = scan_keys(text, pos) if text[pos:pos + 1] == "{" else frozenset()
        return Head(text, container, None, False, keys)


def _keys_of(record: Any) -> frozenset[str]:
    return frozenset(record) if isinstance(record, dict) else frozenset()


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def scan_keys(text: str, pos: int) -> frozenset[str]:
    """Keys of the object opening at ``text[pos]``, read as far as the text goes."""
    keys: set[str] = set()
    depth, i, n = 0, pos, len(text)
    expect_key = False
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                break
            if depth == 1 and expect_key:
                try:
                    keys.add(json.loads(text[i:j + 1]))
                except ValueError:
                    pass
            expect_key = False
            i = j + 1
            continue
        if c in "{[":
            depth += 1
            expect_key = c == "{" and depth == 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                break
        elif c == "," and depth == 1:
            expect_key = True
        i += 1
    return frozenset(keys)
