"""Run-level statistics: an interval on every aggregate, and pass@k over repeated trials.

Intervals: a metric's mean gets a bootstrap clustered by task when tasks repeat (trials of one
task are not independent), else a t interval; a pass rate gets a Wilson interval, or the
clustered bootstrap when tasks repeat. Everything is seeded, so a rerun prints the same numbers.

pass@k here is the *trial* family (Inspect-AI style, unbiased estimators over the n trials of
each task); the seed's per-conversation family lives in the agentic metric's details. The two
are named in the output so nobody confuses them.
"""

from __future__ import annotations

from array import array
from dataclasses import asdict
from typing import Any

from ..model import MetricSummary, TraceResult

K_MAX = 10
"""Largest k reported in pass@k curves (bounded by the most trials any task has)."""


class StatisticsCollector:
    """Per-trace scores and pass flags with their task, kept compactly until the run ends."""

    def __init__(self, level: float = 0.95, seed: int = 0) -> None:
        self.level, self.seed = level, seed
        self._task_index: dict[str, int] = {}
        self._scores: dict[str, tuple[array, array, array]] = {}
        self._trace_tasks: dict[int, list[int]] = {}
        """task index -> [trials, traces passed] for the trace-level success definition."""

    def add(self, result: TraceResult) -> None:
        idx = self._task_index.setdefault(result.task_id, len(self._task_index))
        for name, r in result.metrics.items():
            if r.score is None:
                continue
            cols = self._scores.get(name)
            if cols is None:
                cols = self._scores[name] = (array("d"), array("l"), array("b"))
            cols[0].append(r.score)
            cols[1].append(idx)
            cols[2].append(bool(r.passed))
        if result.passed is not None:
            counts = self._trace_tasks.setdefault(idx, [0, 0])
            counts[0] += 1
            counts[1] += result.passed

    @property
    def tasks_repeat(self) -> bool:
        return any(n > 1 for n, _ in self._trace_tasks.values()) or any(
            len(set(cols[1])) < len(cols[1]) for cols in self._scores.values())

    def finish(self, summaries: dict[str, MetricSummary]) -> dict[str, Any]:
        """Fill ``mean_ci`` / ``pass_rate_ci`` in place; return the run's ``statistics`` block."""
        if not self._scores and not self._trace_tasks:
            return {}
        from ..stats import mean_interval, wilson_interval

        repeat = self.tasks_repeat
        for name, (scores, tasks, passed) in self._scores.items():
            s = summaries.get(name)
            if s is None or not scores:
                continue
            clusters = tasks if repeat else None
            mi = mean_interval(scores, clusters, level=self.level, seed=self.seed)
            if mi is not None and mi.low is not None:
                s.mean_ci = _clip(mi.low, mi.high)
            if repeat:
                pi = mean_interval([float(p) for p in passed], clusters, level=self.level, seed=self.seed)
            else:
                pi = wilson_interval(sum(passed), len(passed), level=self.level)
            if pi is not None and pi.low is not None:
                s.pass_rate_ci = _clip(pi.low, pi.high)
        out: dict[str, Any] = {"interval_level": self.level,
                               "interval_method": "clustered by task: bootstrap, or a cluster-robust t interval "
                                                  "under 20 tasks (means and pass rates)" if repeat
                               else "t interval (means), Wilson (pass rates)"}
        if repeat:
            out["trials"] = self._trials()
        return out

    def _trials(self) -> dict[str, Any]:
        from ..stats import TRIAL_UNBIASED, trial_pass_k

        def curve(tasks: list[tuple[int, int]]) -> list[dict[str, Any]]:
            top = min(K_MAX, max(n for n, _ in tasks))
            rows = []
            for k in range(1, top + 1):
                r = trial_pass_k(tasks, k, level=self.level, seed=self.seed)
                rows.append({key: v for key, v in asdict(r).items() if key not in ("family", "level")})
            return rows

        trace_tasks = [(n, c) for n, c in self._trace_tasks.values()]
        by_metric: dict[str, Any] = {}
        for name, (_, tasks, passed) in self._scores.items():
            counts: dict[int, list[int]] = {}
            for t, p in zip(tasks, passed):
                acc = counts.setdefault(t, [0, 0])
                acc[0] += 1
                acc[1] += p
            if any(n > 1 for n, _ in counts.values()):
                by_metric[name] = curve([(n, c) for n, c in counts.values()])
        sizes = [n for n, _ in trace_tasks]
        return {
            "family": TRIAL_UNBIASED,
            "about": "unbiased pass@k = 1 - C(n-c,k)/C(n,k) and pass^k = C(c,k)/C(n,k) per task over its n trials, "
                     "averaged over tasks with n >= k; intervals: task bootstrap",
            "n_tasks": len(trace_tasks),
            "trials_per_task": {"min": min(sizes), "max": max(sizes)} if sizes else None,
            "trace_passed": curve(trace_tasks) if trace_tasks else [],
            "by_metric": by_metric,
        }


def _clip(low: float, high: float) -> tuple[float, float]:
    """Scores and rates live in [0, 1]; so do their intervals."""
    return max(0.0, low), min(1.0, high)
