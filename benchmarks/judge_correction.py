"""Coverage of the judge-corrected pass rate's 95% interval, by simulation from known truth.

Each cell fixes a true pass rate pi, a judge with true TPR (sensitivity) and TNR (specificity), a
calibration set of n_pos human-passed and n_neg human-failed items, and a run of n traces. A
replicate draws the judge's verdicts on the calibration set (tp ~ Bin(n_pos, TPR), tn ~ Bin(n_neg,
TNR)) and on the run (each trace passes truly with pi, the judge errs at the true rates), then asks
``assay.stats.corrected_pass_rate`` for the interval and checks whether it holds pi. A good 95%
interval covers 0.93-0.99 of the time; replicates where the drawn card gives TPR + TNR <= 1 are
refused (no interval) and counted apart. For comparison the naive interval (the run's own
Wilson interval pushed through the correction, as if the card were exact) is graded too.

    python benchmarks/judge_correction.py            # the grid, 400 replicates per cell
    python benchmarks/judge_correction.py --reps 2000
    python benchmarks/judge_correction.py --quick    # a few cells

Exit status 1 when a graded cell of the simulation interval falls outside [0.93, 0.99] by more
than its Monte Carlo error: with 108 cells of a few hundred replicates, some cells of a correct
interval land just outside by chance, so a cell fails only when its coverage is more than Z_MC
standard errors (sqrt(b(1-b)/replicates) at the bound b) beyond the bound - about the
Bonferroni-corrected one-sided 5% level over the grid. Cells outside but within that error are
marked and counted apart.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from assay.stats import corrected_pass_rate, rogan_gladen, wilson_interval

LOW, HIGH = 0.93, 0.99
Z_MC = 3.1
"""Standard errors a cell may fall beyond a bound by chance (one-sided 5% / 108 cells ~ 3.1)."""
JUDGES = {"lenient (TPR .975, TNR .75)": (0.975, 0.75), "balanced (.9, .9)": (0.9, 0.9),
          "weak (.8, .7)": (0.8, 0.7)}
TRUTH = (0.2, 0.5, 0.8, 0.95)
CARDS = ((20, 20), (50, 50), (200, 200))
RUNS = (50, 200, 1000)


def cell(pi: float, tpr: float, tnr: float, n_pos: int, n_neg: int, n: int, reps: int, rng: np.random.Generator,
         draws: int) -> tuple[float, float, float, float]:
    """(coverage, naive coverage, refused share, mean width) over ``reps`` replicates."""
    hit = naive_hit = refused = 0
    width = 0.0
    p_obs = pi * tpr + (1 - pi) * (1 - tnr)
    for r in range(reps):
        tp = int(rng.binomial(n_pos, tpr))
        tn = int(rng.binomial(n_neg, tnr))
        passed = int(rng.binomial(n, p_obs))
        c = corrected_pass_rate(passed, n, tp=tp, fn=n_pos - tp, tn=tn, fp=n_neg - tn, draws=draws, seed=r)
        if c is None:
            refused += 1
            continue
        hit += c.low <= pi <= c.high
        width += c.high - c.low
        w = wilson_interval(passed, n)
        lo, hi = rogan_gladen(w.low, c.tpr, c.tnr), rogan_gladen(w.high, c.tpr, c.tnr)
        naive_hit += lo <= pi <= hi
    done = reps - refused
    return (hit / done if done else float("nan"), naive_hit / done if done else float("nan"), refused / reps,
            width / done if done else float("nan"))


def grade(cov: float, done: int) -> str:
    """'' inside the bounds, 'noise' outside them within Monte Carlo error, 'bad' beyond it."""
    if LOW <= cov <= HIGH:
        return ""
    bound = LOW if cov < LOW else HIGH
    se = (bound * (1 - bound) / max(done, 1)) ** 0.5
    return "noise" if abs(cov - bound) <= Z_MC * se else "bad"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--draws", type=int, default=5000, help="simulation draws per interval")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(20261201)
    judges = dict(list(JUDGES.items())[:2]) if args.quick else JUDGES
    truth = (0.5, 0.8) if args.quick else TRUTH
    cards = CARDS[:2] if args.quick else CARDS
    runs = (200,) if args.quick else RUNS
    reps = min(args.reps, 200) if args.quick else args.reps
    started = time.time()
    bad = noise = 0
    covs, naive = [], []
    print(f"{'judge':<28} {'pi':>5} {'card':>9} {'n':>5}  {'cover':>6} {'naive':>6} {'refused':>7} {'width':>6}")
    for name, (tpr, tnr) in judges.items():
        for pi in truth:
            for n_pos, n_neg in cards:
                for n in runs:
                    cov, nv, ref, wid = cell(pi, tpr, tnr, n_pos, n_neg, n, reps, rng, args.draws)
                    verdict = grade(cov, round(reps * (1 - ref)))
                    flag = {"": "", "noise": "  (outside [0.93, 0.99], within Monte Carlo error)",
                            "bad": "  <-- outside [0.93, 0.99] beyond Monte Carlo error"}[verdict]
                    bad += verdict == "bad"
                    noise += verdict == "noise"
                    covs.append(cov)
                    naive.append(nv)
                    print(f"{name:<28} {pi:>5.2f} {f'{n_pos}+{n_neg}':>9} {n:>5}  {cov:>6.3f} {nv:>6.3f} {ref:>7.1%} "
                          f"{wid:>6.3f}{flag}")
    print(f"\n{len(covs)} cells x {reps} replicates in {time.time() - started:.0f} s: simulation interval coverage "
          f"min {min(covs):.3f}, median {float(np.median(covs)):.3f}; naive (card taken as exact) min "
          f"{min(naive):.3f}, median {float(np.median(naive)):.3f}; {bad} cells outside [{LOW}, {HIGH}] beyond "
          f"Monte Carlo error, {noise} outside within it")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
