"""The input side of a run: file hashes, and the input traces next to their results.

While a run streams, the engine attaches each input Trace to its result (``attach_traces``), so
the store and the report get the conversation without reading the inputs twice. For a results
file, ``traces_from_inputs`` re-reads the inputs it names when their hashes still match.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

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


def trace_key(result: TraceResult) -> str:
    """How traces are matched to results: the ``file:line`` source, else the trace id."""
    return result.source or result.id


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
