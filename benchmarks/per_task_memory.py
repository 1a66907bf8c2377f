"""Bytes per trace that the per-task table (``statistics.trials.tasks``) adds to the statistics collector.

The collector keeps 9 bytes per trace (task key, verdict); the per-task table needs each task's id
once. Ids are recorded where the input switches task and compacted to one per task, so the extra
memory follows the number of tasks, not the traces: this prints the bytes per trace of both, for
trials grouped by task (a collect's order) and interleaved (round-robin over every task), at
N tasks x T trials.

    python benchmarks/per_task_memory.py                    # 100,000 tasks x 10 trials
    python benchmarks/per_task_memory.py --tasks 10000 --trials 3
"""

from __future__ import annotations

import argparse
import time

from assay.engine._statistics import StatisticsCollector


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--trials", type=int, default=10)
    args = ap.parse_args()
    ids = [f"task-{i:06d}" for i in range(args.tasks)]
    n = args.tasks * args.trials
    for order in ("grouped", "interleaved"):
        c = StatisticsCollector()
        pairs = ((t, r) for t in range(args.tasks) for r in range(args.trials)) if order == "grouped" else \
            ((t, r) for r in range(args.trials) for t in range(args.tasks))
        for t, r in pairs:
            c.add_trace(ids[t], (t + r) % 3 != 0, "failed" if r == 0 and t % 10 == 7 else None)
        base = 8 * len(c._task) + len(c._passed)
        extra = len(c._names) + 4 * len(c._name_at) + 8 * len(c._name_end) + 4 * len(c._failed_runs)
        started = time.perf_counter()
        rows = c.finish({})["trials"]["tasks"]
        took = time.perf_counter() - started
        print(f"{order:>11}: {n:,} traces of {args.tasks:,} tasks: collector {base / n:.1f} B/trace, per-task "
              f"bookkeeping {extra / n:.2f} B/trace ({extra / base:.2f}x the collector's); table of {len(rows):,} "
              f"tasks in {took:.2f} s")


if __name__ == "__main__":
    main()
