"""What the report needs from a run streamed past it, in memory that does not grow with its traces.

A run of a million traces cannot keep every ``TraceResult`` (kilobytes each, with reasons) just
to draw a page that shows ``MAX_TRACES`` rows. ``ReportDigest`` watches the results stream and
keeps the rows the table would pick (failed and errored first, then the rest, in input order),
every score as a float (8 bytes each: the histograms show all of them) and the task ids behind
each metric; ``render_report(digest.result(run), scores=digest)`` draws the same page as the
whole run would.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any

from ..model import RunResult, TraceResult
from ._conversation import trace_status


class ReportDigest:
    """Feed it each ``TraceResult`` of a run (``add``); it keeps at most ``limit`` of them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.n_traces = self.n_bad = 0
        self.metric_scores: dict[str, array[float]] = {}
        self.metric_tasks: dict[str, set[str]] = {}
        self.dimension_scores: dict[str, array[float]] = {}
        self.dimension_thresholds: dict[str, Any] = {}
        self.overall: array[float] = array("d")
        self._bad: list[tuple[int, TraceResult]] = []
        self._rest: list[tuple[int, TraceResult]] = []

    def add(self, t: TraceResult) -> None:
        seq = self.n_traces
        self.n_traces += 1
        for name, r in t.metrics.items():
            if r.score is not None:
                self.metric_scores.setdefault(name, array("d")).append(r.score)
                self.metric_tasks.setdefault(name, set()).add(t.task_id)
        for d, s in t.dimensions.items():
            self.dimension_thresholds[d] = s.threshold
            if s.score is not None:
                self.dimension_scores.setdefault(d, array("d")).append(s.score)
            else:
                self.dimension_scores.setdefault(d, array("d"))
        if t.overall is not None:
            self.overall.append(t.overall)
        bad = trace_status(t) in ("fail", "error")
        self.n_bad += bad
        kept = self._bad if bad else self._rest
        if len(kept) < self.limit:
            kept.append((seq, t if t.trace is None else t.replace(trace=None)))

    def extend(self, traces: Iterable[TraceResult]) -> ReportDigest:
        for t in traces:
            self.add(t)
        return self

    def traces(self) -> list[TraceResult]:
        """The rows the table shows: failed and errored first up to ``limit``, then the rest, in input order."""
        picked = (self._bad + self._rest)[:self.limit]
        return [t for _, t in sorted(picked, key=lambda x: x[0])]

    def result(self, run: RunResult) -> RunResult:
        """``run`` with the kept traces in place of all of them (the counts stay the run's)."""
        import msgspec

        return msgspec.structs.replace(run, traces=self.traces())
