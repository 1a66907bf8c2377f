"""Statistics, round 4 (issue #42): each new method next to the one it replaces, by simulation.

Sections (each prints its cells; a graded figure outside its target is marked "!!"):

1. compare: coverage of the 95% interval of the mean difference, its null exclusion rate, and how
   often interval and test disagree, at 5, 8, 20 and 50 tasks x 5 trials (0/1 outcomes, task
   success rates from Beta(1, 1), B = A shifted on the logit scale). New: cluster-t interval and
   p-value (``paired_compare``); previous: percentile cluster bootstrap + sign-flip p
   (``paired_compare(method="bootstrap")``). Target: coverage 0.93-0.99.
2. compare --sequential: false alarms of the same agent compared with itself, looked at after every
   10 tasks up to 1,000 (100 looks), stopping at the first alarm. New: the betting confidence
   sequence (``assay.stats._sequential``'s own bet_step, vectorised over replications); previous:
   the fixed-n cluster-t test rerun at every look. Also the e-process for win/loss counts against
   the exact sign test rerun at every look, and the width cost of the sequence against the fixed-n
   t interval at n = 50, 200, 1,000 (``SequentialComparison`` itself). Target: <= 0.05.
3. judge-corrected pass rate: coverage on 8 and 20 tasks x 5 trials, with a near-perfect and a
   middling judge (card of 100 labels). New: ``corrected_pass_rate(..., clusters=)``; previous:
   the verdicts as independent. Target: 0.93-0.99.
4. Bradley-Terry: the fitted top-bottom gap as a share of the truth at 3 and 5 games per pair, and
   how often one added loss raises the loser's rating. New: the always-on N(0, 2^2) prior;
   previous: the plain MLE, with one virtual tie per pair only when the MLE does not exist.
5. Loose ends: ``trial_pass_k`` coverage, method "bayesian" (deprecated) against "wilson" (8 tasks x
   5 trials; pass^5 over 30 mostly easy tasks); pass@1 and the pooled pass rate with unequal trials
   per task, each with its own interval against its own truth.

    python benchmarks/stats_round4.py          # default size: 2-3 minutes on 2 shared cores
    python benchmarks/stats_round4.py --full   # 2,000+ replications per cell (the issue's size): ~15 min
    python benchmarks/stats_round4.py --only sequential   # one section

Exit status 1 when a graded figure misses its target.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings

import numpy as np

from assay.stats import SequentialComparison, SignEProcess, corrected_pass_rate, paired_compare, trial_pass_k
from assay.stats._beta import t_ppf
from assay.stats._pairwise import fit_bt
from assay.stats._sequential import bet_step, log_hedged, plugin_bets

LEVEL, ALPHA = 0.95, 0.05
LOW, HIGH = 0.93, 0.99
TRIALS = 5
failures: list[str] = []


def grade(name: str, value: float, low: float | None, high: float | None) -> str:
    bad = (low is not None and value < low) or (high is not None and value > high)
    if bad:
        failures.append(f"{name}: {value:.3f}")
    return f"{value:.3f}" + (" !!" if bad else "")


def expit(x):
    return 1.0 / (1.0 + np.exp(-x))


# -- 1. compare ------------------------------------------------------------------------------------

def compare_section(reps: int, seed: int) -> None:
    print("\n1. compare: 95% interval of the mean difference B - A (tasks x 5 trials, 0/1 outcomes)")
    print(f"   {reps} replications per cell; new = cluster-t interval and p, previous = percentile bootstrap "
          "+ sign-flip p")
    rng = np.random.default_rng(seed)
    big = rng.beta(1, 1, 2_000_000)
    for shift in (0.0, 0.8):
        truth = float(np.mean(expit(np.log(big / (1 - big)) + shift) - big)) if shift else 0.0
        print(f"   effect: logit shift {shift} (true mean difference {truth:+.3f})")
        print(f"   {'tasks':>5} | {'coverage new':>12} {'previous':>9} | {'disagree new':>12} {'previous':>9}")
        for tasks in (5, 8, 20, 50):
            cover = {"cluster_t": 0, "bootstrap": 0}
            disagree = {"cluster_t": 0, "bootstrap": 0}
            for _ in range(reps):
                q = rng.beta(1, 1, tasks)
                qb = expit(np.log(q / (1 - q)) + shift) if shift else q
                a = rng.random((tasks, TRIALS)) < q[:, None]
                b = rng.random((tasks, TRIALS)) < qb[:, None]
                ids = [(t, j) for t in range(tasks) for j in range(TRIALS)]
                sa = {i: float(a[i]) for i in ids}
                sb = {i: float(b[i]) for i in ids}
                clusters = {i: i[0] for i in ids}
                for method in cover:
                    c = paired_compare(sa, sb, clusters, method=method, n_boot=1000, n_perm=2000,
                                       seed=int(rng.integers(2**31)))
                    inside = c.ci_low is not None and c.ci_low <= truth <= c.ci_high
                    cover[method] += inside
                    excludes0 = c.ci_low is not None and (c.ci_low > 0 or c.ci_high < 0)
                    disagree[method] += excludes0 != (c.p_value < 1 - LEVEL)
            new, old = cover["cluster_t"] / reps, cover["bootstrap"] / reps
            print(f"   {tasks:>5} | {grade(f'compare coverage {tasks} tasks shift {shift}', new, LOW, HIGH):>12} "
                  f"{old:>9.3f} | {disagree['cluster_t'] / reps:>12.3f} {disagree['bootstrap'] / reps:>9.3f}")
    print("   (null exclusion rate = 1 - coverage at shift 0; 'disagree': the interval excludes 0 but p >= 0.05, "
          "or the reverse. The new method disagrees only at 5 tasks, where its p-value is floored at the design's "
          "2 / 2^5 = 0.0625: no test on 5 tasks can reach 0.05, and compare says 'too few tasks')")


# -- 2. sequential ---------------------------------------------------------------------------------

def sequential_section(reps: int, seed: int) -> None:
    print("\n2. compare --sequential: the same agent twice, a look after every 10 tasks up to 1,000 (100 looks)")
    rng = np.random.default_rng(seed)
    n, every = 1000, 10
    q = rng.beta(1, 1, (reps, n))
    a = rng.binomial(TRIALS, q) / TRIALS
    b = rng.binomial(TRIALS, q) / TRIALS
    d = b - a  # task-level differences in [-1, 1], mean 0
    x = (d + 1.0) / 2.0
    lp, lm = np.zeros(reps), np.zeros(reps)
    mu, ss = np.full(reps, 0.5), np.full(reps, 0.25)
    s1, s2 = np.zeros(reps), np.zeros(reps)
    seq_alarm, t_alarm = np.zeros(reps, bool), np.zeros(reps, bool)
    checkpoints = {100: None, 200: None, 1000: None}
    first_look = None
    for i in range(n):
        t = i + 1
        lam = plugin_bets(np, ss / t, t, ALPHA)
        lp, lm = bet_step(np, lp, lm, x[:, i], 0.5, lam)
        mu = (mu * t + x[:, i]) / (t + 1)
        ss = ss + (x[:, i] - mu) ** 2
        s1 += d[:, i]
        s2 += d[:, i] ** 2
        if t % every == 0:
            seq_alarm |= log_hedged(np, lp, lm) >= math.log(1 / ALPHA)
            mean = s1 / t
            var = np.maximum(s2 - t * mean**2, 0.0) / (t - 1)
            se = np.sqrt(var / t)
            with np.errstate(divide="ignore", invalid="ignore"):
                tstat = np.where(se > 0, np.abs(mean) / se, 0.0)
            t_alarm |= tstat > t_ppf(1 - ALPHA / 2, t - 1)
            if first_look is None:
                first_look = float(t_alarm.mean())
            if t in checkpoints:
                checkpoints[t] = (float(seq_alarm.mean()), float(t_alarm.mean()))
    print(f"   {reps} replications; false alarms by n tasks (stopping at the first alarm):")
    print(f"   {'tasks':>5} | {'betting CS':>10} | {'cluster-t rerun':>15}")
    for t, (s, f) in checkpoints.items():
        graded = grade(f"sequential false alarms by {t}", s, None, ALPHA)
        print(f"   {t:>5} | {graded:>10} | {f:>15.3f}")
    print(f"   (one look at 10 tasks, cluster-t: {first_look:.3f})")

    # win/loss counts: the KT e-process against the exact sign test rerun, 100 looks of 10 decisive pairs
    wins = np.cumsum(rng.integers(0, 2, (reps, n)), axis=1)
    e_alarm = np.zeros(reps, bool)
    s_alarm = np.zeros(reps, bool)
    for t in range(every, n + 1, every):
        w = wins[:, t - 1]
        e_alarm |= np.array([SignEProcess.log_e(int(k), t - int(k)) >= math.log(1 / ALPHA) for k in w])
        s_alarm |= _sign_p(w, t) < ALPHA
    graded = grade("sign e-process false alarms", float(e_alarm.mean()), None, ALPHA)
    print(f"   win/loss counts, 100 looks of 10 pairs: KT e-process {graded}, exact sign test rerun "
          f"{float(s_alarm.mean()):.3f}")

    # width cost: the sequence against the fixed-n t interval on the same data (the class itself)
    print("   width of the 95% confidence sequence / the fixed-n t interval, same data (alternative: mean 0.1):")
    widths: dict[int, list[float]] = {50: [], 200: [], 1000: []}
    for r in range(min(reps, 100)):
        qa = rng.beta(1, 1, n)
        da = (rng.binomial(TRIALS, np.minimum(qa + 0.1, 1.0)) - rng.binomial(TRIALS, qa)) / TRIALS
        seq = SequentialComparison(alpha=ALPHA)
        done = 0
        for m in widths:
            seq.update(da[done:m].tolist())
            done = m
            half = t_ppf(1 - ALPHA / 2, m - 1) * float(np.std(da[:m], ddof=1)) / math.sqrt(m)
            if seq.low is not None:
                widths[m].append((seq.high - seq.low) / (2 * half))
    print("   " + ", ".join(f"n = {m}: {np.median(v):.2f}x (IQR {np.quantile(v, .25):.2f}-{np.quantile(v, .75):.2f})"
                            for m, v in widths.items()))


# -- 3. judge-corrected pass rate ------------------------------------------------------------------

def corrected_section(reps: int, seed: int) -> None:
    print("\n3. judge-corrected pass rate: coverage of the 95% interval (tasks x 5 trials, Beta(2m, 2(1-m)) "
          "task rates, a card of 50 + 50 labels)")
    rng = np.random.default_rng(seed)
    print(f"   {reps} replications per cell")
    print(f"   {'tasks':>5} {'TPR/TNR':>9} {'rate':>5} | {'clusters=':>9} | {'previous':>8}")
    for tasks in (8, 20):
        for tpr, tnr in ((0.98, 0.98), (0.9, 0.85)):
            for mean in (0.3, 0.6, 0.85):
                new = old = 0
                for _ in range(reps):
                    q = rng.beta(2 * mean, 2 * (1 - mean), tasks)
                    truth = rng.random((tasks, TRIALS)) < q[:, None]
                    judged = np.where(truth, rng.random(truth.shape) < tpr, rng.random(truth.shape) >= tnr)
                    tp, tn = int(rng.binomial(50, tpr)), int(rng.binomial(50, tnr))
                    card = dict(tp=tp, fn=50 - tp, tn=tn, fp=50 - tn, draws=5000, seed=int(rng.integers(2**31)))
                    verdicts = judged.ravel().astype(int).tolist()
                    c_old = corrected_pass_rate(sum(verdicts), tasks * TRIALS, **card)
                    c_new = corrected_pass_rate(verdicts, tasks * TRIALS, **card,
                                                clusters=np.repeat(np.arange(tasks), TRIALS).tolist())
                    old += c_old.low <= mean <= c_old.high
                    new += c_new.low <= mean <= c_new.high
                label = f"corrected pass rate {tasks} tasks {tpr}/{tnr} {mean}"
                print(f"   {tasks:>5} {f'{tpr}/{tnr}':>9} {mean:>5} | {grade(label, new / reps, LOW, HIGH):>9} | "
                      f"{old / reps:>8.3f}")


# -- 4. Bradley-Terry ------------------------------------------------------------------------------

def _strongly_connected(beat) -> bool:
    k = beat.shape[0]

    def reach(adj) -> int:
        seen, todo = {0}, [0]
        while todo:
            i = todo.pop()
            for j in np.flatnonzero(adj[i]).tolist():
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
        return len(seen)
    return reach(beat) == k and reach(beat.T) == k


def previous_bt(wins):
    """The previous fit: the plain MLE, or with one virtual tie per pair that met when it does not exist."""
    if not _strongly_connected(wins > 0):
        wins = wins + 0.5 * ((wins + wins.T) > 0)
    theta = fit_bt(np, wins, penalty=1e-9, iters=300)[0]
    return theta - theta.mean()


def bt_section(reps: int, seed: int) -> None:
    print("\n4. Bradley-Terry: fitted top-bottom gap / true gap (mean over tournaments), all pairs")
    rng = np.random.default_rng(seed)
    print(f"   {reps} tournaments per cell")
    print(f"   {'players':>7} {'spread':>6} {'games/pair':>10} | {'N(0, 2^2) prior':>15} | {'previous':>8}")
    for k in (4, 6, 8):
        for spread in (3.0, 5.0):
            truth = np.linspace(-spread / 2, spread / 2, k)
            for per_pair in (3, 5):
                new, old = [], []
                for _ in range(reps):
                    w = np.zeros((k, k))
                    for i in range(k):
                        for j in range(i + 1, k):
                            x = rng.binomial(per_pair, expit(truth[i] - truth[j]))
                            w[i, j], w[j, i] = x, per_pair - x
                    new.append((lambda th: th[-1] - th[0])(fit_bt(np, w)[0]) / spread)
                    old.append((lambda th: th[-1] - th[0])(previous_bt(w)) / spread)
                print(f"   {k:>7} {spread:>6} {per_pair:>10} | {np.mean(new):>15.3f} | {np.mean(old):>8.3f}")
    raised = {"new": 0, "old": 0}
    trials, example = 0, None
    for _ in range(reps):
        k = int(rng.integers(3, 7))
        w = np.zeros((k, k))
        for _g in range(int(rng.integers(k, 4 * k))):
            i, j = rng.choice(k, 2, replace=False)
            w[i, j] += 1
        for i in range(k - 1):
            w[i, i + 1] += 1  # connected
        i, j = rng.choice(k, 2, replace=False)
        after = w.copy()
        after[j, i] += 1  # i loses to j
        trials += 1
        raised["new"] += fit_bt(np, after)[0][i] > fit_bt(np, w)[0][i] + 1e-9
        before_old, after_old = previous_bt(w)[i], previous_bt(after)[i]
        if after_old > before_old + 1e-9:
            raised["old"] += 1
            if example is None or after_old - before_old > example[3] - example[2]:  # the largest rise
                example = (k, i, before_old, after_old, fit_bt(np, w)[0][i], fit_bt(np, after)[0][i])
    print(f"   one added loss raised the loser's rating: N(0, 2^2) prior {raised['new']} of {trials}, "
          f"previous {raised['old']} of {trials}")
    if raised["new"]:
        failures.append(f"BT: a loss raised a rating {raised['new']} times")
    if example is not None:
        k, i, b_old, a_old, b_new, a_new = example
        print(f"   the largest rise: {k} players, player {i} loses once more: previous {b_old:+.2f} -> {a_old:+.2f}, "
              f"N(0, 2^2) prior {b_new:+.2f} -> {a_new:+.2f} (log-strength)")


# -- 5. loose ends ---------------------------------------------------------------------------------

def loose_ends_section(reps: int, seed: int) -> None:
    print("\n5. trial_pass_k: 95% coverage, method 'wilson' against the deprecated 'bayesian'")
    rng = np.random.default_rng(seed)
    cells = [("8 tasks, Beta(1, 1), pass@1", 8, (1.0, 1.0), 1, 0, True),
             ("8 tasks, Beta(1, 1), pass@3", 8, (1.0, 1.0), 3, 0, False),
             ("30 easy tasks, Beta(4, 0.5), pass^5", 30, (4.0, 0.5), 5, 1, True)]
    for label, tasks, (pa, pb), k, which, graded in cells:
        pop = rng.beta(pa, pb, 2_000_000)
        truth = float(np.mean(1 - (1 - pop) ** k)) if which == 0 else float(np.mean(pop**k))
        cov = {"wilson": 0, "bayesian": 0}
        for _ in range(reps):
            p = rng.beta(pa, pb, tasks)
            c = rng.binomial(TRIALS, p)
            pairs = [(TRIALS, int(x)) for x in c]
            for method in cov:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)
                    r = trial_pass_k(pairs, k, method=method, n_boot=1000, seed=int(rng.integers(2**31)))
                lo, hi = (r.pass_at_k_ci_low, r.pass_at_k_ci_high) if which == 0 else (r.pass_pow_k_ci_low,
                                                                                       r.pass_pow_k_ci_high)
                cov[method] += lo is not None and lo <= truth <= hi
        shown = grade("trial_pass_k " + label, cov["wilson"] / reps, LOW, HIGH) if graded else \
            f"{cov['wilson'] / reps:.3f} (not graded: k >= 2 over few tasks over-covers, which is conservative; " \
            "its grid is benchmarks/coverage.py)"
        print(f"   {label:<36} bayesian {cov['bayesian'] / reps:.3f}, wilson {shown}")

    print("   pass@1 (mean of per-task rates) and the pooled pass rate, unequal trials (1-10 per task, more "
          "trials on easy tasks), 30 tasks:")
    from assay.stats import bounded_mean_interval

    pop = rng.beta(1, 1, 400_000)
    n_pop = 1 + np.floor(pop * 9.999).astype(int)  # easier tasks get more trials (a retry loop)
    truth_at1 = float(pop.mean())
    truth_pooled = float((pop * n_pop).sum() / n_pop.sum())
    cov_at1 = cov_rate = 0
    gaps = []
    for _ in range(reps):
        p = rng.beta(1, 1, 30)
        n = 1 + np.floor(p * 9.999).astype(int)
        c = rng.binomial(n, p)
        r = trial_pass_k([(int(a), int(b)) for a, b in zip(n, c)], 1)
        values = np.concatenate([np.r_[np.ones(b), np.zeros(a - b)] for a, b in zip(n, c)])
        ids = np.repeat(np.arange(30), n)
        pr = bounded_mean_interval(values.tolist(), ids.tolist())
        gaps.append(abs(r.pass_at_k - pr.estimate))
        cov_at1 += r.pass_at_k_ci_low <= truth_at1 <= r.pass_at_k_ci_high
        cov_rate += pr.low <= truth_pooled <= pr.high
    print(f"   truths: pass@1 {truth_at1:.3f}, pooled pass rate {truth_pooled:.3f}; |pass@1 - pass rate| median "
          f"{np.median(gaps):.3f}, max {np.max(gaps):.3f}")
    print(f"   coverage: pass@1 with its own interval {grade('pass@1 own interval', cov_at1 / reps, LOW, HIGH)}, "
          f"pass rate with its own {grade('pass rate own interval', cov_rate / reps, LOW, HIGH)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="2,000+ replications per cell (about 15 minutes)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--only", choices=["compare", "sequential", "corrected", "bt", "loose"], default=None)
    args = ap.parse_args()
    size = {"compare": 2000, "sequential": 4000, "corrected": 2000, "bt": 1000, "loose": 2000} if args.full else \
        {"compare": 300, "sequential": 2000, "corrected": 300, "bt": 200, "loose": 400}
    sections = {"compare": compare_section, "sequential": sequential_section, "corrected": corrected_section,
                "bt": bt_section, "loose": loose_ends_section}
    for name, run in sections.items():
        if args.only in (None, name):
            start = time.perf_counter()
            run(size[name], args.seed)
            print(f"   ({time.perf_counter() - start:.0f} s)")
    if failures:
        print("\nmissed targets: " + "; ".join(failures))
        sys.exit(1)
    print("\nevery graded figure within its target")


def _sign_p(wins, n: int):
    """Exact two-sided sign test p-values for an array of win counts out of n (no scipy)."""
    from assay.stats._beta import beta_cdf

    out = np.empty(len(wins))
    for i, w in enumerate(np.asarray(wins).tolist()):
        k = max(w, n - w)
        out[i] = min(1.0, 2.0 * beta_cdf(0.5, k, n - k + 1)) if k > n / 2 else 1.0
    return out


if __name__ == "__main__":
    main()
