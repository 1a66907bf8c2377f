"""Where a run's results go while it is scored, and the one runner that feeds them.

A :class:`RunSink` is told the run's description when it starts (``begin``), gets every result
and input issue in input order (``add``), and is given the finished RunResult (``finish``) - or
told why there will be none (``abort``: an interrupt, an error). The run store, each ``-o``
writer, the HTML report's digest and the progress line are sinks; ``assay run``,
``assay.evaluate`` and the pytest plugin choose theirs and call :func:`run_into`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..model import InputIssue, RunResult, TraceResult
from ._spec import RunSpec

INTERRUPTED = "interrupted (SIGINT/SIGTERM): rerun the same command to resume"
"""The ``abort`` reason of a run stopped by ``Evaluation.cancel`` (a signal); every interrupt's
reason starts with ``interrupted``."""


class RunSink(Protocol):
    """One destination of a run's results."""

    def begin(self, spec: RunSpec) -> None: ...

    def add(self, item: TraceResult | InputIssue) -> None: ...

    def finish(self, result: RunResult) -> None: ...

    def abort(self, reason: str) -> None: ...


class Sink:
    """A sink that does nothing by default: subclass and override what you need."""

    def begin(self, spec: RunSpec) -> None:
        pass

    def add(self, item: TraceResult | InputIssue) -> None:
        pass

    def finish(self, result: RunResult) -> None:
        pass

    def abort(self, reason: str) -> None:
        pass


class Each(Sink):
    """A callback for every result as a sink (``on_result``)."""

    def __init__(self, callback: Callable[[TraceResult | InputIssue], None]) -> None:
        self.add = callback  # type: ignore[method-assign,assignment]


class Aborted(Exception):
    """Handed to a context manager a sink holds when the run is aborted (it discards what it wrote)."""


class ContextSink(Sink):
    """A context manager as a sink: entered at ``begin``, left cleanly at ``finish`` and with
    :class:`Aborted` at ``abort`` (an atomic file write then leaves the file as it was)."""

    def __init__(self, manager: Any) -> None:
        self.manager, self.value, self.open = manager, None, False

    def begin(self, spec: RunSpec) -> None:
        self.value = self.manager.__enter__()
        self.open = True

    def finish(self, result: RunResult) -> None:
        if self.open:
            self.open = False
            self.manager.__exit__(None, None, None)

    def abort(self, reason: str) -> None:
        if not self.open:
            return
        self.open = False
        try:
            self.manager.__exit__(Aborted, Aborted(reason), None)
        except Aborted:
            pass


def run_into(evaluation: Any, source: Any, spec: RunSpec, sinks: Sequence[RunSink], *, keep_traces: bool = True,
             tap: Any = None, complete: Callable[[RunResult], None] | None = None) -> RunResult:
    """Run ``evaluation`` over ``source`` as ``spec`` says, streaming every result into ``sinks`` in order.

    Sinks finish in their order, so a sink that commits atomically (a streamed file renamed into
    place) goes after those that may fail (whole documents): a failure aborts every sink not finished.

    The run's record gets what the spec says about it (name, tags, input format) and the input files
    hashed while read (``tap``); ``complete`` adds the caller's own (before any sink finishes). An interrupted run aborts the sinks (last first) and is returned as it is; an error
    aborts them and propagates.
    """
    begun: list[RunSink] = []
    try:
        for sink in sinks:
            sink.begin(spec)
            begun.append(sink)

        # each sink's add, but Sink's own, which does nothing (an Each sink's add is its callback)
        adds = [sink.add for sink in sinks if getattr(sink.add, "__func__", None) is not Sink.add]

        def on_result(item: TraceResult | InputIssue) -> None:
            for add in adds:
                add(item)

        result = evaluation.run_spec(source, spec, keep_traces=keep_traces,
                                     on_result=(adds[0] if len(adds) == 1 else on_result) if adds else None, tap=tap)
        run = result.run
        if tap is not None:
            run.input_files = tap.info()
        run.update(spec.label)
        run.input_format = spec.input_format
        if complete is not None:
            complete(result)
    except BaseException as exc:
        for sink in reversed(begun):
            sink.abort(_reason(exc))
        raise
    if run.interrupted:
        for sink in reversed(begun):
            sink.abort(INTERRUPTED)
        return result
    done = 0
    try:
        for sink in sinks:
            sink.finish(result)
            done += 1
    except BaseException as exc:  # a writer failed: the sinks not finished yet leave nothing behind
        for sink in reversed(sinks[done:]):
            sink.abort(_reason(exc))
        raise
    return result


def _reason(exc: BaseException) -> str:
    """Why the sinks abort: an interruption (Ctrl-C, or the reader of an output such as ``| head`` went
    away: the run was cut short by its user, and is stored ``interrupted``), else the error."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, BrokenPipeError):
        return "interrupted: an output's reader went away (broken pipe)"
    return f"{type(exc).__name__}: {exc}"
