"""The session floor: where every command, ``assay.evaluate`` and the pytest plugin start.

It sits between what reads and writes runs (``store``, ``report``, ``analysis``) and the faces
(``cli``, the pytest plugin, ``compat``): :class:`Session` reads the config file, loads plugins and
``[[criteria]]``, lays flags over the file as typed overrides and builds the run's spec and its
judge once; :func:`run_files` scores a run into its sinks under the signal handlers; the output
sinks (JSON, JSON Lines, CSV, JUnit, the HTML report) are library code, so ``assay.evaluate(...,
outputs=[...])`` and the plugin write what ``assay run -o`` writes.
"""

from __future__ import annotations

import importlib

_NAMES = {
    "aevaluate": "_evaluate", "evaluate": "_evaluate", "load_result": "_loading", "load_side": "_loading",
    "DocumentSink": "_outputs", "ReportSink": "_outputs", "StreamSink": "_outputs", "csv_sink": "_outputs",
    "dumps": "_outputs", "jsonl_sink": "_outputs", "output_sinks": "_outputs", "plan_outputs": "_outputs",
    "make_report": "_run", "open_store": "_run", "run_files": "_run", "store_path": "_run",
    "Session": "_session", "stop_on_signals": "_signals",
}
"""Each name's module, imported when the name is first used: ``assay metrics`` needs the session but
not the engine, the store or the report."""

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> object:
    if name not in _NAMES:
        raise AttributeError(f"module 'assay.session' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
