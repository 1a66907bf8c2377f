"""The evaluation engine: traces x metrics -> results in input order, streamed.

Deterministic plans run synchronously (no event loop, no per-trace task): that path is what
makes scoring large files cheap. Plans with async (judge) metrics run on one event loop with
a bounded window of traces in flight; the judge wrapper enforces the call concurrency. Each trace
starts (its first judge call leaves) before the next is read, so judging starts with the first
trace, not once a window's worth is read. The sync API works from scripts and from inside a
running loop (Jupyter) by driving the loop in a worker thread.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import ConfigError
from ..metrics import DEFAULT_SET_VERSION, Registry, parse_metric_arg
from ..metrics._base import REGISTRY, build, check_instance_name, split_instance
from ..model import InputIssue, RunRecord, RunResult, Trace, TraceResult
from ..model._outcome import EXCLUDED, FAILED, fault_kind, trial_outcome
from ._aggregate import DEFAULT_THRESHOLDS, DEFAULT_WEIGHTS, Dimensions, RunTotals, group
from ._config import check_dimensions
from ._jury import Jury, JuryTotals
from ._partial import FAILED_KEPT, RunPartial
from ._retest import RetestTotals
from ._scoring import Plan, score_async, score_sync
from ._source import Source, records as _records
from ._spec import JudgeSpec, RunSpec
from ._statistics import StatisticsCollector

NO_JUDGE = "no judge configured: pass --judge (judge= in Python) or set ASSAY_JUDGE"


def resolve_metrics(metrics: Iterable[Any] | Mapping[str, Any] | None, *, registry: Registry = REGISTRY,
                    judge: bool = False) -> tuple[dict[str, Any], dict[str, str]]:
    """Metric instances by instance name for a selection, and the default-set metrics skipped with why.

    Items may be names (``"latency_score:threshold_ms=1000"``, ``"contains@refund:values=[...]"``),
    ``{"name": ..., **params}`` mappings, metric classes or instances; a mapping of instance name ->
    item names each one itself. An instance is named after its metric unless ``NAME@LABEL`` (or a
    mapping key) names it; two instances with one name are an error naming both. ``None``
    selects the default set (``assay.metrics.DEFAULT_METRICS``); its judge metrics only when a judge
    is configured (else skipped, once, with the reason).
    """
    if metrics is None:
        chosen, skipped = {}, {}
        for default in registry.default_names():
            spec = registry.get(default).spec
            if spec.needs_judge and not judge:
                skipped[default] = NO_JUDGE
            else:
                chosen[default] = registry.create(default)
        return chosen, skipped
    items = list(metrics.items()) if isinstance(metrics, Mapping) else [(None, item) for item in metrics]
    out: dict[str, Any] = {}
    given: dict[str, str] = {}
    for label, item in items:
        name = label
        if isinstance(item, str):
            metric_name, params = parse_metric_arg(item)
            metric_name, instance = split_instance(metric_name)
            m = registry.create(metric_name, **params)
        elif isinstance(item, Mapping):
            params = dict(item)
            try:
                metric_name, instance = split_instance(str(params.pop("name")))
            except KeyError:
                raise ConfigError(f"metric entry {item!r} has no 'name'") from None
            m = registry.create(metric_name, **params)
        elif isinstance(item, type) and hasattr(item, "spec"):
            m, instance = build(item, {}), item.spec.name
        elif hasattr(type(item), "spec") and hasattr(item, "score"):
            m, instance = item, item.spec.name
        else:
            raise ConfigError(f"not a metric: {item!r} (give a name, a metric class or an instance)")
        name = check_instance_name(label) if label is not None else instance
        shown = item if isinstance(item, str) else repr(item)
        if name in out:
            raise ConfigError(f"metric instance {name!r} is selected twice: {given[name]!r} and {shown!r}; name them "
                              f"apart with NAME@LABEL (e.g. '{out[name].spec.name}@second:...') or a mapping "
                              "{instance name: metric}")
        if m.spec.needs_judge and not judge:
            raise ConfigError(f"metric {name!r} needs a judge; {NO_JUDGE}")
        out[name], given[name] = m, shown
    return out, {}


class Evaluation:
    """A configured evaluation; ``run`` for a RunResult, ``stream`` to consume results one by one."""

    def __init__(self, metrics: Iterable[Any] | Mapping[str, Any] | None = None, *, judge: Any = None,
                 weights: Mapping[str, float] | None = None, thresholds: Mapping[str, float] | None = None,
                 registry: Registry = REGISTRY, window: int = 256, repeats: int = 1,
                 attach_traces: bool = False, cancel: threading.Event | None = None) -> None:
        self.judge = judge
        self.cancel = cancel
        """Set it (from a signal handler, another thread) to stop the run: no new trace or judge call
        starts, calls in flight get ``STOP_GRACE_S`` to finish, and the run ends ``interrupted``."""
        self.interrupted = False
        self.loop: asyncio.AbstractEventLoop | None = None
        """An event loop running in another thread that async scoring runs on, instead of a new loop
        per ``stream``: a Dask worker's, so its judge keeps connections and limits across shards."""
        self.attach_traces = attach_traces
        """Set ``TraceResult.trace`` to the input Trace (for stores and reports; costs memory if kept)."""
        self.instances, self.skipped = resolve_metrics(metrics, registry=registry, judge=judge is not None)
        """Instance name -> metric: the names that key every TraceResult.metrics."""
        self.metrics = list(self.instances.values())
        self.default_set = metrics is None
        if not self.metrics:
            raise ConfigError("no metrics to run" + (f" ({NO_JUDGE})" if self.skipped else ""))
        if repeats < 1:
            raise ConfigError(f"repeats must be at least 1, got {repeats!r}")
        self.plan = Plan.make(self.instances, only_applicable=metrics is None, repeats=repeats)
        self.dims = Dimensions.make(weights, thresholds)
        self.dimension_of = {n: m.spec.dimension for n, m in self.instances.items()}
        if weights or thresholds:  # (the names every metric declares: only needed to check a setting)
            check_dimensions(weights, thresholds, {*DEFAULT_WEIGHTS, *DEFAULT_THRESHOLDS, *self.dimension_of.values(),
                                                   *(spec.dimension for spec in registry.specs())})
        if judge is not None:
            _check_thresholds(judge, self.metrics)
        self.window = window
        self.near_end: Callable[[], None] | None = None
        """Work for a background thread once the input is read and every trace left has its judge calls in
        flight: the caller's next step prepared while the last replies come (the CLI imports its table's
        modules). Checked as each trace's scoring ends, so it runs while the last replies are awaited; a
        warm-up: at most once per ``stream``, and not under pytest's assertion rewriting (see ``_load_finish``)."""
        self.planner: Any = None
        """An ``engine._calls.Planner`` counting the judge calls planned as the input is read (the session
        sets one for the progress line and the run record): no read of its own before the first call."""
        self.judge_spec: JudgeSpec | None = None
        """What the judge was built from: a distributed run's workers build their own judges from it
        when its model is a string (``from_spec`` sets it)."""

    @classmethod
    def from_spec(cls, spec: RunSpec, *, judge: Any = None, **kwargs: Any) -> Evaluation:
        """The evaluation a RunSpec describes; ``judge``: the spec's judge when the caller built it already;
        ``kwargs``: what is not part of a run's description (``registry``, ``attach_traces``, ``cancel``, ``window``)."""
        if judge is None and spec.judge is not None:
            judge = spec.judge.build()
        evaluation = cls(spec.metrics, judge=judge, weights=spec.weights, thresholds=spec.thresholds,
                         repeats=spec.repeats, **kwargs)
        evaluation.judge_spec = spec.judge
        return evaluation

    def run_spec(self, source: Source, spec: RunSpec, **kwargs: Any) -> RunResult:
        """``run`` with the input and executor settings of *spec*."""
        return self.run(source, input_format=spec.input_format, strict=spec.strict, intervals=spec.intervals,
                        executor=spec.executor, **kwargs)

    def _result(self, trace: Trace, loc: str, metrics: dict[str, Any], totals: RunTotals | None = None,
                outcome: str | None = None, why: str = "") -> TraceResult:
        if outcome is None:
            if totals is None:
                dimensions, overall, passed = group(metrics, self.dimension_of, self.dims)
            else:
                dimensions, overall, passed = totals.add_trace(metrics, trace.task)
            return TraceResult(trace.id, trace.task, trace.trial, metrics, dimensions, overall, passed, loc,
                               trace if self.attach_traces else None)
        if outcome == FAILED:  # a failed trial fails every metric it would have passed (its scores are kept)
            metrics = {name: r.replace(passed=False, details={**r.details, "failed_trial": True}) if r.passed else r
                       for name, r in metrics.items()}
        if totals is None:
            dimensions, overall, _ = group(metrics, self.dimension_of, self.dims)
        else:
            dimensions, overall, _ = totals.add_trace(metrics, trace.task, outcome)
        return TraceResult(trace.id, trace.task, trace.trial, metrics, dimensions, overall,
                           False if outcome == FAILED else None, loc, trace if self.attach_traces else None,
                           outcome, why)

    async def astream(self, source: Source, *, input_format: str | None = None, strict: bool = False,
                      tap: Any = None, totals: RunTotals | None = None) -> AsyncGenerator[TraceResult | InputIssue, None]:
        """Results (and input issues) in input order, scored concurrently within a window."""
        batches = self._batches(source, input_format, strict, tap, totals)
        try:
            async for batch in batches:
                for item in batch:
                    yield item
        finally:
            await batches.aclose()

    async def _batches(self, source: Source, input_format: str | None, strict: bool, tap: Any,
                       totals: RunTotals | None) -> AsyncGenerator[list[TraceResult | InputIssue], None]:
        """``astream``'s results, each time as all those ready in order: a synchronous consumer (``stream``)
        then enters the event loop once per batch, not once per result."""
        pending: deque[asyncio.Future[Any]] = deque()
        loop = asyncio.get_running_loop()
        cancel = self.cancel
        if cancel is not None:
            from ..judge._stop import stop_context  # here, not at the top: `import assay` must not load the judge package
            ctx = stop_context(cancel)
        else:
            ctx = None
        stop = loop.create_task(_wait_for(cancel)) if cancel is not None else None
        warm = totals is not None and totals.collector is not None  # the run's end will need numpy (once loading, a no-op)
        near_end, stats = self.near_end, getattr(self.judge, "stats", None)
        read, unfinished = False, 0  # the input read to its end; traces started and not yet scored
        window, held = self.window, self.window * HELD  # traces in flight; results kept for the order (see HELD)
        wake: asyncio.Future[None] | None = None  # resolved when a trace's scoring ends, if the reader waits for one

        def near_the_end() -> None:  # (see near_end) when the traces left are at most the calls in flight
            nonlocal near_end
            if near_end is not None and read and unfinished <= (getattr(stats, "concurrency_limit", 0) or 1):
                _load_end(near_end)
                near_end = None

        async def one(trace: Trace, loc: str) -> TraceResult:
            nonlocal unfinished
            try:
                if cancel is not None and cancel.is_set():
                    raise asyncio.CancelledError  # a trace not started before the interrupt is not started
                outcome, why = trial_outcome(trace)
                if outcome == EXCLUDED:  # the harness failed: nothing to score, no judge call spent
                    metrics = {}
                elif self.plan.is_async:
                    metrics = await score_async(trace, self.plan, self.judge)
                else:
                    metrics = score_sync(trace, self.plan, self.judge)
                return self._result(trace, loc, metrics, totals, outcome, why)
            finally:
                unfinished -= 1
                near_the_end()
                rouse()

        async def progress() -> None:
            """Until a trace's scoring ends (the first pending one's among them) or the run is interrupted: its
            place in the window is free then, whatever the traces ahead of it. (One future: asyncio.wait over
            the first pending result and it cost 11 us more, at every trace's end.)"""
            nonlocal wake
            wake = loop.create_future()
            try:
                await wake
            finally:
                wake = None

        def rouse(_: Any = None) -> None:  # a trace's scoring ended, or the run was interrupted
            if wake is not None and not wake.done():
                wake.set_result(None)

        def done() -> list[Any]:
            """The results done from the first pending one on, in order (none once the run is interrupted)."""
            batch = []
            while pending and pending[0].done() and not (cancel is not None and cancel.is_set()):
                batch.append(pending.popleft().result())
            return batch

        try:
            if stop is None:
                for loc, item in self._read(source, input_format, strict, tap):
                    if isinstance(item, InputIssue):
                        fut = loop.create_future()
                        fut.set_result(item)
                        pending.append(fut)
                    else:
                        unfinished += 1
                        pending.append(asyncio.ensure_future(one(item, loc)))
                        if unfinished < window:  # the trace starts (its first judge call leaves) before the next
                            await asyncio.sleep(0)  # is read (a full window waits for a trace's end below anyway)
                    while unfinished >= window or len(pending) >= held:  # full: until a trace ends
                        if not pending[0].done():
                            _load_finish(warm)
                            await progress()  # (a trace is pending: the first one is, so its end wakes this)
                        if pending[0].done():
                            yield done()
                    if pending and pending[0].done():
                        yield done()
                read = True
                near_the_end()
                while pending:
                    if not pending[0].done():
                        _load_finish(warm)
                    yield await _ready(pending)
                return
            records = iter(self._read(source, input_format, strict, tap))
            stop.add_done_callback(rouse)
            while not cancel.is_set():  # type: ignore[union-attr]
                room = not read and unfinished < window and len(pending) < held
                got = next(records, None) if room else None
                if got is None and room:
                    read = True
                    near_the_end()
                if got is not None:
                    loc, record = got
                    if isinstance(record, InputIssue):
                        fut = loop.create_future()
                        fut.set_result(record)
                        pending.append(fut)
                    else:
                        unfinished += 1
                        pending.append(loop.create_task(one(record, loc), context=ctx.copy()))  # type: ignore[union-attr]
                        if unfinished < window:  # the trace starts (its first judge call leaves) before the next
                            await asyncio.sleep(0)  # is read (a full window waits for a trace's end below anyway)
                    if not pending[0].done():
                        continue
                elif not pending:
                    return
                if not pending[0].done():
                    _load_finish(warm)
                    await progress()
                batch = done()
                if batch:
                    yield batch
            # interrupted: calls in flight finish (and are cached) or are cancelled after the grace period
            self.interrupted = True
            if pending:
                _, late = await asyncio.wait(pending, timeout=STOP_GRACE_S)
                for fut in late:
                    fut.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
            batch = []
            while pending:
                fut = pending.popleft()
                if not fut.cancelled() and fut.exception() is None:
                    batch.append(fut.result())  # finished traces are kept: the store records them
            if batch:
                yield batch
        finally:
            for fut in pending:
                fut.cancel()
            if stop is not None:
                stop.cancel()

    def _read(self, source: Source, input_format: str | None, strict: bool,
              tap: Any) -> Iterator[tuple[str, Trace | InputIssue]]:
        """The input's records; each Trace counted by the planner when there is one."""
        records = _records(source, input_format, strict, tap)
        planner = self.planner
        if planner is None:
            return records
        return _counted(records, planner)

    def stream(self, source: Source, *, input_format: str | None = None, strict: bool = False,
               tap: Any = None, totals: RunTotals | None = None) -> Iterator[TraceResult | InputIssue]:
        """Synchronous stream of results; no event loop unless a metric is async.

        ``tap`` wraps each input file as it is opened (see ``importers.read_traces``); ``totals``
        (``run`` does this) accounts each result for the summaries in the same walk that groups it.
        """
        if not self.plan.is_async:
            plan, result = self.plan, self._result
            for loc, item in self._read(source, input_format, strict, tap):
                if self.cancel is not None and self.cancel.is_set():
                    self.interrupted = True
                    return
                if isinstance(item, InputIssue):
                    yield item
                    continue
                outcome, why = trial_outcome(item)
                yield result(item, loc, {} if outcome == EXCLUDED else score_sync(item, plan), totals, outcome, why)
            return
        for batch in _drive(lambda: self._batches(source, input_format, strict, tap, totals), self.loop):
            yield from batch

    def run(self, source: Source, *, input_format: str | None = None, strict: bool = False,
            keep_traces: bool = True, intervals: bool = True,
            on_result: Callable[[TraceResult | InputIssue], None] | None = None,
            tap: Any = None, passk_tasks: str = "common", executor: Any = None) -> RunResult:
        """Evaluate everything.

        ``keep_traces=False`` keeps no per-trace results (stream them with ``on_result``) but
        the first ``FAILED_KEPT`` failed ones (``RunResult.failed``); ``intervals=False`` also
        drops the per-trace scores kept for intervals and pass@k, so memory stays constant
        whatever the run's size. ``passk_tasks``: "common" (pass@k curves on one task set) or "all"
        (each k on every task with n >= k; labelled ``task_set: "all"``). ``executor``: None or
        "local" (this process), "dask" (a LocalCluster), "dask:tcp://HOST:8786" (an existing
        cluster), a ``distributed.Client`` or an ``assay.engine.DaskExecutor``: the same result,
        scored by the cluster's workers (README "Running on a cluster").
        """
        if executor is not None and executor != "local":
            from ._dask import run_distributed
            return run_distributed(self, source, executor=executor, input_format=input_format, strict=strict,
                                   keep_traces=keep_traces, intervals=intervals, on_result=on_result, tap=tap,
                                   passk_tasks=passk_tasks)
        started = time.time()
        part = self.accumulate(source, input_format=input_format, strict=strict, keep_traces=keep_traces,
                               intervals=intervals, on_result=on_result, tap=tap, passk_tasks=passk_tasks)
        return self.finish(part, source, started)

    def new_totals(self, intervals: bool = True, passk_tasks: str = "common") -> RunTotals:
        """Empty run totals for this evaluation (with interval columns unless ``intervals=False``)."""
        collector = StatisticsCollector(task_set=passk_tasks) if intervals else None
        return RunTotals(self.dimension_of, {n: m.threshold for n, m in self.instances.items()}, self.dims,
                         collector)

    def accumulate(self, source: Source, *, input_format: str | None = None, strict: bool = False,
                   keep_traces: bool = True, intervals: bool = True,
                   on_result: Callable[[TraceResult | InputIssue], None] | None = None,
                   tap: Any = None, passk_tasks: str = "common") -> RunPartial:
        """Score ``source`` into a RunPartial (what ``run`` finishes; parts of one run merge)."""
        part = RunPartial(self.new_totals(intervals, passk_tasks))
        traces, failed, issues = part.traces, part.failed, part.issues
        n = n_passed = n_failed = 0
        excluded = part.excluded
        judged = [name for name, m in self.instances.items() if m.spec.needs_judge]
        retest = RetestTotals(judged) if self.plan.repeats > 1 and judged else None
        jury = JuryTotals(judged, [j["model"] for j in self.judge.info()]) if isinstance(self.judge, Jury) else None
        part.retest, part.jury = retest, jury
        for item in self.stream(source, input_format=input_format, strict=strict, tap=tap, totals=part.totals):
            if isinstance(item, InputIssue):
                issues.append(item)
            else:
                n += 1
                n_passed += item.passed is True
                n_failed += item.passed is False
                if item.outcome is not None:
                    if item.outcome == FAILED:
                        part.n_failed_runs += 1
                    else:
                        kind = fault_kind(item.outcome_reason)
                        entry = excluded.get(kind)
                        if entry is None:
                            excluded[kind] = {"n": 1, "reason": item.outcome_reason[:500]}
                        else:
                            entry["n"] += 1
                if retest is not None:
                    retest.add(item)
                if jury is not None:
                    jury.add(item)
            if on_result is not None:
                on_result(item)
            if type(item) is TraceResult and (keep_traces or (item.passed is False and len(failed) < FAILED_KEPT)):
                kept = item if item.trace is None else item.replace(trace=None)  # inputs are not kept
                (traces if keep_traces else failed).append(kept)
        part.n, part.n_passed, part.n_failed = n, n_passed, n_failed
        part.interrupted = self.interrupted
        return part

    def finish(self, part: RunPartial, source: Source, started: float) -> RunResult:
        """The RunResult of an accumulated (or merged) run: summaries, intervals, pass@k, run info."""
        finished = time.time()
        dims = sorted(set(self.dimension_of.values()))
        run = RunRecord(
            assay_version=__version__,
            started_at=_dt.datetime.fromtimestamp(started, _dt.timezone.utc).isoformat(),
            duration_s=round(finished - started, 3),
            n_traces=part.n, n_passed=part.n_passed, n_failed=part.n_failed, n_input_issues=len(part.issues),
            metrics=[{"name": n, "metric": m.spec.name, "version": m.spec.version, "dimension": m.spec.dimension,
                      "judge_calls": m.spec.judge_calls, "params": _params(m)} for n, m in self.instances.items()],
            skipped_metrics=dict(self.skipped),
            default_set=DEFAULT_SET_VERSION if self.default_set else None,
            repeats=self.plan.repeats,
            dimension_weights={d: self.dims.weight(d) for d in dims},
            dimension_thresholds={d: self.dims.threshold(d) for d in dims},
            interrupted=self.interrupted or part.interrupted,
        )
        if part.n_failed_runs:
            run.n_failed_runs = part.n_failed_runs
        if part.excluded:
            run.n_excluded = sum(e["n"] for e in part.excluded.values())
            run.excluded = {k: dict(e) for k, e in part.excluded.items()}
        if part.judge is not None:
            run.judge = {"model": getattr(self.judge, "model", type(self.judge).__name__), **part.judge.as_dict()}
        elif self.judge is not None:
            run.judge = _judge_info(self.judge)
        if isinstance(source, (str, Path)):
            run.inputs = [str(source)]
        elif isinstance(source, Sequence) and source and all(isinstance(s, (str, Path)) for s in source):
            run.inputs = [str(s) for s in source]
        summaries = part.totals.finish()
        collector = part.totals.collector
        statistics = collector.finish(summaries) if collector is not None else {}
        if part.retest is not None and (figures := part.retest.finish()):
            statistics["test_retest"] = figures
        if part.jury is not None and (figures := part.jury.finish()):
            statistics["jury"] = figures
        return RunResult(part.traces, summaries, run, part.issues, statistics, part.failed)


async def _ready(pending: deque[asyncio.Future[Any]]) -> list[Any]:
    """The first pending result (waited for) and every one after it that is already done, in order."""
    batch = [await pending.popleft()]
    while pending and pending[0].done():
        batch.append(pending.popleft().result())
    return batch


def _check_thresholds(judge: Any, metrics: list[Any]) -> None:
    """Each decision threshold (``--judge-threshold METRIC.QUESTION=P``) of a metric in this run names one
    of the yes/no questions it declares (``threshold_questions``): a misspelt one would decide nothing,
    silently. Thresholds of metrics not in the run are left alone (one config serves several runs)."""
    from ..judge import answer_thresholds  # the judge package is loaded: there is a judge

    for key in answer_thresholds(judge):
        name, _, question = key.partition(".")
        for m in metrics:
            if m.spec.name != name:
                continue
            known = tuple(getattr(m, "threshold_questions", ()))
            if question not in known:
                raise ConfigError(f"judge threshold {key}: {name} has " + (
                    f"no yes/no question {question!r}; its questions: {', '.join(known)}" if known else
                    "no yes/no questions a threshold can decide"))


def _counted(records: Iterator[tuple[str, Trace | InputIssue]], planner: Any) -> Iterator[tuple[str, Trace | InputIssue]]:
    add = planner.add
    for record in records:
        if isinstance(record[1], Trace):
            add(record[1])
        yield record
    planner.done()  # read to its end: the plan is exact


def _load_finish(numpy: bool) -> None:
    """The first time the run waits for its judge: build the verdict models its requests went out without
    (pydantic, 60-100 ms here: the first replies need them; see ``assay.judge._shape``) and, with *numpy*, import what
    finishing a run with intervals needs (numpy, ``assay.stats``: ~0.1 s). Both then overlap the first calls
    in flight instead of delaying the first replies or following the last one.

    The work runs in a daemon thread, so the event loop still reads the first replies and sends the next
    requests as they come (imported on the loop, numpy held the first round's replies ~75 ms and the window
    with them). A reply that needs a model being built, or a later import of the same modules on the main
    thread, waits for this one (the shapes' lock, Python's module locks); one that fails here fails there again
    with its own error. Called at every wait: cheap when there is nothing (left) to do."""
    global _LOADER, _NUMPY_TRIED
    if _LOADER is not None and _LOADER.is_alive():
        return
    shapes = sys.modules.get("assay.judge._shape")  # (no judge package loaded: no verdict to build)
    models = shapes is not None and shapes.pending()
    numpy = numpy and not _NUMPY_TRIED and "assay.stats" not in sys.modules
    if not (models or numpy) or _parsing_importer():
        return
    _NUMPY_TRIED = _NUMPY_TRIED or numpy
    _LOADER = threading.Thread(target=_import_finish, args=(models, numpy), name="assay-load-finish", daemon=True)
    _LOADER.start()


_LOADER: threading.Thread | None = None
_NUMPY_TRIED = False


def _parsing_importer() -> bool:
    """Whether an import hook turns source into ``ast`` objects (pytest's assertion rewriting, which covers
    assay under its pytest plugin): CPython 3.11 keeps the AST constructor's recursion depth per interpreter,
    so two threads parsing at once fail with "SystemError: AST constructor recursion depth mismatch" in
    either thread, the caller's included. The run's end then imports on the main thread."""
    return any(type(finder).__module__.startswith("_pytest") for finder in sys.meta_path)


def _load_end(work: Callable[[], None]) -> None:
    """Run *work* (``Evaluation.near_end``) in a daemon thread; a failure is the caller's to meet again later."""
    if _parsing_importer():
        return

    def run() -> None:
        try:
            work()
        except Exception:  # noqa: BLE001 - a warm-up: what it prepares is done again where it is needed
            pass
    threading.Thread(target=run, name="assay-load-end", daemon=True).start()


def _import_finish(models: bool, numpy: bool) -> None:
    try:
        if models:  # first: the first replies need them, the run's end needs numpy
            from ..judge._shape import build_pending

            build_pending()
        if numpy:
            import numpy as _np  # noqa: F401

            from .. import stats  # noqa: F401
    except Exception:  # noqa: BLE001 - the run imports them again where it needs them, and reports a failure there
        pass


HELD = 16
"""Results kept for the input order, as a multiple of the window of traces in flight. A trace whose judge call
is slow holds back the results after it (they are written in input order), but not the traces after those:
the window counts traces being scored, so reading goes on while this many results wait behind the slow one.
With the window counting every result not yet written, a judge whose calls were 1% 2 s and the rest 50 ms
stalled a 1,000-trace run for 2 s every ~256 traces: 6.8-8.6 s where its calls needed 1.1 s at 64 in flight
(3.3 s now). The bound is memory's: 4,096 results by default, each with its trace when the run keeps inputs."""

STOP_GRACE_S = 3.0
"""Seconds judge calls in flight at an interrupt get to finish (their verdicts are cached)."""


async def _wait_for(event: threading.Event) -> None:
    """Return once ``event`` is set (polled: a signal handler cannot wake an event loop by itself)."""
    while not event.is_set():
        await asyncio.sleep(0.05)


def _params(m: Any) -> dict[str, Any]:
    import dataclasses
    return {f.name: getattr(m, f.name) for f in dataclasses.fields(m) if f.init}


def _judge_info(judge: Any) -> dict[str, Any]:
    info: dict[str, Any] = {"model": getattr(judge, "model", type(judge).__name__)}
    stats = getattr(judge, "stats", None)
    if stats is not None and hasattr(stats, "as_dict"):
        info.update(stats.as_dict())
    if isinstance(judge, Jury):
        info["jurors"] = judge.info()
    return info


def _drive(factory: Callable[[], AsyncGenerator[Any, None]],
           loop: asyncio.AbstractEventLoop | None = None) -> Iterator[Any]:
    """Iterate an async generator from sync code: on *loop* (running in another thread) when given,
    else on a new loop, in a worker thread if a loop is already running in this one."""
    if loop is not None:
        agen = factory()
        try:
            while True:
                try:
                    yield asyncio.run_coroutine_threadsafe(agen.__anext__(), loop).result()
                except StopAsyncIteration:
                    return
        finally:
            asyncio.run_coroutine_threadsafe(agen.aclose(), loop).result()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        loop = asyncio.new_event_loop()
        agen = factory()
        try:
            while True:
                try:
                    yield loop.run_until_complete(agen.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            try:
                loop.run_until_complete(agen.aclose())
            finally:
                _shutdown(loop)
        return
    import queue
    q: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=1024)
    stop = threading.Event()

    def worker() -> None:
        async def main() -> None:
            async for item in factory():
                if stop.is_set():
                    return
                q.put(("item", item))
        try:
            asyncio.run(main())
            q.put(("end", None))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            q.put(("error", exc))

    t = threading.Thread(target=worker, name="assay-engine", daemon=True)
    t.start()
    try:
        while True:
            kind, value = q.get()
            if kind == "item":
                yield value
            elif kind == "error":
                raise value
            else:
                return
    finally:
        stop.set()


def _shutdown(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is left on the loop and let it finish, as ``asyncio.run`` does, then close.

    Judge backends park a task that closes their HTTP client when cancelled; without this the
    client's connections would be left to a loop that no longer runs.
    """
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
