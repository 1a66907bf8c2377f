"""The input side of a run: file hashes, and the input traces next to their results.

While a run streams, the engine attaches each input Trace to its result (``attach_traces``), so
the store and the report get the conversation without reading the inputs twice. For a results
file, ``traces_from_inputs`` re-reads the inputs it names when their hashes still match.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from ..errors import AssayError
from ..importers import read_traces
from ..model import RunResult, Trace, TraceResult


def file_info(path: str) -> dict[str, Any]:
    """``{"path", "sha256", "bytes"}`` of one input; hash None for stdin or an unreadable path."""
    if path == "-" or not os.path.isfile(path):
        return {"path": path, "sha256": None, "bytes": None}
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return {"path": path, "sha256": h.hexdigest(), "bytes": size}


def hash_inputs(paths: Sequence[str]) -> list[dict[str, Any]]:
    return [file_info(str(p)) for p in paths]


class HashingReader(io.RawIOBase):
    """Passes an input's bytes through while hashing and counting them: an input is read once."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw, self.sha256, self.bytes_read = raw, hashlib.sha256(), 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        data = self._raw.read(-1 if size is None else size)
        self.sha256.update(data)
        self.bytes_read += len(data)
        return data

    def readinto(self, b: Any) -> int:
        n = self._raw.readinto(b)  # type: ignore[attr-defined]
        if n:
            self.sha256.update(memoryview(b)[:n])
            self.bytes_read += n
        return n or 0

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


class InputTap:
    """The ``tap`` for ``read_traces``: every input's sha256 and size, known when it has been read."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = [str(p) for p in paths]
        self.readers: dict[str, HashingReader] = {}
        self.done: set[str] = set()

    def __call__(self, path: str, raw: IO[bytes]) -> IO[bytes]:
        reader = self.readers[path] = HashingReader(raw)
        return reader  # type: ignore[return-value]

    def total_bytes(self) -> int | None:
        """Sum of the inputs' sizes (a progress total); None when one is not a plain file."""
        try:
            return sum(os.path.getsize(p) for p in self.paths if not (p == "-" or not os.path.isfile(p))) \
                if all(p != "-" and os.path.isfile(p) for p in self.paths) else None
        except OSError:
            return None

    def bytes_read(self) -> int:
        return sum(r.bytes_read for r in self.readers.values())

    def info(self) -> list[dict[str, Any]]:
        """Like ``hash_inputs``, from the bytes read (no hash for an input not read to its end)."""
        out = []
        for p in self.paths:
            r = self.readers.get(p)
            complete = r is not None and (p == "-" or (os.path.isfile(p) and r.bytes_read == os.path.getsize(p)))
            out.append({"path": p, "sha256": r.sha256.hexdigest() if complete else None,  # type: ignore[union-attr]
                        "bytes": r.bytes_read if r is not None else None})
        return out


def trace_key(result: TraceResult) -> str:
    """How traces are matched to results: the ``file:line`` source, else the trace id."""
    return result.source or result.id


def traces_from_inputs(result: RunResult, *, limit: int | None = None) -> dict[str, Trace]:
    """Re-read a run's input files, keyed like ``trace_key``; inputs whose hash changed are skipped."""
    files: list[Any] = result.run.input_files or [
        {"path": p, "sha256": None} for p in result.run.inputs or []]
    wanted = {trace_key(t) for t in result.traces}
    out: dict[str, Trace] = {}
    for f in files:
        path = str(f.get("path"))
        if path == "-" or not Path(path).is_file():
            continue
        if f.get("sha256") and file_info(path)["sha256"] != f["sha256"]:
            continue
        try:
            for loc, rec in read_traces(path, input_format=result.run.input_format):
                if isinstance(rec, Trace):
                    key = loc if loc in wanted else rec.id
                    if key in wanted and key not in out:
                        out[key] = rec
                        if limit is not None and len(out) >= limit:
                            return out
        except (AssayError, OSError):
            continue
    return out
