"""Load a run by reference: a results file or a run in the store."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..errors import ConfigError
from ..model import RunResult, Trace, TraceResult
from ._codec import read_results_file
from ._db import RunStore
from ._inputs import trace_key, traces_from_inputs
from ._paths import default_store_path


def _store(store: RunStore | str | os.PathLike[str] | None) -> RunStore:
    if isinstance(store, RunStore):
        return store
    if store is not None:
        return RunStore(store)
    path = default_store_path()
    if path is None:
        raise ConfigError("the run store is off (ASSAY_STORE=off): give a results file instead of a run id")
    return RunStore(path)


def _is_file_ref(ref: str | os.PathLike[str]) -> bool:
    if not isinstance(ref, str):
        return True
    return os.sep in ref or "/" in ref or ref.endswith((".json", ".jsonl")) or Path(ref).is_file()


def load_run(ref: str | os.PathLike[str], store: RunStore | str | os.PathLike[str] | None = None, *,
             each: Callable[[TraceResult], None] | None = None) -> RunResult:
    """A RunResult from a run id (or unique prefix, ``latest``, ``latest~N``) or a results file.

    A results file is what ``assay run --output`` writes (JSON or JSON Lines). Run ids are
    looked up in ``store`` (default: ``$ASSAY_STORE`` or the user data dir). With ``each``, a
    stored run's traces are handed to it one at a time and not kept (``RunStore.load``); a
    results file is read whole and its traces handed over the same way.
    """
    if _is_file_ref(ref):
        if not Path(ref).exists():
            raise ConfigError(f"no such results file: {str(ref)!r}")
        result = read_results_file(ref)
        if each is not None:
            for t in result.traces:
                each(t)
            result.traces = []
        return result
    st = _store(store)
    if not st.path.exists():
        raise ConfigError(f"no run {ref!r}: the run store {str(st.path)!r} does not exist yet")
    return st.load(str(ref), each=each)


def load_traces(result: RunResult, *, store: RunStore | str | os.PathLike[str] | None = None,
                limit: int | None = None) -> dict[str, Trace]:
    """The input traces behind a run's results, keyed by ``file:line`` source (else trace id).

    Stored runs keep their input traces; otherwise (results files, runs fed from stdin) the
    input files named in the run are re-read when they still exist unchanged (same sha256).
    """
    run_id = result.run.run_id
    if run_id:
        try:
            st = _store(store)
            keys = {trace_key(t) for t in result.traces}  # only the traces whose results are at hand
            found = st.traces(run_id, limit=limit, keys=keys) if st.path.exists() else {}
        except ConfigError:
            found = {}
        if found:
            return found
    return traces_from_inputs(result, limit=limit)
