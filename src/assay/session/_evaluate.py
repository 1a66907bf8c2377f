"""``assay.evaluate`` / ``assay.aevaluate``: a run from Python, started where ``assay run`` starts.

With ``store`` the run streams into the run store as ``assay run`` does (``assay runs`` lists
it); ``outputs`` are the files ``assay run -o`` writes (JSON, JSON Lines, CSV, JUnit, HTML), or
any :class:`~assay.engine.RunSink`; ``config`` reads an ``assay.toml`` (plugins, criteria,
``[judge]``, weights, thresholds, metrics) as the commands do.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..engine import Evaluation
from ..engine._run import Source
from ..engine._sinks import run_into
from ..engine._spec import JudgeSpec
from ..errors import ConfigError
from ..importers import check_file
from ..model import RunResult
from ._outputs import output_sinks, plan_outputs
from ._session import Session


def evaluate(traces: Source, metrics: Iterable[Any] | None = None, *, judge: Any = None,
             weights: Mapping[str, float] | None = None, thresholds: Mapping[str, float] | None = None,
             input_format: str | None = None, strict: bool = False,
             store: bool | str | os.PathLike[str] = False, name: str | None = None,
             tags: Mapping[str, str] | None = None, executor: Any = None, outputs: Iterable[Any] = (),
             config: str | os.PathLike[str] | bool | None = None, **judge_options: Any) -> RunResult:
    """Score traces (paths, Trace objects or dicts) with metrics; returns a RunResult.

    ``judge`` is a model string (``"openai:gpt-4o-mini"``), a client object or an
    ``assay.judge.Judge``; ``judge_options`` go to ``assay.judge.make_judge``; a list of them is a
    jury. ``store=True``
    records the run in the run store (``$ASSAY_STORE``, else the user data dir; nothing when
    ``ASSAY_STORE=off``), ``store="runs.sqlite3"`` in that file; ``name`` and ``tags`` label it
    for ``assay runs``, and ``result.run.run_id`` names it.

    ``outputs``: files to write, each in the format its suffix names (``results.jsonl``,
    ``report.html``, ``results.csv``, ``junit.xml``, ``results.json``), or RunSink objects.
    ``config``: an assay.toml (or JSON) file to start from, True for the nearest one; its settings
    apply where no argument gives them.
    """
    session = Session.open(config if isinstance(config, (str, os.PathLike)) else None, discover=config is True)
    if judge is None:  # the config's judge, if it names one
        judge_spec = session.judge_spec(None, judge_options)
    else:
        judge_spec = JudgeSpec.of(judge, session.judge_options(judge_options))
    spec = session.run_spec(metrics=metrics, judge=judge_spec,
                            weights=dict(weights or {}), thresholds={**session.config.thresholds, **(thresholds or {})},
                            input_format=input_format, strict=strict, name=name, tags=tags or {}, executor=executor)
    if (store is False or store is None) and (name is not None or tags):
        raise ConfigError("name= and tags= label a stored run: pass store=True (or a store path) too")
    from ..store._recording import _paths, record_evaluation, store_file

    path = store_file(store) if store is not False and store is not None else None
    outputs = list(outputs)
    _, files = plan_outputs([os.fspath(o) for o in outputs if isinstance(o, (str, os.PathLike))], None)
    evaluation = Evaluation.from_spec(spec, attach_traces=path is not None or any(f == "html" for _, f, _ in files))
    sinks: list[Any] = output_sinks(files, dimensions={n: m.spec.dimension for n, m in evaluation.instances.items()},
                                    inputs=_paths(traces) or ())
    for p in _paths(traces) or ():  # every input readable before anything is scored or stored, as `assay run`
        check_file(p, spec.input_format)
    sinks += [o for o in outputs if not isinstance(o, (str, os.PathLike))]
    if path is None:  # no store, or ASSAY_STORE=off: the run is not recorded, as with `assay run --no-store`
        return run_into(evaluation, traces, spec, sinks)
    return record_evaluation(evaluation, traces, path, spec, sinks=sinks)


async def aevaluate(traces: Source, metrics: Iterable[Any] | None = None, *, judge: Any = None,
                    weights: Mapping[str, float] | None = None, thresholds: Mapping[str, float] | None = None,
                    input_format: str | None = None, strict: bool = False,
                    store: bool | str | os.PathLike[str] = False, name: str | None = None,
                    tags: Mapping[str, str] | None = None, executor: Any = None, outputs: Iterable[Any] = (),
                    config: str | os.PathLike[str] | bool | None = None, **judge_options: Any) -> RunResult:
    """``evaluate`` for async code: awaitable without blocking the caller's event loop (it runs in a
    worker thread with its own loop, judge calls included)."""
    return await asyncio.to_thread(evaluate, traces, metrics, judge=judge, weights=weights, thresholds=thresholds,
                                   input_format=input_format, strict=strict, store=store, name=name, tags=tags,
                                   executor=executor, outputs=outputs, config=config,
                                   **judge_options)
