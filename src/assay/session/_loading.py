"""Find a run by results-file path or run-store id; or take a trace file as a run with nothing scored."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError, DataError
from ..model import RunResult
from ..store import load_run, read_results_file


def load_result(ref: str, store_path: str | None = None) -> RunResult:
    """A results file (JSON or JSON Lines, read by the one codec) or a run in the store."""
    if os.path.isfile(ref):
        return read_results_file(ref)
    return load_run(ref, store_path) if store_path else load_run(ref)


def load_side(ref: str, store_path: str | None = None) -> tuple[RunResult, Mapping[str, Any]]:
    """One side of ``versus`` / ``tournament``: a results file, a run id or a trace file, with the
    input traces behind it (a trace file's own traces: its replies are what is judged)."""
    from ..store import load_traces

    if not os.path.isfile(ref):
        result = load_result(ref, store_path)
        return result, load_traces(result, store=store_path)
    try:
        result = read_results_file(ref)
    except DataError as not_results:
        return _trace_file(ref, not_results)
    return result, load_traces(result, store=store_path)


def _trace_file(ref: str, not_results: DataError) -> tuple[RunResult, Mapping[str, Any]]:
    from ..analysis._versus import trace_file_run
    from ..importers import read_traces
    from ..model import Trace

    records, issues = [], []
    try:
        for loc, item in read_traces(ref):
            (records if isinstance(item, Trace) else issues).append((loc, item))
    except (DataError, ConfigError) as exc:  # ConfigError: no format recognised
        issues.append((ref, exc))
    if records:
        return trace_file_run(records, ref)
    raise DataError(f"{ref}: neither traces nor an assay results file ({_what(ref) or 'as results: ' + str(not_results)}"
                    + (f"; as traces: {issues[0][1]}" if issues else "") + "); give trace files, results files "
                    "(assay run -o) or run ids")


def _what(ref: str) -> str | None:
    """What an assay JSON output that is not a run is, when it is one of ours."""
    from ..importers._detect import assay_output
    try:
        with open(ref, "rb") as f:
            what = assay_output(f.read(1 << 20))
    except OSError:
        return None
    return None if what is None or what.startswith("assay results") else f"it is {what}"
