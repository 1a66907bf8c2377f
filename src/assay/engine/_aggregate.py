"""Grouping per-trace metric results by dimension, and streaming run-level summaries.

UAEF's dimension names and default weights, applied correctly (UAEF itself does not): weights are keyed
by the same names the metrics declare, an all-null dimension is absent (not 0.0), the overall
score is the weighted mean over the dimensions that have a score, and a trace passes only when
every metric and every dimension meets its threshold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..model import DimensionScore, MetricResult, MetricSummary, Warning
from ..model._result import ERROR_WARNINGS

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
    """Per-metric running totals, fed one trace at a time (memory independent of run size)."""

    def __init__(self, dimension_of: Mapping[str, str], thresholds: Mapping[str, float | None]) -> None:
        self._dimension_of = dimension_of
        self._thresholds = thresholds
        self._sums: dict[str, float] = {}
        self.summaries: dict[str, MetricSummary] = {}

    def add(self, metrics: Mapping[str, MetricResult]) -> None:
        summaries, sums = self.summaries, self._sums
        for name, r in metrics.items():
            s = summaries.get(name)
            if s is None:
                s = summaries[name] = MetricSummary(name=name, dimension=self._dimension_of.get(name, "custom"),
                                                    threshold=self._thresholds.get(name))
                sums[name] = 0.0
            score = r.score
            if score is None:
                s.n_null += 1
                if r.warning in ERROR_WARNINGS:
                    s.n_errored += 1
                if not s.null_reason and r.reason:
                    s.null_reason = r.reason[:500]
            else:
                s.n += 1
                sums[name] += score
                if r.passed:
                    s.n_passed += 1
            if r.warning is not None:
                key = r.warning.value if isinstance(r.warning, Warning) else str(r.warning)
                s.warnings[key] = s.warnings.get(key, 0) + 1
            if r.judge_calls:
                s.judge_calls += r.judge_calls
                s.tokens += r.tokens
                if r.cost_usd is not None:
                    s.cost_usd = (s.cost_usd or 0.0) + r.cost_usd

    def finish(self) -> dict[str, MetricSummary]:
        for name, s in self.summaries.items():
            if s.n:
                s.mean = self._sums[name] / s.n
                s.pass_rate = s.n_passed / s.n
        return dict(sorted(self.summaries.items()))


class RunTotals(SummaryBuilder):
    """The single walk over each trace's results during a run.

    One loop over a trace's metric results updates its dimension sums (for its ``dimensions``,
    ``overall`` and ``passed``, exactly as ``group`` computes them), the run's per-metric summary
    totals and the interval columns of the statistics collector; nothing per trace is kept here.
    The hot counters live in a plain list per metric (``_slots``) and reach the summaries in
    ``finish``; rarer facts (nulls, warnings, judge accounting) go to the summary directly.
    """

    def __init__(self, dimension_of: Mapping[str, str], thresholds: Mapping[str, float | None], dims: Dimensions,
                 collector: Any = None) -> None:
        super().__init__(dimension_of, thresholds)
        self._dims, self._collector = dims, collector
        self._slots: dict[str, list[Any]] = {}
        """name -> [summary, dimension, its interval column's ``add`` or None, sum of scores, scored, passed]."""

    def _slot(self, name: str) -> list[Any]:
        s = self.summaries[name] = MetricSummary(name=name, dimension=self._dimension_of.get(name, "custom"),
                                                 threshold=self._thresholds.get(name))
        add = None if self._collector is None else self._collector.columns(name).add
        slot = self._slots[name] = [s, self._dimension_of.get(name, "custom"), add, 0.0, 0, 0]
        return slot

    def add_trace(self, metrics: Mapping[str, MetricResult],
                  task_id: str) -> tuple[dict[str, DimensionScore], float | None, bool | None]:
        """Account one trace's results; its (dimensions, overall, passed)."""
        slots, collector = self._slots, self._collector
        pos = 0 if collector is None else collector.position()
        sums: dict[str, list[float]] = {}
        any_failed = False
        for name, r in metrics.items():
            slot = slots.get(name) or self._slot(name)
            score = r.score
            if score is None:
                self._null(slot[0], r)
                continue
            slot[3] += score
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
            add = slot[2]
            if add is not None:
                add(score, passed is True, pos)
            if r.warning is not None or r.judge_calls:
                self._rare(slot[0], r)
        verdict = _verdict(sums, any_failed, self._dims)
        if collector is not None:
            collector.add_trace(task_id, verdict[2])
        return verdict

    def _null(self, s: MetricSummary, r: MetricResult) -> None:
        s.n_null += 1
        if r.warning in ERROR_WARNINGS:
            s.n_errored += 1
        if not s.null_reason and r.reason:
            s.null_reason = r.reason[:500]
        self._rare(s, r)

    @staticmethod
    def _rare(s: MetricSummary, r: MetricResult) -> None:
        if r.warning is not None:
            key = r.warning.value if isinstance(r.warning, Warning) else str(r.warning)
            s.warnings[key] = s.warnings.get(key, 0) + 1
        if r.judge_calls:
            s.judge_calls += r.judge_calls
            s.tokens += r.tokens
            if r.cost_usd is not None:
                s.cost_usd = (s.cost_usd or 0.0) + r.cost_usd

    def finish(self) -> dict[str, MetricSummary]:
        for name, slot in self._slots.items():
            s = slot[0]
            self._sums[name] = slot[3]
            s.n, s.n_passed = slot[4], slot[5]
        return super().finish()
