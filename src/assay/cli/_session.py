"""Glue for ``assay run``, ``assay runs`` and ``assay report``: judge, outputs, progress, store, report.

The store and the report are independent layers (neither imports the other); this module is
where they meet: a run streams into the store while it is scored, and reports load runs from it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from .._files import atomic_write, check_writable, write_atomic
from ..engine import Evaluation
from ..engine._compare import compare_runs
from ..engine._calls import plan_inputs
from ..engine._spec import RunSpec
from ..errors import ConfigError, DataError
from ..model import InputIssue, RunResult, TraceResult, encode_run, encode_summary_record, encode_trace
from ..store import InputTap, RunStore, default_store_path, load_run, load_traces
from ..store._recording import STORED_INPUTS_OTHER, STORED_INPUTS_PASSED, InputBudget, given, judge_model, metric_specs, run_config
from ._cards import apply as apply_cards, resolve_cards
from ._progress import RunProgress

# The report package (HTML templates, CSV and JUnit writers) is imported where a report or one of
# those formats is written: most runs write none, and it is a tenth of `assay run`'s start-up.



def _json_default(o: Any) -> Any:
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def dumps(obj: Any, indent: int | None = None) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=indent, default=_json_default)


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


def run_session(paths: list[str], spec: RunSpec, *, outputs: list[tuple[str, str, str]], fmt: str | None,
                progress: bool | None, store: Path | None = None, progress_every: float = 10.0,
                judge_cards: tuple[str, ...] = ()) -> RunResult:
    """Score ``paths`` as ``spec`` says, streaming into ``store`` (when given), the ``outputs`` (``(path, format,
    flag)``; html is the report) and stdout (``fmt``: json, jsonl, junit or csv are written there; table or None:
    nothing).

    Every output path is checked before any scoring; each file is written atomically once the run is
    done (jsonl streams into a temporary file renamed at the end), none when it is interrupted.

    ``progress``: None shows a bar on a terminal and a plain line every ``progress_every`` s
    elsewhere; True the same; False nothing. ``judge_cards``: --judge-card files or stored
    ids (without any, the store's cards for this judge are used where they fit).
    """
    judge_obj = spec.judge.build() if spec.judge is not None else None
    if judge_cards and judge_obj is None:
        raise ConfigError("--judge-card given but no judge: pass --judge (the card is for one judge)")
    # a plan has no verdicts to correct
    cards = resolve_cards(judge_cards, store, judge_obj.model) if judge_obj is not None and not spec.dry_run \
        else ([], False)
    html = [path for path, f, _ in outputs if f == "html"]
    evaluation = Evaluation.from_spec(spec, judge=judge_obj, attach_traces=store is not None or bool(html),
                                      cancel=threading.Event())
    for p in paths:  # before the store records a run that cannot start
        if p != "-" and not os.path.exists(p):
            raise DataError("no such file", source=p)
    for path, _, flag in outputs:  # before any scoring or judge spending
        check_writable(path, flag)
    tap = InputTap(paths)  # hashes and sizes taken while the inputs are scored: each is read once
    inputs = [{"path": p, "sha256": None, "bytes": None} for p in tap.paths]
    try:
        with ExitStack() as stack:
            stack.enter_context(_stop_on_signals(evaluation.cancel))  # type: ignore[arg-type]
            result, report_traces, digest = _scored(stack, spec, evaluation, judge_obj, paths, tap, inputs, store,
                                                    bool(html), fmt, outputs, progress, progress_every, cards)
    except _Interrupted as stopped:  # the output files were left as they were; the store says interrupted
        return stopped.result
    finally:
        close_caches(judge_obj)
    if html:  # from the digest of the stream: memory follows what the page shows, not the run's size
        from ..report import write_report
        shown = digest.result(result)
        for path in html:
            write_report(path, shown, traces=report_traces, scores=digest)
    return result


def close_caches(judge: Any) -> None:
    """Close the judge caches of *judge* (a jury's too) once the run is scored: at a known point,
    not whenever the interpreter gets to them (see ``cli._common.exit_quickly``)."""
    todo, seen = [judge], 0
    while todo and seen < 256:
        layer, seen = todo.pop(), seen + 1
        if layer is None:
            continue
        cache = getattr(layer, "cache", None)
        if callable(getattr(cache, "close", None)):
            cache.close()
        todo.append(getattr(layer, "inner", None))
        todo.extend(getattr(layer, "jurors", None) or ())


class _Interrupted(Exception):
    """Raised inside the run's ExitStack so that every output being written is discarded."""

    def __init__(self, result: RunResult) -> None:
        self.result = result


@contextmanager
def _stop_on_signals(cancel: threading.Event) -> Iterator[None]:
    """SIGINT / SIGTERM set ``cancel`` (the engine winds down); a second one exits at once (130)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if cancel.is_set():
            os._exit(130)  # the second Ctrl-C: the user wants out now; finished calls are cached
        cancel.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _scored(stack: ExitStack, spec: RunSpec, evaluation: Evaluation, judge_obj: Any, paths: list[str], tap: InputTap,
            inputs: list[dict[str, Any]], store: Path | None, html: bool, fmt: str | None,
            outputs: list[tuple[str, str, str]], progress: bool | None, progress_every: float,
            cards: tuple[list[Any], bool] = ([], False)) -> tuple[RunResult, dict[str, Any], Any]:
    """The run itself, with the store, the outputs and progress entered on ``stack``."""
    input_format, label = spec.input_format, spec.label
    recorder = None
    if store is not None:
        recorder = stack.enter_context(RunStore(store).start(
            inputs=inputs, metrics=metric_specs(evaluation), judge=judge_model(judge_obj),
            config=run_config(evaluation, input_format, spec.strict, label)))
    report_traces: dict[str, Any] = {}
    digest = None
    if html:
        from ..report import MAX_TRACES, ReportDigest
        digest = ReportDigest(MAX_TRACES)
    store_input = InputBudget(STORED_INPUTS_PASSED, STORED_INPUTS_OTHER)  # this module's, so tests can lower them
    sinks = [stack.enter_context(atomic_write(path)) for path, f, _ in outputs if f == "jsonl"]
    if fmt == "jsonl":
        sinks.append(sys.stdout.buffer)
    callbacks = []
    if evaluation.attach_traces:
        def keep(item: TraceResult | InputIssue) -> None:
            trace = item.trace if isinstance(item, TraceResult) else None
            if recorder is not None:
                recorder.add(item, trace if trace is not None and store_input(item) else None)
            if digest is not None and isinstance(item, TraceResult):
                digest.add(item)
                if trace is not None and _worth_keeping(item, report_traces):
                    report_traces[item.source or item.id] = trace
        callbacks.append(keep)
    if sinks:
        def write(item: TraceResult | InputIssue) -> None:
            if isinstance(item, TraceResult):
                line = encode_trace(item) + b"\n"
                for sink in sinks:
                    sink.write(line)
        callbacks.append(write)
    stats = getattr(judge_obj, "stats", None)
    planned = plan_inputs(evaluation, paths, input_format) if stats is not None else None
    if progress is not False:
        tracker = stack.enter_context(RunProgress(
            stats=stats, model=getattr(judge_obj, "model", None),
            planned_calls=planned.total if planned is not None else None,
            read=(tap.bytes_read, tap.total_bytes()), tty=sys.stderr.isatty(), interval=progress_every))

        def tick(item: TraceResult | InputIssue) -> None:
            tracker.trace_done()
        callbacks.append(tick)

    def on_result(item: TraceResult | InputIssue) -> None:
        for cb in callbacks:
            cb(item)

    # per-trace results are kept only for whole-document outputs (the report has its digest); the
    # table reads summaries and the first failed traces
    whole = {f for _, f, _ in outputs} | {fmt}
    keep = bool(whole & {"json", "junit", "csv"})
    result = evaluation.run_spec(paths, spec, keep_traces=keep, on_result=on_result, tap=tap)
    run = result.run
    run.input_files = tap.info()
    run.update(label)
    run.max_errors = spec.max_errors
    if planned is not None:
        run.planned_judge_calls = planned.total
        run.judge_plan = {m: {"traces": planned.traces[m], "calls": planned.calls[m]} for m in planned.calls}
    run.input_format = input_format or None
    if recorder is not None:
        run.run_id = recorder.run_id
    apply_cards(result, *cards, evaluation.instances, judge_obj)
    if evaluation.interrupted:
        if recorder is not None:
            recorder.abort("interrupted", "interrupted (SIGINT/SIGTERM): rerun the same command to resume")
        raise _Interrupted(result)
    if recorder is not None:
        recorder.finish(result)
    if sinks:
        summary = encode_summary_record(result) + b"\n"
        for sink in sinks:
            sink.write(summary)
            sink.flush()
    for path, f, _ in outputs:
        if f in ("json", "junit", "csv", "table"):
            write_atomic(path, _document(result, f))
    if fmt in ("json", "junit", "csv"):
        sys.stdout.flush()
        sys.stdout.buffer.write(_document(result, fmt))
        sys.stdout.buffer.flush()
    return result, report_traces, digest


def _document(result: RunResult, fmt: str) -> bytes:
    """The whole-run outputs: json, junit, csv, or the table as plain text (``-o results.txt``)."""
    if fmt == "json":
        return encode_run(result, indent=2) + b"\n"
    if fmt == "table":
        import io

        from rich.console import Console

        from ._render import table
        buf = io.StringIO()
        table(result, Console(file=buf, width=100, color_system=None, force_terminal=False, emoji=False,
                              highlight=False))
        return buf.getvalue().encode("utf-8")
    from ..report import to_csv, to_junit
    return (to_junit(result) if fmt == "junit" else to_csv(result)).encode("utf-8")


def _worth_keeping(item: TraceResult, kept: dict[str, Any]) -> bool:
    """Input traces held in memory for --html: as many as the report has views for, plus failed ones up to
    twice that (the report shows failed traces first), so memory follows what is shown, not the run's size."""
    from ..report import MAX_VIEWS
    return len(kept) < MAX_VIEWS or (item.passed is not True and len(kept) < 2 * MAX_VIEWS)


def make_report(ref: str, output: str, *, store: str | None = None, comparison: str | None = None,
                baseline: str | None = None, title: str | None = None, max_traces: int | None = None,
                screenshot: str | None = None, duplicates: str | None = None) -> RunResult:
    """``assay report``: load the run (id, prefix, latest, results file) and its traces; write HTML (and PNG).

    The comparison section comes from ``comparison`` (a JSON file) or is computed against ``baseline``.
    """
    from ..report import MAX_TRACES, ReportDigest, write_report
    from ..report.screenshot import screenshot as take_screenshot

    if comparison and baseline:
        raise ConfigError("give --comparison FILE or --baseline RUN, not both")
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

