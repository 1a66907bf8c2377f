"""Pairwise statistics by simulation from known truth: win-rate interval coverage, the sign test's
error rate, and Bradley-Terry interval coverage.

- Win rate (``assay.stats.win_rate``): pairs score 1 / 0.5 / 0 with known probabilities (ties
  included), i.i.d. (n = 10, 30, 100) and clustered (10 or 30 tasks x 4 trials, each task's
  win/tie/loss probabilities drawn around the population's, so trials of a task agree more than
  chance). Coverage of the 95% interval of the true win rate P(win) + P(tie) / 2 should be in
  [0.93, 0.99]; under a true win rate of 0.5 the test at alpha 0.05 should reject at most ~5%.
- Bradley-Terry (``assay.stats.bradley_terry``): 4 players with known strengths, all pairs on
  T tasks (T = 20, 60); coverage of each player's 95% interval of its true centred log-strength.

    python benchmarks/pairwise_coverage.py            # 1000 replicates per cell (BT: 200)
    python benchmarks/pairwise_coverage.py --reps 200

Measured (2026-12-01, --reps 300 --bt-reps 100, 351 s on a shared 2-core machine): win-rate coverage
0.943-0.990 in all 20 cells, rejection under the null 0.013-0.053 (alpha 0.05); Bradley-Terry
coverage per player 0.91-0.95 on 20 tasks and 0.93-0.97 on 60 (100 replicates: +-0.03).

Prints one line per cell; exits 1 when a win-rate cell's coverage is outside [0.93, 0.99] or
its rejection rate under the null exceeds 0.07.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from assay.stats import bradley_terry, win_rate


def draw_pairs(rng, n_tasks: int, trials: int, p_win: float, p_tie: float, spread: float):
    """Scores and task ids: per task, win/tie/loss probabilities from a Dirichlet around the truth."""
    base = np.array([p_win, p_tie, 1 - p_win - p_tie])
    scores, tasks = [], []
    for t in range(n_tasks):
        p = rng.dirichlet(base * spread) if spread else base
        s = rng.choice([1.0, 0.5, 0.0], size=trials, p=p)
        scores += s.tolist()
        tasks += [t] * trials
    return scores, tasks


def win_rate_cells(reps: int, rng) -> bool:
    ok = True
    cells = [(10, 1, 0), (30, 1, 0), (100, 1, 0), (10, 4, 4.0), (30, 4, 4.0)]
    for n_tasks, trials, spread in cells:
        for p_win, p_tie in ((0.6, 0.2), (0.3, 0.4), (0.85, 0.1), (0.4, 0.2)):
            truth = p_win + p_tie / 2
            covered = rejected = 0
            for _ in range(reps):
                scores, tasks = draw_pairs(rng, n_tasks, trials, p_win, p_tie, spread)
                w = win_rate(scores, tasks if trials > 1 else None, n_perm=2000)
                covered += w.ci_low <= truth <= w.ci_high
                rejected += w.p_value is not None and w.p_value < 0.05
            cov, rej = covered / reps, rejected / reps
            null = abs(truth - 0.5) < 1e-12
            bad = not 0.93 <= cov <= 0.99 or (null and rej > 0.07)
            ok &= not bad
            what = "rejects (null true)" if null else "power"
            print(f"win rate  tasks {n_tasks:3d} x {trials} trials  P(win) {p_win:.2f} P(tie) {p_tie:.2f} "
                  f"(truth {truth:.2f}): coverage {cov:.3f}, {what} {rej:.3f}{'  <-- outside' if bad else ''}")
    return ok


def bt_cells(reps: int, rng) -> None:
    strengths = np.log(np.array([4.0, 2.0, 1.0, 1.0]))
    truth = strengths - strengths.mean()
    players = ["a", "b", "c", "d"]
    for n_tasks in (20, 60):
        covered = np.zeros(4)
        for _ in range(reps):
            comps = []
            for t in range(n_tasks):
                for i in range(4):
                    for j in range(i + 1, 4):
                        p = 1 / (1 + math.exp(strengths[j] - strengths[i]))
                        comps.append((i, j, float(rng.random() < p), t))
            s = bradley_terry(players, comps, n_boot=300, seed=int(rng.integers(1 << 30)))
            covered += [lo <= tr <= hi for lo, tr, hi in zip(s.ci_low, truth, s.ci_high)]
        print(f"bradley-terry  4 players, all pairs on {n_tasks} tasks: coverage per player "
              + ", ".join(f"{c / reps:.3f}" for c in covered))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--bt-reps", type=int, default=200)
    args = ap.parse_args()
    rng = np.random.default_rng(20)
    start = time.perf_counter()
    ok = win_rate_cells(args.reps, rng)
    bt_cells(args.bt_reps, rng)
    print(f"{time.perf_counter() - start:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
