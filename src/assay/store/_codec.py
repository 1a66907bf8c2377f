"""Run ids, and results files read back through the model's one codec."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..model import RunResult, TraceResult, encode, read_results, run_from_builtins

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def new_run_id(now: float | None = None) -> str:
    """A short id that sorts by creation time: 9 base-32 digits of milliseconds + 4 random ones."""
    ms = int((time.time() if now is None else now) * 1000)
    head = "".join(_CROCKFORD[(ms >> (5 * i)) & 31] for i in reversed(range(9)))
    return head + "".join(secrets.choice(_CROCKFORD) for _ in range(4))


def result_from_dict(d: dict[str, Any], traces: list[TraceResult] | None = None) -> RunResult:
    """The inverse of ``RunResult.to_dict`` (``traces`` given separately when streamed)."""
    return run_from_builtins(d, traces)


def read_results_file(path: str | os.PathLike[str]) -> RunResult:
    """A results file from ``assay run --output``: JSON (``-f json``) or JSON Lines (``-f jsonl``)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read results file: {exc.strerror}", source=str(path)) from None
    try:
        return read_results(data, str(path))
    except DataError:
        from ..importers._registry import first_trace_format

        if first_trace_format(str(path)) is not None:  # `assay report traces.jsonl`: say what to do, not a field
            raise DataError(f"this file holds traces, not results: score it first (assay run {path} --html "
                            "report.html does both), or give a run id", source=str(path)) from None
        raise


def dumps(obj: Any) -> str:
    return encode(obj).decode()
