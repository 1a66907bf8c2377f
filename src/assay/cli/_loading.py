"""Find a run by results-file path or run-store id."""

from __future__ import annotations

import os

from ..model import RunResult
from ..store import load_run, read_results_file


def load_result(ref: str, store_path: str | None = None) -> RunResult:
    """A results file (JSON or JSON Lines, read by the one codec) or a run in the store."""
    if os.path.isfile(ref):
        return read_results_file(ref)
    return load_run(ref, store_path) if store_path else load_run(ref)
