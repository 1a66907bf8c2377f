"""Splitting a run's input into shards that workers score independently.

JSON Lines in assay's own format splits at byte offsets (each cut moved to the next line start),
so one large file spreads over every worker; other formats are one shard per file (their records
may span lines: OTLP spans, a pretty-printed document). In-memory inputs split into slices.
Each shard knows the line (or index) it starts at, so every location a worker reports -
``file:line`` of a result, the line of an input issue - is the one a single process reports.
A task's trials may land in different shards: statistics group tasks only when the parts merge.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import ConfigError, DataError
from ..model import InputIssue, Trace
from ._source import records

SHARD_BYTES = 8 << 20
"""Target size of a byte-range shard: large enough that scheduling costs nothing next to scoring,
small enough that a lost worker's retry repeats little and results reach the driver steadily."""
SHARD_ITEMS = 5000
"""In-memory inputs: records per shard."""
MIN_SHARD_BYTES = 64 << 10
_CHUNK = 1 << 20
BYTE_SPLIT_FORMATS = frozenset({"assay"})
"""Formats whose JSON Lines files hold one whole trace per line (safe to cut between lines)."""


@dataclass(frozen=True, slots=True)
class Shard:
    """A consecutive piece of the input: a byte range of a file, a whole file, or a slice of records."""

    index: int
    path: str | None = None
    input_format: str | None = None
    start: int = 0
    end: int | None = None
    """Byte offset after the shard's last line (None: to the end of the file)."""
    first_line: int = 1
    """Line number of the shard's first byte in the whole file."""
    items: Sequence[Any] | None = None
    """In-memory records (when ``path`` is None), starting at record ``first_line - 1``."""

    def shard_records(self, strict: bool) -> Iterator[tuple[str, Trace | InputIssue]]:
        """The shard's (location, Trace | InputIssue) pairs, located as in the whole input."""

        shift = self.first_line - 1
        if self.path is None:
            for loc, item in records(list(self.items or ()), None, strict):
                yield _shift_index(loc, item, shift)
            return
        tap = None if self.start == 0 and self.end is None else self._range
        try:
            for loc, item in records(self.path, self.input_format, strict, tap):
                yield _shift_line(loc, item, shift)
        except DataError as exc:
            if exc.line is not None and shift and exc.source == self.path:
                raise DataError(exc.detail, source=exc.source, line=exc.line + shift, field=exc.field) from None
            raise

    def _range(self, path: str, stream: IO[bytes]) -> IO[bytes]:
        stream.seek(self.start)
        return io.BufferedReader(_Range(stream, None if self.end is None else self.end - self.start), _CHUNK)

    def __repr__(self) -> str:
        where = self.path if self.path is not None else f"<input>[{self.first_line - 1}:]"
        return f"Shard({self.index}, {where!r}, bytes {self.start}-{self.end}, line {self.first_line})"


class _Range(io.RawIOBase):
    """At most *size* bytes of *stream* from where it is (closing it closes the file)."""

    def __init__(self, stream: IO[bytes], size: int | None) -> None:
        self._stream, self._left = stream, size

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        want = len(b) if self._left is None else min(len(b), self._left)
        if want <= 0:
            return 0
        data = self._stream.read(want)
        b[:len(data)] = data
        if self._left is not None:
            self._left -= len(data)
        return len(data)

    def close(self) -> None:
        self._stream.close()
        super().close()


def _shift_line(loc: str, item: Any, shift: int) -> tuple[str, Any]:
    if not shift:
        return loc, item
    head, sep, tail = loc.rpartition(":")
    if sep and tail.isdigit():
        loc = f"{head}:{int(tail) + shift}"
    if isinstance(item, InputIssue) and item.line is not None:
        item = type(item)(item.source, item.line + shift, item.field, item.message)
    return loc, item


def _shift_index(loc: str, item: Any, shift: int) -> tuple[str, Any]:
    if not shift:
        return loc, item
    if loc.startswith("<input>[") and loc.endswith("]") and loc[8:-1].isdigit():
        loc = f"<input>[{int(loc[8:-1]) + shift}]"
    if isinstance(item, InputIssue) and item.source == "<input>" and item.line is not None:
        item = type(item)(item.source, item.line + shift, item.field, item.message)
    return loc, item


def plan_shards(source: Any, input_format: str | None = None, *, shard_bytes: int | None = None,
                shard_items: int | None = None, tap: Any = None, spread: int = 1) -> list[Shard]:
    """The shards of a run's input, in input order.

    Sizes left None are chosen so that each of the *spread* workers scoring at once gets at least
    four shards (a small input still uses every worker), up to SHARD_BYTES / SHARD_ITEMS. Files
    are read once here (through ``tap``, so the CLI's input hashes and sizes are taken as they
    are in a single process) to find the line starts the byte ranges are cut at.
    """
    if isinstance(source, (str, Path)):
        paths: list[str] | None = [str(source)]
    else:
        items = list(source)
        paths = [str(p) for p in items] if items and all(isinstance(p, (str, Path)) for p in items) else None
        if paths is None:
            if shard_items is None:
                shard_items = max(1, min(SHARD_ITEMS, -(-len(items) // (4 * spread))))
            return [Shard(i, items=items[lo:lo + shard_items], first_line=lo + 1)
                    for i, lo in enumerate(range(0, len(items), shard_items))] or [Shard(0, items=[])]
    shards: list[Shard] = []
    for path in paths:
        size = shard_bytes
        if size is None:
            try:
                total = os.path.getsize(path)
            except OSError:
                total = SHARD_BYTES  # _file_ranges says what is wrong with the path
            size = max(MIN_SHARD_BYTES, min(SHARD_BYTES, -(-total // (4 * spread))))
        for start, end, line, fmt in _file_ranges(path, input_format, size, tap):
            shards.append(Shard(len(shards), path, fmt, start, end, line))
    return shards


def _file_ranges(path: str, input_format: str | None, shard_bytes: int,
                 tap: Any) -> Iterator[tuple[int, int | None, int, str]]:
    from .._files import is_stream
    from ..importers._registry import _SNIFF_BYTES, _open, format_of

    if path == "-":
        raise ConfigError("a distributed run reads files: standard input ('-') cannot be split between workers; "
                          "save it to a file first")
    if is_stream(path):
        raise ConfigError(f"a distributed run reads files: {path!r} is a pipe or a device (process substitution, "
                          "/dev/stdin), which its workers cannot open again or split; save it to a file first")
    stream, source = _open(path, tap)
    try:
        head = stream.read(_SNIFF_BYTES)
        fmt = format_of(head, source, input_format)
        if fmt not in BYTE_SPLIT_FORMATS or not _is_jsonl(head):
            while stream.read(_CHUNK):  # through the tap: the input's hash and size
                pass
            yield 0, None, 1, fmt
            return
        yield from _cuts(head, stream, shard_bytes, fmt)
    finally:
        stream.close()


def _cuts(head: bytes, stream: IO[bytes], shard_bytes: int, fmt: str) -> Iterator[tuple[int, int | None, int, str]]:
    """Byte ranges of about *shard_bytes*, each starting at a line start, with their first line numbers."""
    start, line = 0, 1
    offset, lines_before = 0, 0  # of the chunk being scanned
    target = shard_bytes
    chunk = head
    while chunk:
        end = offset + len(chunk)
        while target < end:
            nl = chunk.find(b"\n", max(target - offset, 0))
            if nl < 0:
                break
            cut = offset + nl + 1
            cut_line = 1 + lines_before + chunk.count(b"\n", 0, nl + 1)
            if cut > start:
                yield start, cut, line, fmt
                start, line = cut, cut_line
            target = cut + shard_bytes
        lines_before += chunk.count(b"\n")
        offset = end
        chunk = stream.read(_CHUNK)
    yield start, None, line, fmt


def _is_jsonl(head: bytes) -> bool:
    """The file opens with a whole JSON object on its first line (JSON Lines, not a document or an array)."""
    body = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    first, nl, _ = body.partition(b"\n")
    if not nl or not first.lstrip().startswith(b"{"):
        return False
    try:
        return isinstance(json.loads(first), dict)
    except ValueError:
        return False
