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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._files import atomic_write, check_writable, write_atomic
from ..engine import Evaluation
from ..analysis._compare import compare_runs
from ..engine._calls import plan_inputs
from ..engine._sinks import ContextSink, Each, Sink, run_into
from ..engine._spec import RunSpec
from ..errors import ConfigError, DataError
from ..model import InputIssue, RunResult, TraceResult, encode_run, encode_summary_record, encode_trace
from ..store import InputTap, RunStore, default_store_path, load_run, load_traces
from ..store._recording import STORED_INPUTS_OTHER, STORED_INPUTS_PASSED, InputBudget, StoreSink
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
    stats = getattr(judge_obj, "stats", None)
    planned = plan_inputs(evaluation, paths, spec.input_format) if stats is not None else None
    sinks: list[Any] = []
    if store is not None:  # this module's input caps, so tests can lower them
        sinks.append(StoreSink(evaluation, store, inputs, InputBudget(STORED_INPUTS_PASSED, STORED_INPUTS_OTHER)))
    sinks += [_Document(path, f) for path, f, _ in outputs if f in _DOCUMENTS]
    if fmt in ("json", "junit"):
        sinks.append(_Document(None, fmt))
    # streamed files are renamed into place after the documents are written
    sinks += [_jsonl(path) for path, f, _ in outputs if f == "jsonl"]
    sinks += [_csv(path, evaluation) for path, f, _ in outputs if f == "csv"]
    if fmt == "jsonl":
        sinks.append(_jsonl(None))
    elif fmt == "csv":
        sinks.append(_csv(None, evaluation))
    if progress is not False:
        sinks.append(ContextSink(RunProgress(
            stats=stats, model=getattr(judge_obj, "model", None),
            planned_calls=planned.total if planned is not None else None,
            read=(tap.bytes_read, tap.total_bytes()), tty=sys.stderr.isatty(), interval=progress_every)))
        bar = sinks[-1]
        sinks.append(Each(lambda _item: bar.value.trace_done()))  # each trace on the progress line
    if html:
        sinks.append(_Report(html))

    def complete(result: RunResult) -> None:
        run = result.run
        run.max_errors = spec.max_errors
        if planned is not None:
            run.planned_judge_calls = planned.total
            run.judge_plan = {m: {"traces": planned.traces[m], "calls": planned.calls[m]} for m in planned.calls}
        apply_cards(result, *cards, evaluation.instances, judge_obj)

    # per-trace results are kept only for whole-document outputs (the report has its digest); the
    # table reads summaries and the first failed traces
    keep = bool(({f for _, f, _ in outputs} | {fmt}) & {"json", "junit"})
    try:
        with _stop_on_signals(evaluation.cancel):  # type: ignore[arg-type]
            return run_into(evaluation, paths, spec, sinks, keep_traces=keep, tap=tap, complete=complete)
    finally:
        if judge_obj is not None:  # the judge package is loaded only when a judge is in use
            from ..judge._cache import close_caches

            close_caches(judge_obj)


_DOCUMENTS = ("json", "junit", "table")
"""Outputs written whole once the run is done (jsonl and csv stream; html is the report)."""


class _Stream(Sink):
    """Results written as they come (JSON Lines, CSV) into a file, renamed into place when the run is done
    (nothing on abort), or stdout (``path`` None): a header, lines per trace, a footer."""

    def __init__(self, path: str | None, lines: Callable[[TraceResult], bytes], header: bytes = b"",
                 footer: Callable[[RunResult], bytes] | None = None) -> None:
        self.file = ContextSink(atomic_write(path)) if path is not None else None
        self.lines, self.header, self.footer = lines, header, footer

    def begin(self, spec: RunSpec) -> None:
        if self.file is not None:
            self.file.begin(spec)
        self.out = self.file.value if self.file is not None else sys.stdout.buffer
        if self.header:
            self.out.write(self.header)

    def add(self, item: TraceResult | InputIssue) -> None:
        if isinstance(item, TraceResult):
            self.out.write(self.lines(item))

    def finish(self, result: RunResult) -> None:
        if self.footer is not None:
            self.out.write(self.footer(result))
        self.out.flush()
        if self.file is not None:
            self.file.finish(result)

    def abort(self, reason: str) -> None:
        if self.file is not None:
            self.file.abort(reason)


def _jsonl(path: str | None) -> _Stream:
    return _Stream(path, lambda item: encode_trace(item) + b"\n",
                   footer=lambda result: encode_summary_record(result) + b"\n")


def _csv(path: str | None, evaluation: Evaluation) -> _Stream:
    """CSV streamed as JSON Lines is: memory does not grow with the run."""
    from .. import report  # the package's writer, looked up when used
    dims = {name: m.spec.dimension for name, m in evaluation.instances.items()}
    return _Stream(path, lambda item: report.csv_rows(item, dims), header=report.csv_header())


class _Document(Sink):
    """A whole-run output (json, junit, csv, the table) into a file, atomically, or stdout (``path`` None)."""

    def __init__(self, path: str | None, fmt: str) -> None:
        self.path, self.fmt = path, fmt

    def finish(self, result: RunResult) -> None:
        if self.path is not None:
            write_atomic(self.path, _document(result, self.fmt))
            return
        sys.stdout.flush()
        sys.stdout.buffer.write(_document(result, self.fmt))
        sys.stdout.buffer.flush()


class _Report(Sink):
    """The HTML report: a digest of the stream (memory follows what the page shows, not the run's size)
    and the input traces worth showing, written once the run is done."""

    def __init__(self, paths: list[str]) -> None:
        from ..report import MAX_TRACES, ReportDigest
        self.paths, self.digest, self.traces = paths, ReportDigest(MAX_TRACES), {}

    def add(self, item: TraceResult | InputIssue) -> None:
        if isinstance(item, TraceResult):
            self.digest.add(item)
            if item.trace is not None and _worth_keeping(item, self.traces):
                self.traces[item.source or item.id] = item.trace

    def finish(self, result: RunResult) -> None:
        from ..report import write_report
        shown = self.digest.result(result)
        for path in self.paths:
            write_report(path, shown, traces=self.traces, scores=self.digest)


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


def _document(result: RunResult, fmt: str) -> bytes:
    """The whole-run outputs: json, junit, or the table as plain text (``-o results.txt``)."""
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
    from ..report import to_junit
    return to_junit(result).encode("utf-8")


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

