"""Look at the first record of a file's head, for the importers' ``sniff`` functions.

The head is at most 64 KiB and may end in the middle of a record. The first record is decoded
when it fits; otherwise the keys of its top level are scanned from the partial text, so that a
sniffer can still tell formats apart by the names they use.
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
        first = text.split("\n", 1)[0]
        try:
            record = json.loads(first)
            return Head(text, "object", record, True, _keys_of(record))
        except ValueError:
            return _record_at(text, 0, "object")
    return Head(text)


def _record_at(text: str, pos: int, container: str) -> Head:
    try:
        record, _ = _DECODER.raw_decode(text, pos)
        return Head(text, container, record, True, _keys_of(record))
    except ValueError:
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
