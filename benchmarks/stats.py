"""Speed of the statistics layer against its two targets.

(a) One exact Bayesian interval (``BayesianMode().estimate``: posterior means and both Beta
    quantiles, pure Python): microseconds per call over a realistic mix of conversations
    (1-50 interactions), plus a few fixed shapes. Target < 50 us.
(b) Summarising 10,000 tasks x 10 trials: ``trial_pass_k`` over the tasks (task bootstrap,
    2,000 replicates) plus ``mean_interval`` over the 100,000 trial scores clustered by task
    (cluster bootstrap, 2,000 replicates). Target < 1 s.

    python benchmarks/stats.py
    python benchmarks/stats.py --tasks 100000   # scale (b) up
"""

from __future__ import annotations

import argparse
import random
import time

from assay.stats import BayesianMode, beta_interval, mean_interval, trial_pass_k


def best_of(repeats: int, fn) -> float:
    """The fastest of *repeats* timings of fn(), in seconds (the least disturbed run)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench_intervals(calls: int) -> None:
    rng = random.Random(0)
    cases = []
    for _ in range(calls):
        n = rng.randint(1, 50)
        cases.append((n, rng.randint(0, n), rng.choice([1, 3, 5, 10])))
    mode = BayesianMode()

    def run_mix():
        for n, c, k in cases:
            mode.estimate(n, c, k)

    per_call = best_of(5, run_mix) / calls * 1e6
    verdict = "ok" if per_call < 50 else "SLOW"
    print(f"(a) exact Bayesian interval, mixed n<=50: {per_call:6.1f} us per call   (target < 50 us: {verdict})")
    for n, c in [(10, 7), (100, 70), (1000, 700), (10, 10)]:
        a, b = 1 + c, 1 + n - c
        us = best_of(5, lambda: [beta_interval(a, b) for _ in range(2000)]) / 2000 * 1e6
        print(f"    beta_interval Beta({a}, {b}) alone: {us:6.1f} us")


def bench_summary(n_tasks: int, trials: int) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    rates = rng.beta(2.0, 2.0, n_tasks)
    outcomes = rng.random((n_tasks, trials)) < rates[:, None]
    tasks = [(trials, int(c)) for c in outcomes.sum(axis=1)]
    scores = outcomes.ravel().astype(float).tolist()
    clusters = np.repeat(np.arange(n_tasks), trials).tolist()

    def summarise():
        trial_pass_k(tasks, k=3)
        mean_interval(scores, clusters)

    summarise()  # warm: first numpy calls, allocator
    seconds = best_of(3, summarise)
    parts = [best_of(3, lambda: trial_pass_k(tasks, k=3)), best_of(3, lambda: mean_interval(scores, clusters))]
    verdict = "ok" if seconds < 1.0 else "SLOW"
    print(f"(b) summarise {n_tasks:,} tasks x {trials} trials: {seconds:6.3f} s   (target < 1 s: {verdict})")
    print(f"    trial_pass_k {parts[0]:.3f} s, mean_interval (cluster bootstrap) {parts[1]:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="intervals timed in (a)")
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    bench_intervals(args.calls)
    bench_summary(args.tasks, args.trials)


if __name__ == "__main__":
    main()
