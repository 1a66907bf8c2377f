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
from hashlib import blake2b
from typing import Any

from ..model import MetricSummary, TraceResult

K_MAX = 10
"""Largest k reported in pass@k curves (bounded by the most trials any task has)."""


def task_key(task_id: str) -> int:
    """A 64-bit key of a task id that is the same in every process and on every machine.

    Python's ``hash()`` of a str is salted per process (PYTHONHASHSEED), so grouping by it made the
    seeded bootstrap resample different tasks in each run; blake2b is stable.
    """
    return int.from_bytes(blake2b(str(task_id).encode("utf-8"), digest_size=8).digest(), "little", signed=True)


class StatisticsCollector:
    """Per-trace scores and pass flags with their task, kept compactly until the run ends.

    About 13 bytes per scored metric result and 9 per trace (1,000,000 traces x 12 metrics:
    ~165 MB): scores as float64 (so a mean always lies inside its own interval), tasks as stable
    64-bit hashes of their ids (collisions within one run are ~1e-8 likely at a million tasks),
    never as a dict of strings.
    """

    def __init__(self, level: float = 0.95, seed: int = 0) -> None:
        self.level, self.seed = level, seed
        self._task = array("q")
        """Per trace: hash of its task id."""
        self._passed = array("b")
        """Per trace: 1 passed, 0 failed, -1 no verdict."""
        self._scores: dict[str, tuple[array, array, array]] = {}
        """Per metric: (scores, trace positions, passed flags) of the scored results."""

    def add(self, result: TraceResult) -> None:
        pos = len(self._task)
        self._task.append(task_key(result.task_id))
        self._passed.append(-1 if result.passed is None else int(result.passed))
        for name, r in result.metrics.items():
            if r.score is None:
                continue
            cols = self._scores.get(name)
            if cols is None:
                cols = self._scores[name] = (array("d"), array("i"), array("b"))
            cols[0].append(r.score)
            cols[1].append(pos)
            cols[2].append(bool(r.passed))

    def finish(self, summaries: dict[str, MetricSummary]) -> dict[str, Any]:
        """Fill ``mean_ci`` / ``pass_rate_ci`` in place; return the run's ``statistics`` block."""
        if not self._task:
            return {}
        import numpy as np

        from ..stats import mean_interval, wilson_interval

        _, task_of_trace = np.unique(np.frombuffer(self._task, dtype=np.int64), return_inverse=True)
        repeat = int(task_of_trace.max()) + 1 < len(task_of_trace)
        for name, (scores, positions, passed) in self._scores.items():
            s = summaries.get(name)
            if s is None or not scores:
                continue
            values = np.frombuffer(scores, dtype=np.float64)
            flags = np.frombuffer(passed, dtype=np.int8).astype(np.float64)
            clusters = task_of_trace[np.frombuffer(positions, dtype=np.int32)] if repeat else None
            binary = bool(((values == 0.0) | (values == 1.0)).all())
            if binary and not repeat:  # a 0/1 metric's mean is a proportion: a t interval can reach [0, 0]
                mi = wilson_interval(int(values.sum()), len(values), level=self.level)
            else:
                mi = mean_interval(values, clusters, level=self.level, seed=self.seed)
            if mi is not None and mi.low is not None:
                s.mean_ci = _clip(mi.low, mi.high)
            if repeat:
                pi = mean_interval(flags, clusters, level=self.level, seed=self.seed)
            else:
                pi = wilson_interval(int(flags.sum()), len(flags), level=self.level)
            if pi is not None and pi.low is not None:
                s.pass_rate_ci = _clip(pi.low, pi.high)
        out: dict[str, Any] = {"interval_level": self.level,
                               "interval_method": "clustered by task: bootstrap, or a cluster-robust t interval "
                                                  "under 20 or over 1000 tasks (means and pass rates)" if repeat
                               else "t interval (means), Wilson (pass rates)"}
        if repeat:
            out["trials"] = self._trials(np, task_of_trace)
        return out

    def _trials(self, np: Any, task_of_trace: Any) -> dict[str, Any]:
        from ..stats import TRIAL_UNBIASED, trial_pass_k

        def curve(tasks: Any, successes: Any) -> list[dict[str, Any]]:
            """pass@k rows for k = 1..K from per-trial task ids and success flags."""
            g = int(task_of_trace.max()) + 1
            n = np.bincount(tasks, minlength=g)
            c = np.bincount(tasks, weights=successes, minlength=g).astype(np.int64)
            keep = n > 0
            pairs, mult = np.unique(np.stack([n[keep], c[keep]], axis=1), axis=0, return_counts=True)
            pairs_list = [(int(a), int(b)) for a, b in pairs]
            top = min(K_MAX, int(n.max()))
            rows = []
            for k in range(1, top + 1):
                r = trial_pass_k(pairs_list, k, level=self.level, seed=self.seed, counts=mult.tolist())
                rows.append({key: v for key, v in asdict(r).items() if key not in ("family", "level")})
            return rows

        verdict = np.frombuffer(self._passed, dtype=np.int8)
        has = verdict >= 0
        trace_tasks = task_of_trace[has]
        by_metric: dict[str, Any] = {}
        for name, (_, positions, passed) in self._scores.items():
            tasks = task_of_trace[np.frombuffer(positions, dtype=np.int32)]
            if len(np.unique(tasks)) < len(tasks):
                by_metric[name] = curve(tasks, np.frombuffer(passed, dtype=np.int8).astype(np.float64))
        sizes = np.bincount(trace_tasks) if len(trace_tasks) else np.zeros(0, dtype=np.int64)
        sizes = sizes[sizes > 0]
        return {
            "family": TRIAL_UNBIASED,
            "about": "unbiased pass@k = 1 - C(n-c,k)/C(n,k) and pass^k = C(c,k)/C(n,k) per task over its n trials, "
                     "averaged over tasks with n >= k; intervals: task bootstrap (t over tasks past 1000 tasks)",
            "n_tasks": int(len(sizes)),
            "trials_per_task": {"min": int(sizes.min()), "max": int(sizes.max())} if len(sizes) else None,
            "trace_passed": curve(trace_tasks, verdict[has].astype(np.float64)) if len(trace_tasks) else [],
            "by_metric": by_metric,
        }


def _clip(low: float, high: float) -> tuple[float, float]:
    """Scores and rates live in [0, 1]; so do their intervals."""
    return max(0.0, low), min(1.0, high)
