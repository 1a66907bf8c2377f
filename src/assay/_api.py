"""``assay.evaluate`` / ``assay.aevaluate``: the engine's, plus ``store=`` to record the run.

The engine sits below the run store (layering), so the facade is where the two meet: with
``store`` the run streams into the store as ``assay run`` does, and ``assay runs`` lists it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping
from typing import Any

from .engine import Evaluation
from .engine._run import Source
from .engine._sinks import run_into
from .engine._spec import JudgeSpec, RunSpec
from .errors import ConfigError
from .model import RunResult


def evaluate(traces: Source, metrics: Iterable[Any] | None = None, *, judge: Any = None,
             weights: Mapping[str, float] | None = None, thresholds: Mapping[str, float] | None = None,
             input_format: str | None = None, strict: bool = False,
             store: bool | str | os.PathLike[str] = False, name: str | None = None,
             tags: Mapping[str, str] | None = None, executor: Any = None, **judge_options: Any) -> RunResult:
    """Score traces (paths, Trace objects or dicts) with metrics; returns a RunResult.

    ``judge`` is a model string (``"openai:gpt-4o-mini"``), a client object or an
    ``assay.judge.Judge``; ``judge_options`` go to ``assay.judge.make_judge``; a list of them is a
    jury. ``store=True``
    records the run in the run store (``$ASSAY_STORE``, else the user data dir; nothing when
    ``ASSAY_STORE=off``), ``store="runs.sqlite3"`` in that file; ``name`` and ``tags`` label it
    for ``assay runs``, and ``result.run.run_id`` names it.
    """
    spec = RunSpec(metrics=metrics, judge=JudgeSpec.of(judge, judge_options), weights=weights or {},
                   thresholds=thresholds or {}, input_format=input_format, strict=strict, name=name, tags=tags or {},
                   executor=executor)
    if store is False or store is None:
        if name is not None or tags:
            raise ConfigError("name= and tags= label a stored run: pass store=True (or a store path) too")
        return run_into(Evaluation.from_spec(spec), traces, spec, [])
    from .store._recording import record_evaluation, store_file

    path = store_file(store)
    evaluation = Evaluation.from_spec(spec, attach_traces=path is not None)
    if path is None:  # ASSAY_STORE=off: the run is not recorded, as with `assay run`
        return run_into(evaluation, traces, spec, [])
    return record_evaluation(evaluation, traces, path, spec)


async def aevaluate(traces: Source, metrics: Iterable[Any] | None = None, *, judge: Any = None,
                    weights: Mapping[str, float] | None = None, thresholds: Mapping[str, float] | None = None,
                    input_format: str | None = None, strict: bool = False,
                    store: bool | str | os.PathLike[str] = False, name: str | None = None,
                    tags: Mapping[str, str] | None = None, executor: Any = None, **judge_options: Any) -> RunResult:
    """``evaluate`` for async code: awaitable without blocking the caller's event loop (it runs in a
    worker thread with its own loop, judge calls included)."""
    return await asyncio.to_thread(evaluate, traces, metrics, judge=judge, weights=weights, thresholds=thresholds,
                                   input_format=input_format, strict=strict, store=store, name=name, tags=tags,
                                   executor=executor, **judge_options)
