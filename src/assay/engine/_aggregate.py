"""Grouping per-trace metric results by dimension, and streaming run-level summaries.

UAEF's dimension names and default weights, applied correctly (UAEF itself does not): weights are keyed
by the same names the metrics declare, an all-null dimension is absent (not 0.0), the overall
score is the weighted mean over the dimensions that have a score, and a trace passes only when
every metric and every dimension meets its threshold.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..model import DimensionScore, MetricResult, MetricSummary, Warning
from ..model._result import ERROR_WARNINGS
from ._exact import exact_units, float_units, units_mean, units_value

DEFAULT_WEIGHTS: dict[str, float] = {
    "tool_calling": 0.25, "response_quality": 0.25, "responsible_ai": 0.20,
    "performance": 0.10, "multi_turn": 0.10, "reasoning": 0.10, "multi_agent": 0.10,
}
DEFAULT_THRESHOLDS: dict[str, float] = {
    "tool_calling": 0.7, "response_quality": 0.7, "responsible_ai": 0.8,
    "performance": 0.6, "multi_turn": 0.6, "reasoning": 0.6, "multi_agent": 0.6,
}
OTHER_WEIGHT = 0.10
"""Weight of a dimension with no default (custom metrics), unless configured."""
OTHER_THRESHOLD = 0.6


@dataclass(frozen=True, slots=True)
class Dimensions:
    """Weights and thresholds per dimension; unknown dimensions get OTHER_*."""

    weights: Mapping[str, float]
    thresholds: Mapping[str, float]

    @classmethod
    def make(cls, weights: Mapping[str, float] | None = None, thresholds: Mapping[str, float] | None = None) -> "Dimensions":
        return cls({**DEFAULT_WEIGHTS, **(weights or {})}, {**DEFAULT_THRESHOLDS, **(thresholds or {})})

    def weight(self, dim: str) -> float:
        return self.weights.get(dim, OTHER_WEIGHT)

    def threshold(self, dim: str) -> float:
        return self.thresholds.get(dim, OTHER_THRESHOLD)


def group(metrics: Mapping[str, MetricResult], dimension_of: Mapping[str, str],
          dims: Dimensions) -> tuple[dict[str, DimensionScore], float | None, bool | None]:
    """A trace's ``dimensions``, ``overall`` and ``passed`` from its metric results."""
    sums: dict[str, list[float]] = {}
    any_failed = False
    for name, r in metrics.items():
        score = r.score
        if score is None:
            continue
        if r.passed is False:
            any_failed = True
        dim = dimension_of[name]
        acc = sums.get(dim)
        if acc is None:
            sums[dim] = [score, 1]
        else:
            acc[0] += score
            acc[1] += 1
    return _verdict(sums, any_failed, dims)


def _verdict(sums: Mapping[str, list[float]], any_failed: bool,
             dims: Dimensions) -> tuple[dict[str, DimensionScore], float | None, bool | None]:
    """Dimension scores, overall and verdict from per-dimension [sum, count] of metric scores."""
    total_w = weighted = 0.0
    dimensions = {}
    thresholds, weights = dims.thresholds, dims.weights  # what dims.threshold() / weight() read
    for dim, (s, n) in sums.items():
        mean = s / n
        thr, w = thresholds.get(dim, OTHER_THRESHOLD), weights.get(dim, OTHER_WEIGHT)
        passed = mean >= thr
        any_failed |= not passed
        dimensions[dim] = DimensionScore(mean, passed, thr, w, n)
        total_w += w
        weighted += w * mean
    if not dimensions:
        return dimensions, None, None
    overall = weighted / total_w if total_w > 0 else sum(d.score for d in dimensions.values()) / len(dimensions)
    return dimensions, overall, not any_failed


class SummaryBuilder:
    """Per-metric running totals, fed one trace at a time (memory independent of run size).

    Sums of scores and costs are exact (``_exact``): a mean is the correctly rounded mean of its
    scores whatever order or grouping they were added in, so totals built over parts of a run
    and merged give the same digits as one pass.
    """

    FLUSH = 1 << 16
    """Scores buffered per metric before they are folded into the exact sum."""

    def __init__(self, dimension_of: Mapping[str, str], thresholds: Mapping[str, float | None]) -> None:
        self._dimension_of = dimension_of
        self._thresholds = thresholds
        self._units: dict[str, int] = {}
        """Per metric: exact sum of the scores folded so far (units of 2**-1074)."""
        self._buffers: dict[str, array] = {}
        """Per metric: scores not folded into ``_units`` yet."""
        self._cost: dict[str, int] = {}
        """Per metric with a priced judge call: exact sum of cost_usd."""
        self.summaries: dict[str, MetricSummary] = {}

    def add(self, metrics: Mapping[str, MetricResult]) -> None:
        summaries, buffers = self.summaries, self._buffers
        for name, r in metrics.items():
            s = summaries.get(name)
            if s is None:
                s = summaries[name] = MetricSummary(name=name, dimension=self._dimension_of.get(name, "custom"),
                                                    threshold=self._thresholds.get(name))
                buffers[name] = array("d")
            score = r.score
            if score is None:
                s.n_null += 1
                if r.warning in ERROR_WARNINGS:
                    s.n_errored += 1
                if not s.null_reason and r.reason:
                    s.null_reason = r.reason[:500]
            else:
                s.n += 1
                buf = buffers[name]
                buf.append(score)
                if len(buf) >= self.FLUSH:
                    self._fold(name, buf)
                if r.passed:
                    s.n_passed += 1
            if r.warning is not None:
                key = r.warning.value if isinstance(r.warning, Warning) else str(r.warning)
                s.warnings[key] = s.warnings.get(key, 0) + 1
            if r.judge_calls:
                s.judge_calls += r.judge_calls
                s.tokens += r.tokens
                if r.cost_usd is not None:
                    self._cost[name] = self._cost.get(name, 0) + float_units(r.cost_usd)

    def _fold(self, name: str, buf: array) -> None:
        self._units[name] = self._units.get(name, 0) + exact_units(buf)
        del buf[:]

    def _score_units(self, name: str) -> int:
        """The exact sum of metric *name*'s scores."""
        buf = self._buffers.get(name)
        return self._units.get(name, 0) + (exact_units(buf) if buf else 0)

    def merge(self, other: "SummaryBuilder") -> "SummaryBuilder":
        """Add the totals of *other*, which covers the traces after these; returns self.

        Counts and exact sums add; the first ``null_reason`` and the warnings' first-seen order
        are those of a single pass over both parts. Associative: any grouping of consecutive parts
        gives the same totals.
        """
        for name, o in other.summaries.items():
            s = self.summaries.get(name)
            if s is None:
                s = self._new(name)
            _add_counts(s, o)
            units = other._score_units(name)
            if units:
                self._units[name] = self._units.get(name, 0) + units
            if name in other._cost:
                self._cost[name] = self._cost.get(name, 0) + other._cost[name]
        return self

    def _new(self, name: str) -> MetricSummary:
        s = self.summaries[name] = MetricSummary(name=name, dimension=self._dimension_of.get(name, "custom"),
                                                 threshold=self._thresholds.get(name))
        self._buffers[name] = array("d")
        return s

    def finish(self) -> dict[str, MetricSummary]:
        for name, s in self.summaries.items():
            if s.n:
                s.mean = units_mean(self._score_units(name), s.n)
                s.pass_rate = s.n_passed / s.n
            if name in self._cost:
                s.cost_usd = units_value(self._cost[name])
        return dict(sorted(self.summaries.items()))


def _add_counts(s: MetricSummary, o: MetricSummary) -> None:
    """Add the counters of *o* (a later part of the run) to *s*."""
    s.n += o.n
    s.n_null += o.n_null
    s.n_errored += o.n_errored
    s.n_passed += o.n_passed
    if not s.null_reason:
        s.null_reason = o.null_reason
    for key, count in o.warnings.items():
        s.warnings[key] = s.warnings.get(key, 0) + count
    s.judge_calls += o.judge_calls
    s.tokens += o.tokens


class RunTotals(SummaryBuilder):
    """The single walk over each trace's results during a run.

    One loop over a trace's metric results updates its dimension sums (for its ``dimensions``,
    ``overall`` and ``passed``, exactly as ``group`` computes them), the run's per-metric summary
    totals and the interval columns of the statistics collector; nothing per trace is kept here.
    The hot counters live in a plain list per metric (``_slots``) and reach the summaries in
    ``finish``; rarer facts (nulls, warnings, judge accounting) go to the summary directly. With a
    collector the scores live in its columns (the exact sums are taken from them at the end);
    without one they pass through a small buffer.
    """

    def __init__(self, dimension_of: Mapping[str, str], thresholds: Mapping[str, float | None], dims: Dimensions,
                 collector: Any = None) -> None:
        super().__init__(dimension_of, thresholds)
        self._dims, self._collector = dims, collector
        self._slots: dict[str, list[Any]] = {}
        """name -> [summary, dimension, its interval column or None, score buffer or None, scored, passed]."""
        self._traces = 0

    @property
    def collector(self) -> Any:
        return self._collector

    def _slot(self, name: str) -> list[Any]:
        s = self.summaries[name] = MetricSummary(name=name, dimension=self._dimension_of.get(name, "custom"),
                                                 threshold=self._thresholds.get(name))
        col = buf = None
        if self._collector is None:
            buf = self._buffers[name] = array("d")
        else:
            col = self._collector.columns(name)
        slot = self._slots[name] = [s, self._dimension_of.get(name, "custom"), col, buf, 0, 0]
        return slot

    def _new(self, name: str) -> MetricSummary:
        return self._slot(name)[0]

    def add_trace(self, metrics: Mapping[str, MetricResult], task_id: str,
                  outcome: str | None = None) -> tuple[dict[str, DimensionScore], float | None, bool | None]:
        """Account one trace's results; its (dimensions, overall, passed).

        ``outcome`` (``assay.model._outcome``): a ``"failed"`` trial goes to the statistics as a failure,
        an ``"excluded"`` one as excluded, whatever the verdict of its metrics."""
        slots, collector = self._slots, self._collector
        pos = 0 if collector is None else len(collector._task)  # (collector.position(), inlined)
        sums: dict[str, list[float]] = {}
        any_failed = False
        for name, r in metrics.items():
            slot = slots.get(name) or self._slot(name)
            score = r.score
            if score is None:
                self._null(slot[0], r)
                continue
            slot[4] += 1
            passed = r.passed
            if passed:
                slot[5] += 1
            elif passed is False:
                any_failed = True
            acc = sums.get(slot[1])
            if acc is None:
                sums[slot[1]] = [score, 1]
            else:
                acc[0] += score
                acc[1] += 1
            col = slot[2]
            if col is None:
                slot[3].append(score)
            elif col.positions is None and len(col.scores) == pos:  # Column.add's dense case, inlined
                col.scores.append(score)
                col.passed.append(passed is True)
            else:
                col.add(score, passed is True, pos)
            if r.warning is not None or r.judge_calls:
                self._rare(slot[0], r)
        verdict = _verdict(sums, any_failed, self._dims)
        if collector is not None:
            if outcome is None:
                last = collector._last
                if task_id == last[0] and collector._name_at:  # collector.add_trace's case of a task's next trial, inlined
                    collector._task.append(last[1])
                    passed = verdict[2]
                    collector._passed.append(-1 if passed is None else int(passed))
                else:
                    collector.add_trace(task_id, verdict[2])
            else:
                collector.add_trace(task_id, False if outcome == "failed" else None, outcome)
        else:
            self._traces += 1
            if not self._traces % self.FLUSH:
                for name, buf in self._buffers.items():
                    if buf:
                        self._fold(name, buf)
        return verdict

    def _null(self, s: MetricSummary, r: MetricResult) -> None:
        s.n_null += 1
        if r.warning in ERROR_WARNINGS:
            s.n_errored += 1
        if not s.null_reason and r.reason:
            s.null_reason = r.reason[:500]
        self._rare(s, r)

    def _rare(self, s: MetricSummary, r: MetricResult) -> None:
        if r.warning is not None:
            key = r.warning.value if isinstance(r.warning, Warning) else str(r.warning)
            s.warnings[key] = s.warnings.get(key, 0) + 1
        if r.judge_calls:
            s.judge_calls += r.judge_calls
            s.tokens += r.tokens
            if r.cost_usd is not None:
                self._cost[s.name] = self._cost.get(s.name, 0) + float_units(r.cost_usd)

    def _score_units(self, name: str) -> int:
        if self._collector is not None:
            col = self._collector._scores.get(name)
            return exact_units(col.scores) if col is not None else 0  # the column holds every score of the metric
        return super()._score_units(name)

    def merge(self, other: "SummaryBuilder") -> "RunTotals":
        """Add *other* (the totals of the traces after these), its interval columns included."""
        if not isinstance(other, RunTotals) or (self._collector is None) != (other._collector is None):
            raise ValueError("cannot merge run totals kept with and without intervals")
        if self._collector is not None:
            self._collector.merge(other._collector)
        for name, oslot in other._slots.items():
            slot = self._slots.get(name) or self._slot(name)
            _add_counts(slot[0], oslot[0])
            slot[4] += oslot[4]
            slot[5] += oslot[5]
            if name in other._cost:
                self._cost[name] = self._cost.get(name, 0) + other._cost[name]
            if self._collector is None:  # with a collector the scores came with its columns
                units = other._score_units(name)
                if units:
                    self._units[name] = self._units.get(name, 0) + units
        return self

    def finish(self) -> dict[str, MetricSummary]:
        for slot in self._slots.values():
            s = slot[0]
            s.n, s.n_passed = slot[4], slot[5]
        return super().finish()
