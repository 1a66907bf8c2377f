"""The input side of a run: file hashes, and the input traces next to their results.

The engine hands ``on_result`` the results only. ``TraceTap`` reads the same files a second
time, in lockstep with the results (the engine yields them in input order), so that a stored
run and an HTML report can show each result's conversation. Standard input cannot be read twice:
with ``-`` among the paths the tap stays off and reports show results without conversations.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import AssayError
from ..importers import read_traces
from ..model import InputIssue, RunResult, Trace, TraceResult


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


def trace_key(result: TraceResult) -> str:
    """How traces are matched to results: the ``file:line`` source, else the trace id."""
    return result.source or result.id


class TraceTap:
    """Yields, for each engine result, the input record it came from (None once out of step)."""

    def __init__(self, paths: Sequence[str], input_format: str | None = None) -> None:
        self.enabled = bool(paths) and "-" not in paths
        self._records: Iterator[tuple[str, Trace | InputIssue]] | None = (
            read_traces(list(paths), input_format=input_format) if self.enabled else None)

    def match(self, item: TraceResult | InputIssue) -> Trace | None:
        """The Trace behind ``item`` (None for input issues, or when the tap lost step)."""
        if not self.enabled or self._records is None:
            return None
        try:
            loc, record = next(self._records)
        except (StopIteration, AssayError, OSError):
            self.close()
            return None
        if isinstance(item, InputIssue):
            if isinstance(record, InputIssue):
                return None
        elif isinstance(record, Trace) and record.id == item.id and (item.source is None or loc == item.source):
            return record
        self.close()  # out of step (the file changed under us?): stop rather than mislabel
        return None

    def close(self) -> None:
        self.enabled = False
        if self._records is not None:
            self._records.close()  # type: ignore[attr-defined]
            self._records = None


def traces_from_inputs(result: RunResult, *, limit: int | None = None) -> dict[str, Trace]:
    """Re-read a run's input files, keyed like ``trace_key``; inputs whose hash changed are skipped."""
    files: list[Mapping[str, Any]] = result.run.get("input_files") or [
        {"path": p, "sha256": None} for p in result.run.get("inputs") or []]
    wanted = {trace_key(t) for t in result.traces}
    out: dict[str, Trace] = {}
    for f in files:
        path = str(f.get("path"))
        if path == "-" or not Path(path).is_file():
            continue
        if f.get("sha256") and file_info(path)["sha256"] != f["sha256"]:
            continue
        try:
            for loc, rec in read_traces(path, input_format=result.run.get("input_format")):
                if isinstance(rec, Trace):
                    key = loc if loc in wanted else rec.id
                    if key in wanted and key not in out:
                        out[key] = rec
                        if limit is not None and len(out) >= limit:
                            return out
        except (AssayError, OSError):
            continue
    return out
