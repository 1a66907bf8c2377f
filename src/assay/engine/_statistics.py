"""Run-level statistics: an interval on every aggregate, and pass@k over repeated trials.

Intervals (the rule and its coverage: README "Statistics", ``benchmarks/coverage.py``): every
mean and pass rate gets ``bounded_mean_interval`` - Wilson for 0/1 values, the effective-sample-size
Wilson (cluster-robust variance, t-corrected) for scores and when tasks repeat (trials of one task
are not independent). Tasks are grouped by a stable hash of their id, so a rerun in any process
prints the same numbers.

pass@k here is the *trial* family (Inspect-AI style, unbiased estimators over the n trials of
each task); Fair Forge's per-conversation family lives in the agentic metric's details. The two
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


class Column:
    """One metric's scored results, compactly: 9 bytes each while the metric scores every trace.

    Scores as float64 (so a mean always lies inside its own interval) and pass flags as bytes; the
    trace position of each score is kept (4 more bytes) only once the metric has skipped a trace,
    until then the k-th score belongs to the k-th trace.
    """

    __slots__ = ("scores", "passed", "positions")

    def __init__(self) -> None:
        self.scores = array("d")
        self.passed = array("b")
        self.positions: array | None = None

    def add(self, score: float, passed: bool, position: int) -> None:
        """Append a scored result of the trace at ``position`` (positions never decrease)."""
        scores = self.scores
        if self.positions is not None:
            self.positions.append(position)
        elif len(scores) != position:  # the first gap: from now on positions are kept
            self.positions = array("i", range(len(scores)))
            self.positions.append(position)
        scores.append(score)
        self.passed.append(passed)

    def extend(self, other: "Column", offset: int) -> None:
        """Append *other*, whose trace positions start at *offset* (a later part of the run).

        It stays dense (no positions) only if both are dense and this one covers every trace
        before *offset*, as one pass would have kept it.
        """
        n = len(self.scores)
        if self.positions is None and other.positions is None and n == offset:
            pass
        else:
            if self.positions is None:
                self.positions = array("i", range(n))
            theirs = other.positions if other.positions is not None else array("i", range(len(other.scores)))
            self.positions.extend(_shift(theirs, offset) if offset else theirs)
        self.scores.extend(other.scores)
        self.passed.extend(other.passed)

    def trace_positions(self, np: Any) -> Any:
        """The trace position of every score, as an index array (a slice when dense)."""
        if self.positions is None:
            return slice(0, len(self.scores))
        return np.frombuffer(self.positions, dtype=np.int32)


class StatisticsCollector:
    """Per-trace scores and pass flags with their task, kept compactly until the run ends.

    About 9 bytes per scored metric result (13 for a metric that skips traces) and 9 per trace
    (1,000,000 traces x 12 metrics: ~117 MB): see ``Column``; tasks as stable 64-bit hashes of
    their ids (collisions within one run are ~1e-8 likely at a million tasks), never as a dict of
    strings. For the per-task table each task's id is kept once (UTF-8 in one buffer, compacted when
    trials interleave: 2-4 bytes per trace at 100,000 tasks x 10 trials), and the positions of the
    few failed and excluded trials.
    """

    def __init__(self, level: float = 0.95, seed: int = 0, task_set: str = "common") -> None:
        self.level, self.seed, self.task_set = level, seed, task_set
        self._task = array("q")
        """Per trace: hash of its task id."""
        self._passed = array("b")
        """Per trace: 1 passed, 0 failed, -1 no verdict."""
        self._scores: dict[str, Column] = {}
        """Per metric: its scored results."""
        self._last: tuple[str, int] = ("", task_key(""))
        """The last task id and its key: trials of one task usually come one after another."""
        self._names = bytearray()
        """Task ids (UTF-8), one each time the task changes from one trace to the next (for the per-task table)."""
        self._name_at = array("i")
        """Per task change: the trace position it happened at."""
        self._name_end = array("q")
        """Per task change: where its id ends in ``_names``."""
        self._compact_at = 1 << 16
        """Task changes recorded before the next compaction (which keeps each task's first only)."""
        self._failed_runs = array("i")
        """Positions of the traces whose run failed (failed trials: also 0 in ``_passed``)."""
        self._excluded = array("i")
        """Positions of the traces excluded for a harness fault (-1 in ``_passed``)."""

    def add(self, result: TraceResult) -> None:
        pos = self.position()
        for name, r in result.metrics.items():
            if r.score is not None:
                self.columns(name).add(r.score, r.passed is True, pos)
        self.add_trace(result.task_id, result.passed)

    # the run's single walk (engine._aggregate.RunTotals) appends to the columns directly
    def position(self) -> int:
        """The position the next trace will have."""
        return len(self._task)

    def columns(self, name: str) -> Column:
        """The column of metric ``name``, to ``add`` a scored result to."""
        col = self._scores.get(name)
        if col is None:
            col = self._scores[name] = Column()
        return col

    def add_trace(self, task_id: str, passed: bool | None, outcome: str | None = None) -> None:
        """Close a trace whose scored results were added at ``position()``; ``outcome``: ``"failed"`` (a
        failed trial, *passed* False) or ``"excluded"`` (a harness fault, *passed* None)."""
        last = self._last
        if task_id != last[0] or not self._name_at:
            last = self._last = (task_id, task_key(task_id))
            self._name_at.append(len(self._task))
            self._names += task_id.encode("utf-8", "surrogatepass")
            self._name_end.append(len(self._names))
        if outcome is not None:
            (self._failed_runs if outcome == "failed" else self._excluded).append(len(self._task))
        self._task.append(last[1])
        self._passed.append(-1 if passed is None else int(passed))
        if len(self._name_at) >= self._compact_at:  # interleaved trials: one id per task, not per change
            self._compact_names()

    def _compact_names(self) -> None:
        """Keep only the first recorded change of each task (what ``_per_task`` reads): memory follows the
        number of tasks, not how often the input switches between them."""
        import numpy as np

        at = np.frombuffer(self._name_at, dtype=np.int32)
        keys = np.frombuffer(self._task, dtype=np.int64)[at]
        _, first = np.unique(keys, return_index=True)
        keep = np.sort(first)
        ends = np.frombuffer(self._name_end, dtype=np.int64)
        starts = np.concatenate(([0], ends[:-1]))
        names, new_ends = bytearray(), array("q")
        for i in keep.tolist():
            names += self._names[int(starts[i]):int(ends[i])]
            new_ends.append(len(names))
        new_at = array("i")
        new_at.frombytes(at[keep].astype(np.int32).tobytes())
        self._names, self._name_at, self._name_end = names, new_at, new_ends
        self._compact_at = max(self._compact_at, 2 * len(new_at))

    def merge(self, other: "StatisticsCollector") -> "StatisticsCollector":
        """Append *other*'s columns (the traces after these); returns self.

        Concatenation with the trace positions shifted, so the merged columns are those one pass
        would have kept: intervals, ``n_tasks`` and the pass@k (n, c) counts per task come out
        identical, also for tasks whose trials were split between the parts (tasks are stable
        hashes, grouped only at ``finish``). Associative over consecutive parts.
        """
        if (self.level, self.seed, self.task_set) != (other.level, other.seed, other.task_set):
            raise ValueError("cannot merge statistics kept with different levels, seeds or pass@k task sets")
        offset = len(self._task)
        self._task.extend(other._task)
        self._passed.extend(other._passed)
        base = len(self._names)
        self._names += other._names
        self._name_at.extend(_shift(other._name_at, offset) if offset else other._name_at)
        self._name_end.extend(array("q", (e + base for e in other._name_end)))
        for runs, kept in ((self._failed_runs, other._failed_runs), (self._excluded, other._excluded)):
            runs.extend(_shift(kept, offset) if offset else kept)
        if other._task:
            self._last = other._last
        for name, theirs in other._scores.items():
            self.columns(name).extend(theirs, offset)
        return self

    def finish(self, summaries: dict[str, MetricSummary]) -> dict[str, Any]:
        """Fill ``mean_ci`` / ``pass_rate_ci`` in place; return the run's ``statistics`` block."""
        if not self._task:
            return {}
        import numpy as np

        from ..stats._intervals import _distinct  # at a run's end: not on the way to its first judge call

        _, task_of_trace = np.unique(np.frombuffer(self._task, dtype=np.int64), return_inverse=True)
        repeat = int(task_of_trace.max()) + 1 < len(task_of_trace)
        dense_tasks: dict[int, int] = {}  # n_tasks of the first k traces, shared by the metrics scoring all of them
        for name, col in self._scores.items():
            s = summaries.get(name)
            if s is None or not col.scores:
                continue
            tasks_of_scores = task_of_trace[col.trace_positions(np)]
            if col.positions is None:
                k = len(col.scores)
                if k not in dense_tasks:
                    dense_tasks[k] = _distinct(tasks_of_scores)
                s.n_tasks = dense_tasks[k]
            else:
                s.n_tasks = _distinct(tasks_of_scores)
            clusters = tasks_of_scores if repeat else None
            mi, pi = score_intervals(np.frombuffer(col.scores, dtype=np.float64),
                                     np.frombuffer(col.passed, dtype=np.int8), clusters, self.level)
            if mi is not None and mi.low is not None:
                s.mean_ci = (mi.low, mi.high)
            if pi is not None and pi.low is not None:
                s.pass_rate_ci = (pi.low, pi.high)
        out: dict[str, Any] = {"interval_level": self.level, "interval_method": INTERVAL_METHOD_CLUSTERED if repeat
                               else INTERVAL_METHOD}
        if repeat:
            out["trials"] = self._trials(np, task_of_trace)
        return out

    def _trials(self, np: Any, task_of_trace: Any) -> dict[str, Any]:
        from ..stats import TRIAL_UNBIASED
        from ..stats._intervals import _distinct

        verdict = np.frombuffer(self._passed, dtype=np.int8)
        has = verdict >= 0
        trace_tasks = task_of_trace[has]
        by_metric: dict[str, Any] = {}
        for name, col in self._scores.items():
            tasks = task_of_trace[col.trace_positions(np)]
            if _distinct(tasks) < len(tasks):
                by_metric[name] = passk_curve(tasks, np.frombuffer(col.passed, dtype=np.int8), self.level, self.task_set)
        sizes = np.bincount(trace_tasks) if len(trace_tasks) else np.zeros(0, dtype=np.int64)
        sizes = sizes[sizes > 0]
        common = self.task_set == "common"
        curve = passk_curve(trace_tasks, verdict[has], self.level, self.task_set) if len(trace_tasks) else []
        return {
            "family": TRIAL_UNBIASED,
            "task_set": self.task_set,
            "about": "unbiased pass@k = 1 - C(n-c,k)/C(n,k) and pass^k = C(c,k)/C(n,k) per task over its n trials, "
                     + ("averaged over one common set of tasks (those with n >= the largest k shown; k = 1 over "
                        "every task)" if common else
                        "averaged at each k over the tasks with n >= k (the task set differs between k)")
                     + "; intervals: effective-sample-size Wilson over tasks",
            "n_tasks": int(len(sizes)),
            "trials_per_task": {"min": int(sizes.min()), "max": int(sizes.max())} if len(sizes) else None,
            "trace_passed": curve,
            "by_metric": by_metric,
            **self._per_task(np, task_of_trace, verdict),
        }

    def _per_task(self, np: Any, task_of_trace: Any, verdict: Any) -> dict[str, Any]:
        """The per-task table: trials (with a verdict), passes, pass rate (Wilson), pass^k at the largest k
        every task has, a flaky flag, and the failed runs (among the trials), excluded trials and
        unscored ones (no metric scored: not trials either) when there are any, per task in order of
        first appearance.

        Beyond :data:`MAX_TASK_ROWS` tasks the table lists the flaky and weakest of them (the order
        every reader ranks by: flaky first, then the lowest pass rate, then input order), still in
        input order, and ``tasks_omitted`` counts the rest: a row costs ~500 bytes as Python
        objects and ~180 in JSON, so 333,000 tasks held 290 MB at the end of a run, while every
        task's trials stay in the per-trace results. ``n_flaky`` counts every task."""
        from ..stats._bounded import wilson_bounds

        g = int(task_of_trace.max()) + 1
        has = verdict >= 0
        n = np.bincount(task_of_trace[has], minlength=g)
        c = np.bincount(task_of_trace[has], weights=verdict[has].astype(np.float64), minlength=g).astype(np.int64)
        failed_runs = np.bincount(task_of_trace[np.frombuffer(self._failed_runs, dtype=np.int32)], minlength=g)
        excluded = np.bincount(task_of_trace[np.frombuffer(self._excluded, dtype=np.int32)], minlength=g)
        unscored = np.bincount(task_of_trace, minlength=g) - n - excluded  # no verdict: every metric null
        at = np.frombuffer(self._name_at, dtype=np.int32)
        task_of_change = task_of_trace[at]
        first = np.full(g, -1, dtype=np.int64)  # the first change of each task: its id and its place in the input
        seen, where = np.unique(task_of_change, return_index=True)
        first[seen] = where
        ends = np.frombuffer(self._name_end, dtype=np.int64)
        judged = n > 0
        k = min(K_MAX, int(n[judged].min())) if judged.any() else 0
        rate = np.divide(c, n, out=np.zeros(g), where=judged)
        low, high = wilson_bounds(np, rate, np.maximum(n, 1), self.level)
        pow_k = _pow_k(np, n, c, k) if k else None
        names = bytes(self._names)
        order = np.argsort(at[first], kind="stable")  # input order
        omitted = 0
        if len(order) > MAX_TASK_ROWS:  # keep the flaky and weakest, still in input order
            flaky_t = (c > 0) & (c < n)
            rank = np.lexsort((np.arange(len(order)), np.where(judged, rate, 2.0)[order], ~flaky_t[order]))
            omitted = len(order) - MAX_TASK_ROWS
            order = order[np.sort(rank[:MAX_TASK_ROWS])]
        starts = np.concatenate(([0], ends[:-1]))[first[order]].tolist()
        stops = ends[first[order]].tolist()
        cols = [a[order].tolist() for a in (n, c, judged, rate, low, high, failed_runs, excluded, unscored)]
        pows = pow_k[order].tolist() if pow_k is not None else None
        rows = []
        for j, (n_t, c_t, has_t, rate_t, low_t, high_t, failed_t, excluded_t, unscored_t) in enumerate(zip(*cols)):
            task_id = names[starts[j]:stops[j]].decode("utf-8", "surrogatepass")
            # one dict display per row (a table of 100,000 tasks is built here), its keys in this order
            if not has_t:
                row: dict[str, Any] = {"task_id": task_id, "trials": n_t, "passed": c_t, "pass_rate": None,
                                       "pass_rate_ci": None, "flaky": 0 < c_t < n_t}
            elif pows is not None:
                row = {"task_id": task_id, "trials": n_t, "passed": c_t, "pass_rate": rate_t,
                       "pass_rate_ci": [low_t, high_t], "pass_pow_k": pows[j], "flaky": 0 < c_t < n_t}
            else:
                row = {"task_id": task_id, "trials": n_t, "passed": c_t, "pass_rate": rate_t,
                       "pass_rate_ci": [low_t, high_t], "flaky": 0 < c_t < n_t}
            if failed_t:
                row["failed_runs"] = failed_t
            if excluded_t:
                row["excluded"] = excluded_t
            if unscored_t:
                row["unscored"] = unscored_t
            rows.append(row)
        out = {"per_task_k": k, "tasks": rows, "n_flaky": int(((c > 0) & (c < n)).sum())}
        if omitted:
            out["tasks_omitted"] = omitted
        return out


MAX_TASK_ROWS = 20_000
"""Tasks listed in ``statistics.trials.tasks`` at most (the flaky and weakest beyond it; see ``_per_task``)."""


def _pow_k(np: Any, n: Any, c: Any, k: int) -> Any:
    """Per task pass^k = C(c, k) / C(n, k) (0 when c < k), for tasks with n >= k, as a product."""
    out = np.ones(len(n))
    for j in range(k):
        out *= np.clip(c - j, 0, None) / np.maximum(n - j, 1)
    return out


def _shift(positions: array, offset: int) -> array:
    """Trace positions moved by *offset* (vectorised; int32 like the column)."""
    import numpy as np

    moved = np.frombuffer(positions, dtype=np.int32).astype(np.int64) + offset
    if moved.size and moved[-1] > np.iinfo(np.int32).max:
        raise OverflowError("more than 2**31 traces in one run's interval columns")
    out = array("i")
    out.frombytes(moved.astype(np.int32).tobytes())
    return out


INTERVAL_METHOD = ("Wilson with half a continuity correction (0/1 means and pass rates), effective-sample-size Wilson "
                   "with a t correction (scores)")
INTERVAL_METHOD_CLUSTERED = ("clustered by task: effective-sample-size Wilson on the cluster-robust variance, "
                             "t-corrected for the number of tasks (means and pass rates)")
TASK_SETS = ("common", "all")


def score_intervals(scores: Any, passed: Any, clusters: Any, level: float = 0.95) -> tuple[Any, Any]:
    """The statistics seam: one metric's columns -> (mean interval, pass-rate interval).

    *scores* (float64, in [0, 1]) and *passed* (0/1) are per scored result; *clusters* is the task
    index of each (None when no task repeats). Both intervals are ``bounded_mean_interval``: Wilson
    for 0/1 values, never zero width when every value is 0 or 1, always containing the estimate.
    """
    import numpy as np

    from ..stats import bounded_mean_interval

    if len(scores) == 0:
        return None, None
    mean = bounded_mean_interval(np.asarray(scores, dtype=np.float64), clusters, level=level)
    flags = np.asarray(passed, dtype=np.float64)  # (made after the mean's interval: one metric's temporaries at a time)
    return mean, bounded_mean_interval(flags, clusters, level=level)


def passk_curve(tasks: Any, successes: Any, level: float = 0.95, task_set: str = "common",
                k_max: int = K_MAX) -> list[dict[str, Any]]:
    """pass@k rows for k = 1..K from per-trial task indices (0..G-1) and 0/1 success flags.

    ``task_set="common"``: every k is computed on the same tasks, those with n >= K, where K is the
    largest k (at most *k_max*) that at least half of the tasks reach; the others are counted in
    each row's ``n_undefined``. So pass^k cannot rise with k because easy tasks drop out.
    ``"all"``: each k on every task with n >= k (K = the most trials any task has).
    """
    import numpy as np

    from ..stats import trial_pass_k

    if task_set not in TASK_SETS:
        from ..errors import ConfigError
        raise ConfigError.unknown("pass@k task set", task_set, TASK_SETS)
    tasks = np.asarray(tasks, dtype=np.int64)
    g = int(tasks.max()) + 1
    n = np.bincount(tasks, minlength=g)
    c = np.bincount(tasks, weights=np.asarray(successes, dtype=np.float64), minlength=g).astype(np.int64)
    n, c = n[n > 0], c[n > 0]
    if task_set == "common":
        top = min(k_max, int(np.sort(n)[(len(n) - 1) // 2]))  # the lower median: half the tasks reach it
        keep = n >= top
    else:
        top, keep = min(k_max, int(n.max())), n > 0
    excluded = int((~keep).sum())
    nk, ck = n[keep], c[keep]
    width = int(ck.max()) + 1 if len(ck) else 1
    if len(nk) and int(nk.max()) * width < 4 * len(nk) + 1024:  # (n, c) as one small integer: count, not sort
        counts = np.bincount(nk * width + ck)
        keys = np.flatnonzero(counts)
        pairs_list = [(int(k) // width, int(k) % width) for k in keys]  # ascending keys: (n, c) in sorted order
        mult = counts[keys]
    else:
        pairs, mult = np.unique(np.stack([nk, ck], axis=1), axis=0, return_counts=True)
        pairs_list = [(int(a), int(b)) for a, b in pairs]
    rows = []
    for k in range(1, top + 1):
        if k == 1 and excluded:  # k = 1 is defined for every task: none drops out of it
            every, times = _pairs(np, n, c)
            r = trial_pass_k(every, 1, level=level, counts=times)
            rows.append({key: v for key, v in asdict(r).items() if key not in ("family", "level")})
            continue
        r = trial_pass_k(pairs_list, k, level=level, counts=mult.tolist())
        row = {key: v for key, v in asdict(r).items() if key not in ("family", "level")}
        row["n_undefined"] += excluded
        rows.append(row)
    return rows


def _pairs(np: Any, n: Any, c: Any) -> tuple[list[tuple[int, int]], list[int]]:
    """The distinct (n, c) pairs of tasks and how many tasks share each, in ascending order."""
    width = int(c.max()) + 1 if len(c) else 1
    if len(n) and int(n.max()) * width < 4 * len(n) + 1024:  # (n, c) as one small integer: count, not sort
        counts = np.bincount(n * width + c)
        keys = np.flatnonzero(counts)
        return [(int(k) // width, int(k) % width) for k in keys], counts[keys].tolist()
    pairs, mult = np.unique(np.stack([n, c], axis=1), axis=0, return_counts=True)
    return [(int(a), int(b)) for a, b in pairs], [int(m) for m in mult]
