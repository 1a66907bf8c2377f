"""Running a command's work: a run scored into its sinks (the store, the outputs, progress), and the
run store and report for ``assay runs`` and ``assay report``.

The store and the report are independent layers (neither imports the other); this module is
where they meet: a run streams into the store while it is scored, and reports load runs from it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .._files import check_writable
from ..engine import Evaluation
from ..engine._calls import plan_inputs, planner_for
from ..engine._sinks import ContextSink, Each, run_into
from ..engine._spec import RunSpec
from ..errors import ConfigError
from ..importers import check_file
from ..model import RunResult
from ..store import InputTap, RunStore, default_store_path, load_run, load_traces
from ..store._recording import STORED_INPUTS_OTHER, STORED_INPUTS_PASSED, InputBudget, StoreSink
from ._cards import apply_cards, resolve_cards
from ._outputs import Output, ReportSink, keeps_traces, output_sinks
from ._signals import stop_on_signals

Progress = Callable[..., Any]
"""Makes the progress display of a run: called with ``stats`` (the judge's counters or None),
``model``, ``planned_calls`` (an ``engine._calls.CallPlan`` counted as the input is read: its
``total`` so far, exact once ``complete``; or None) and ``read`` ((bytes read so far, total bytes
or None)); returns a context manager with ``trace_done()``."""


def store_path(store: str | None, no_store: bool) -> Path | None:
    """The run store file for ``--store`` / ``--no-store`` (default: $ASSAY_STORE or the user data dir)."""
    if store and no_store:
        raise ConfigError("give --store PATH or --no-store, not both")
    if no_store:
        return None
    return Path(store).expanduser() if store else default_store_path()


def open_store(store: str | None) -> RunStore:
    """The run store named by --store, else the default one; ConfigError when it is off or missing."""
    path = Path(store).expanduser() if store else default_store_path()
    if path is None:
        raise ConfigError("the run store is off (ASSAY_STORE=off); pass --store PATH")
    if not path.exists():
        raise ConfigError(f"no run store at {str(path)!r} yet: `assay run` creates it (or pass --store PATH)")
    return RunStore(path)


def run_files(paths: list[str], spec: RunSpec, *, outputs: Iterable[Output] = (), fmt: str | None = None,
              store: Path | None = None, judge_cards: tuple[str, ...] = (), progress: Progress | None = None,
              table: Callable[[RunResult], str] | None = None,
              near_end: Callable[[], None] | None = None) -> RunResult:
    """Score ``paths`` as ``spec`` says, streaming into ``store`` (when given), the ``outputs`` (``(path, format,
    flag)``; html is the report) and stdout (``fmt``: json, jsonl, junit or csv are written there; table or None:
    nothing). The judge is built here, once, from ``spec.judge``.

    Every output path is checked before any scoring; each file is written atomically once the run is
    done (jsonl streams into a temporary file renamed at the end), none when it is interrupted.
    SIGINT/SIGTERM wind the run down (a second one exits).

    ``progress``: see :data:`Progress` (None: no progress). ``judge_cards``: --judge-card files or stored
    ids (without any, the store's cards for this judge are used where they fit). ``table``: renders
    the table for a ``.txt`` output. ``near_end``: see ``Evaluation.near_end`` (the CLI imports its table's
    modules while the last replies come).
    """
    judge_obj = spec.judge.build() if spec.judge is not None else None
    if judge_cards and judge_obj is None:
        raise ConfigError("--judge-card given but no judge: pass --judge (the card is for one judge)")
    # a plan has no verdicts to correct
    cards = resolve_cards(judge_cards, store, judge_obj.model) if judge_obj is not None and not spec.dry_run \
        else ([], False)
    outputs = list(outputs)
    html = any(f == "html" for _, f, _ in outputs)
    evaluation = Evaluation.from_spec(spec, judge=judge_obj, attach_traces=store is not None or html,
                                      cancel=threading.Event())
    evaluation.near_end = near_end
    for p in paths:  # before the store records a run that cannot start, or a judge is paid for the files before
        check_file(p, spec.input_format)
    written = output_sinks(outputs, fmt, table=table, inputs=[*paths, *([store] if store is not None else [])],
                           dimensions={name: m.spec.dimension for name, m in evaluation.instances.items()})
    tap = InputTap(paths)  # hashes and sizes taken while the inputs are scored: each is read once
    inputs = [{"path": p, "sha256": None, "bytes": None} for p in tap.paths]
    stats = getattr(judge_obj, "stats", None)
    planned = None
    if stats is not None and "-" not in paths:  # (stdin: no plan, as it cannot be read again to complete one)
        if spec.executor in (None, "local"):  # counted as the run reads its input: no read before the first call
            evaluation.planner = planner_for(evaluation)
            planned = evaluation.planner.plan
        else:  # Dask workers read the input: planned here beforehand
            planned = plan_inputs(evaluation, paths, spec.input_format)
    sinks: list[Any] = []
    if store is not None:  # this module's input caps, so tests can lower them
        sinks.append(StoreSink(evaluation, store, inputs, InputBudget(STORED_INPUTS_PASSED, STORED_INPUTS_OTHER)))
    report = [s for s in written if isinstance(s, ReportSink)]
    sinks += [s for s in written if s not in report]
    if progress is not None:
        display = progress(stats=stats, model=getattr(judge_obj, "model", None),
                           planned_calls=planned,
                           read=(tap.bytes_read, tap.total_bytes()))
        bar = ContextSink(display)
        sinks += [bar, Each(lambda _item: display.trace_done())]  # each trace on the progress line
    sinks += report  # the report last: after the progress line is gone

    def complete(result: RunResult) -> None:
        nonlocal planned
        run = result.run
        run.max_errors = spec.max_errors
        if planned is not None and not planned.complete:  # interrupted before its input was read to the end
            planned = plan_inputs(evaluation, paths, spec.input_format) \
                if all(os.path.isfile(p) for p in paths) else None  # (a pipe cannot be read again)
        if planned is not None:
            run.planned_judge_calls = planned.total
            run.judge_plan = {m: {"traces": planned.traces[m], "calls": planned.calls[m]} for m in planned.calls}
        apply_cards(result, *cards, evaluation.instances, judge_obj)

    try:
        with stop_on_signals(evaluation.cancel):  # type: ignore[arg-type]
            return run_into(evaluation, paths, spec, sinks, keep_traces=keeps_traces(outputs, fmt), tap=tap,
                            complete=complete)
    finally:
        if judge_obj is not None:  # the judge package is loaded only when a judge is in use
            from ..judge._cache import close_caches

            close_caches(judge_obj)


def make_report(ref: str, output: str, *, store: str | None = None, comparison: str | None = None,
                baseline: str | None = None, title: str | None = None, max_traces: int | None = None,
                screenshot: str | None = None, duplicates: str | None = None) -> RunResult:
    """``assay report``: load the run (id, prefix, latest, results file) and its traces; write HTML (and PNG).

    The comparison section comes from ``comparison`` (a JSON file) or is computed against ``baseline``.
    """
    from ..analysis._compare import compare_runs  # (what a run does not need: loaded by `assay report` only)
    from ..report import MAX_TRACES, ReportDigest, write_report
    from ..report.screenshot import screenshot as take_screenshot

    if comparison and baseline:
        raise ConfigError("give --comparison FILE or --baseline RUN, not both")
    read = [r for r in (ref, comparison, baseline, store or default_store_path()) if r]  # (results files, the store)
    for flag, path in (("-o", output), ("--screenshot", screenshot)):
        if path:
            check_writable(path, flag, uses=read)
    if max_traces is None:
        max_traces = MAX_TRACES

    digest = None
    if baseline:  # pairing the two runs trace by trace needs all of both
        result = load_run(ref, store=store)
    else:  # the page shows max_traces rows: stream the rest past a digest, as `assay run --html` does
        digest = ReportDigest(max_traces)
        result = load_run(ref, store=store, each=digest.add)
        result = digest.result(result)
    traces = load_traces(result, store=store)
    comp = base_run = None
    if baseline:
        base_run = load_run(baseline, store=store)
        comp = compare_runs(base_run, result, duplicates=duplicates)
    if comparison:
        try:
            comp = json.loads(Path(comparison).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--comparison {comparison!r}: cannot read a JSON comparison: {exc}") from None
    write_report(output, result, traces=traces, comparison=comp, title=title, max_traces=max_traces,
                 baseline=base_run, scores=digest)
    if screenshot:
        take_screenshot(output, screenshot)
    return result

