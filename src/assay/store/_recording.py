"""Running an Evaluation into the store: what ``assay run`` and ``assay.evaluate(store=True)`` share.

The store sits above the engine, so this is where a run and its record meet: the metric specs,
judge and configuration kept with each run, and a run that streams every result into the store.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .._secrets import redact
from ..engine import Evaluation
from ..engine._sinks import Each, Sink, run_into
from ..engine._spec import RunSpec
from ..model import InputIssue, RunResult, TraceResult
from ._db import RunStore
from ._inputs import InputTap
from ._paths import default_store_path

STORED_INPUTS_PASSED, STORED_INPUTS_OTHER = 1000, 10_000
"""Input traces written to the run store per run: the first passing ones and the failed or unscored
ones, so a report of a stored run can show what went wrong without the store growing by the full
input size on every run (results are always stored)."""


def metric_specs(evaluation: Evaluation) -> list[dict[str, Any]]:
    """Each metric instance's name, metric, version, dimension and parameters: enough to rerun it."""
    return [{"name": n, "metric": m.spec.name, "version": m.spec.version, "dimension": m.spec.dimension,
             "params": {f.name: getattr(m, f.name) for f in dataclasses.fields(m) if f.init}}
            for n, m in evaluation.instances.items()]


def run_config(evaluation: Evaluation, input_format: str | None, strict: bool,
               label: dict[str, Any] | None = None) -> dict[str, Any]:
    """The configuration kept with a run: weights, thresholds, skipped metrics, input options, name and tags."""
    dims = sorted(set(evaluation.dimension_of.values()))
    return {"dimension_weights": {d: evaluation.dims.weight(d) for d in dims},
            "dimension_thresholds": {d: evaluation.dims.threshold(d) for d in dims},
            "skipped_metrics": dict(evaluation.skipped), "input_format": input_format, "strict": strict,
            **given(label)}


def given(label: dict[str, Any] | None) -> dict[str, Any]:
    """The run's name and tags, only those given."""
    return {k: v for k, v in (label or {}).items() if v}


def judge_model(judge: Any) -> dict[str, Any] | None:
    return None if judge is None else {"model": getattr(judge, "model", type(judge).__name__)}


class InputBudget:
    """Which input traces go into the store with their results (see ``STORED_INPUTS_*``)."""

    def __init__(self, passed: int = STORED_INPUTS_PASSED, other: int = STORED_INPUTS_OTHER) -> None:
        self.caps = {"passed": passed, "other": other}
        self.counts = {"passed": 0, "other": 0}
        self.open = passed > 0 or other > 0
        """False once both caps are reached: no later trace is kept (callers may skip asking)."""

    def __call__(self, item: TraceResult) -> bool:
        key = "passed" if item.passed is True else "other"
        cap = self.caps[key]
        if self.counts[key] >= cap:
            return False
        self.counts[key] += 1
        if self.counts[key] >= cap and all(self.counts[k] >= c for k, c in self.caps.items()):
            self.open = False
        return True


def store_file(store: bool | str | os.PathLike[str]) -> Path | None:
    """``store=True``: the default store ($ASSAY_STORE, None when it is ``off``); a path: that file."""
    if store is True:
        return default_store_path()
    return Path(store).expanduser()  # type: ignore[arg-type]


class StoreSink(Sink):
    """Streams a run into the run store: a ``running`` row at ``begin``, results in batches, the
    summary at ``finish`` (``result.run.run_id`` names it), ``interrupted`` or ``failed`` at ``abort``."""

    def __init__(self, evaluation: Evaluation, store: Path, inputs: list[dict[str, Any]],
                 keep_input: InputBudget | None = None) -> None:
        self.evaluation, self.store, self.inputs = evaluation, store, inputs
        self.keep_input = keep_input or InputBudget()
        self.recorder: Any = None

    def begin(self, spec: RunSpec) -> None:
        self.recorder = RunStore(self.store).start(
            inputs=self.inputs, metrics=metric_specs(self.evaluation), judge=judge_model(self.evaluation.judge),
            config=run_config(self.evaluation, spec.input_format, spec.strict, spec.label))

    def add(self, item: TraceResult | InputIssue) -> None:
        trace = item.trace if isinstance(item, TraceResult) else None
        budget = self.keep_input
        self.recorder.add(item, trace if trace is not None and budget.open and budget(item) else None)  # type: ignore[arg-type]

    def finish(self, result: RunResult) -> None:
        result.run.run_id = self.recorder.run_id
        self.recorder.finish(result)

    def abort(self, reason: str) -> None:
        if reason.startswith("interrupted"):
            self.recorder.abort("interrupted", reason)
        else:
            self.recorder.abort("failed", redact(reason))


def record_evaluation(evaluation: Evaluation, source: Any, store: Path, spec: RunSpec | None = None, *,
                      input_format: str | None = None, strict: bool = False, label: dict[str, Any] | None = None,
                      on_result: Callable[[TraceResult | InputIssue], None] | None = None,
                      executor: Any = None, sinks: Iterable[Any] = ()) -> RunResult:
    """Run ``evaluation`` over ``source`` as ``spec`` says while streaming every result into ``store``, as
    ``assay run`` does (without a spec: one from ``input_format``, ``strict``, ``label`` and ``executor``;
    ``on_result`` sees every result too, and so do ``sinks``, after the store).

    The run is listed by ``assay runs`` and loadable by ``load_run``; ``result.run.run_id`` names
    it. ``source`` paths are hashed while read; Trace objects or dicts are recorded as "(python)".
    """
    paths = _paths(source)
    tap = InputTap(paths) if paths is not None else None
    inputs = ([{"path": p, "sha256": None, "bytes": None} for p in tap.paths] if tap is not None
              else [{"path": "(python)", "sha256": None, "bytes": None}])
    if spec is None:
        spec = RunSpec(input_format=input_format, strict=strict, name=(label or {}).get("name"),
                       tags=(label or {}).get("tags") or {}, executor=executor)
    into: list[Any] = [StoreSink(evaluation, store, inputs), *sinks]
    if on_result is not None:
        into.append(Each(on_result))
    return run_into(evaluation, source, spec, into, tap=tap)


def _paths(source: Any) -> list[str] | None:
    """The file paths in ``source`` when it is a path or a list of paths, else None (in-memory traces)."""
    if isinstance(source, (str, os.PathLike)):
        return [str(source)]
    if isinstance(source, (list, tuple)) and source and all(isinstance(s, (str, os.PathLike)) for s in source):
        return [str(s) for s in source]
    return None
