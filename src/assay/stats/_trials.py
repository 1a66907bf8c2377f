"""Trial-based pass@k (Inspect AI style): every task is run n times and c of the runs succeed.

This is a different family from Fair Forge's per-conversation plug-in (``_passk``): there p = c / n
comes from the interactions of one conversation and is pushed through 1 - (1 - p)^k, which is
biased for small n. Here the unbiased estimators 1 - C(n-c, k) / C(n, k) and C(c, k) / C(n, k)
are exact averages over all k-subsets of the n trials; with n < k they are undefined and we say
so (None) rather than guess.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from assay.errors import ConfigError
from assay.stats._intervals import bootstrap_ratios, check_level, check_positive_int, percentile_interval
from assay.stats._np import require_numpy
from assay.stats._passk import check_counts, check_int, posterior_at_k, rising_ratio

TRIAL_UNBIASED = "trial_unbiased"
TRIAL_BAYESIAN = "trial_bayesian"


def unbiased_pass_at_k(n: int, c: int, k: int) -> float | None:
    """1 - C(n-c, k) / C(n, k): the chance a random k of the n trials holds a success; None if n < k."""
    n, c, k = check_counts(n, c, k, "unbiased_pass_at_k", min_n=0)
    return None if n < k else 1.0 - math.comb(n - c, k) / math.comb(n, k)


def unbiased_pass_pow_k(n: int, c: int, k: int) -> float | None:
    """C(c, k) / C(n, k): the chance a random k of the n trials all succeed; None if n < k."""
    n, c, k = check_counts(n, c, k, "unbiased_pass_pow_k", min_n=0)
    return None if n < k else math.comb(c, k) / math.comb(n, k)


@lru_cache(maxsize=65536)
def _unbiased_pair(n: int, c: int, k: int) -> tuple[float, float]:
    total = math.comb(n, k)
    return 1.0 - math.comb(n - c, k) / total, math.comb(c, k) / total


@lru_cache(maxsize=4096)
def _posterior_pair(alpha: float, beta: float, k: int) -> tuple[float, float]:
    return posterior_at_k(alpha, beta, k), rising_ratio(alpha, alpha + beta, k)


@dataclass(frozen=True, slots=True)
class TrialPassK:
    """pass@k and pass^k averaged over tasks, with intervals; estimates None when no task has n >= k."""

    family: str
    """Either "trial_unbiased" (unbiased estimators, task bootstrap) or "trial_bayesian" (posterior)."""
    k: int
    pass_at_k: float | None
    pass_at_k_ci_low: float | None
    pass_at_k_ci_high: float | None
    pass_pow_k: float | None
    pass_pow_k_ci_low: float | None
    pass_pow_k_ci_high: float | None
    n_tasks: int
    """Tasks averaged (those with n >= k)."""
    n_undefined: int
    """Tasks left out because they had fewer than k trials."""
    level: float
    method: str
    """"task_wilson" (the default), "task_bootstrap", "t_over_tasks" (the bootstrap method with fewer
    than MIN_BOOTSTRAP_TASKS or more than BOOTSTRAP_MAX_TASKS tasks) or "posterior_draws"."""


_METHODS = ("wilson", "bootstrap", "bayesian")


def trial_pass_k(
    tasks: Sequence[tuple[int, int]],
    k: int,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
    method: str = "wilson",
    prior: tuple[float, float] = (1.0, 1.0),
    counts: Sequence[int] | None = None,
) -> TrialPassK:
    """Average pass@k and pass^k over tasks given as (n trials, c successes) pairs.

    Tasks with n < k are undefined for the unbiased estimators; both methods leave them out and
    count them in ``n_undefined``, so the two methods always describe the same tasks.

    ``counts`` (optional) gives how many tasks share each (n, c) pair of *tasks*: a run of a
    million tasks has only a few hundred distinct pairs. It is exactly the same as listing each
    pair that many times.

    ``method="wilson"`` (family "trial_unbiased", the default): the mean of the per-task unbiased
    estimates with the effective-sample-size Wilson interval over tasks (``assay.stats._bounded``):
    n_eff = m (1 - m) / v from the between-task variance v of the mean, capped at the trials / k
    behind it, and the number of tasks when every task saturates (all pass@k 1 or 0), so the
    interval never collapses to [1, 1]. Chosen by the coverage simulation (``benchmarks/coverage.py``).
    ``method="bootstrap"`` (family "trial_unbiased"): the same mean, with a percentile interval from
    resampling whole tasks (the trials of a task are one cluster); zero width when tasks saturate.
    ``method="bayesian"`` (family "trial_bayesian"; deprecated, a FutureWarning: its interval
    covers 0.79 on 8 tasks and 0.000 for pass^5 over 30 mostly easy tasks in
    ``benchmarks/stats_round4.py``, because independent per-task posteriors ignore that the tasks
    themselves are a sample; use "wilson"): each task's success rate gets its own
    independent Beta(prior_a + c, prior_b + n - c) posterior; the estimate is the average of the
    exact posterior means of 1 - (1 - p)^k and p^k, and the interval the equal-tailed percentile
    interval of that average over *n_boot* joint posterior draws. We average per-task posteriors
    rather than pool all trials into one Beta, because pooling would pretend every task shares a
    single success rate. A posterior mean may fall outside an equal-tailed interval when the
    posterior is very skewed (one task, large k); bootstrap intervals always contain their estimate.
    """
    who = "trial_pass_k"
    k = check_int(k, "k", who, 1)
    level = check_level(level, who)
    check_positive_int(n_boot, "n_boot", who)
    if method not in _METHODS:
        raise ConfigError.unknown("trial_pass_k method", method, _METHODS)
    if method == "bayesian":
        warnings.warn("trial_pass_k(method='bayesian') is deprecated: its interval describes these tasks' "
                      "posteriors, not the task population, and covers far below its level (0.79 at 95% on 8 "
                      "tasks); use method='wilson' (the default)", FutureWarning, stacklevel=2)
    a0, b0 = prior
    if not (a0 > 0 and b0 > 0 and math.isfinite(a0) and math.isfinite(b0)):
        raise ValueError(f"{who}: prior must be two finite numbers > 0, got {prior!r}")
    if counts is not None:
        if len(counts) != len(tasks) or any(int(m) < 0 for m in counts):
            raise ValueError(f"{who}: counts must give a multiplicity >= 0 for each of the {len(tasks)} tasks")
        if method == "wilson":
            return _wilson_over_tasks(tasks, [int(m) for m in counts], k, level, who)
        if method == "bootstrap" and sum(counts) > BOOTSTRAP_MAX_TASKS:
            return _weighted_t(tasks, [int(m) for m in counts], k, level, who)
        tasks = [t for t, m in zip(tasks, counts) for _ in range(int(m))]
    if method == "wilson":
        return _wilson_over_tasks(tasks, [1] * len(tasks), k, level, who)
    checked = []
    seen: set[tuple[int, int]] = set()  # tasks repeat a few (n, c) pairs: check each pair once
    for i, task in enumerate(tasks):
        if type(task) is tuple and task in seen:
            checked.append(task)
            continue
        try:
            n, c = task
        except (TypeError, ValueError):
            raise ValueError(f"{who}: tasks[{i}] must be an (n, c) pair, got {task!r}") from None
        pair = check_counts(n, c, k, f"{who}: tasks[{i}]", min_n=0)[:2]
        seen.add(pair)
        checked.append(pair)
    defined = sorted(t for t in checked if t[0] >= k)  # sorted: results ignore the order of tasks
    bayes = method == "bayesian"
    family, how = (TRIAL_BAYESIAN, "posterior_draws") if bayes else (TRIAL_UNBIASED, "task_bootstrap")
    undefined = len(checked) - len(defined)
    if not defined:
        return TrialPassK(family, k, None, None, None, None, None, None, 0, undefined, level, how)
    if bayes:
        pairs = [_posterior_pair(a0 + c, b0 + n - c, k) for n, c in defined]
    else:
        pairs = [_unbiased_pair(n, c, k) for n, c in defined]
    at_k = math.fsum(p[0] for p in pairs) / len(pairs)
    pow_k = math.fsum(p[1] for p in pairs) / len(pairs)
    if len(defined) == 1 and not bayes:
        return TrialPassK(family, k, at_k, None, None, pow_k, None, None, 1, undefined, level, how)
    np = require_numpy(f"trial_pass_k(method={method!r})")
    if bayes:
        reps = _posterior_draws(np, defined, k, a0, b0, n_boot, seed)
        tails = [0.5 - level / 2.0, 0.5 + level / 2.0]
        (at_lo, pow_lo), (at_hi, pow_hi) = np.quantile(reps, tails, axis=0).tolist()
    elif len(pairs) > BOOTSTRAP_MAX_TASKS or len(pairs) < MIN_BOOTSTRAP_TASKS:
        # Many independent tasks: the mean of their estimates is normal to high accuracy, and a t
        # interval costs O(tasks) where the bootstrap costs O(tasks x n_boot). Few tasks: a
        # percentile bootstrap of 2 or 5 values is far too narrow; the t interval is honest.
        how = "t_over_tasks"
        (at_lo, at_hi), (pow_lo, pow_hi) = (_t_bounds(np, np.asarray([p[j] for p in pairs]), level) for j in (0, 1))
    else:
        values = np.asarray(pairs, dtype=float).T
        reps = bootstrap_ratios(np, values, np.ones(len(pairs)), n_boot, seed)
        at_lo, at_hi = percentile_interval(np, reps[:, 0], at_k, level)
        pow_lo, pow_hi = percentile_interval(np, reps[:, 1], pow_k, level)
    return TrialPassK(family, k, at_k, at_lo, at_hi, pow_k, pow_lo, pow_hi, len(defined), undefined, level, how)


BOOTSTRAP_MAX_TASKS = 1000
"""Above this many tasks the unbiased family's interval is a t interval over tasks (see above)."""
MIN_BOOTSTRAP_TASKS = 20
"""Below this many tasks, too: the same rule as ``mean_interval``'s clusters."""


def _wilson_over_tasks(pairs: Sequence[tuple[int, int]], mult: list[int], k: int, level: float,
                       who: str) -> TrialPassK:
    """The unbiased family with the effective-sample-size Wilson interval, from distinct (n, c) pairs."""
    from assay.stats._bounded import ess_wilson

    np = require_numpy(who)
    merged: dict[tuple[int, int], int] = {}
    undefined = 0
    for i, (pair, m) in enumerate(zip(pairs, mult)):
        try:
            n, c = pair
        except (TypeError, ValueError):
            raise ValueError(f"{who}: tasks[{i}] must be an (n, c) pair, got {pair!r}") from None
        n, c = check_counts(n, c, k, f"{who}: tasks[{i}]", min_n=0)[:2]
        if n < k:
            undefined += m
        elif m:
            merged[(n, c)] = merged.get((n, c), 0) + m
    total = sum(merged.values())
    if total == 0:
        return TrialPassK(TRIAL_UNBIASED, k, None, None, None, None, None, None, 0, undefined, level, "task_wilson")
    keys = sorted(merged)  # sorted: results ignore the order of tasks
    w = [merged[key] for key in keys]
    trials = math.fsum(n * m for (n, _), m in zip(keys, w))
    # pass@1 is the mean of the per-task rates c / n. It equals the run's pooled pass rate (passes /
    # trials) only when every task has the same number of trials; with unequal trials the two
    # differ (by up to 0.25) and each has its own interval: pass@1 this one, from the spread of the
    # per-task rates over tasks (plain half-corrected Wilson with one trial per task), t-corrected
    # for their number; the pass rate ``bounded_mean_interval`` over trials clustered by task.
    # For k >= 2 the coverage simulation showed the t correction over-covers (0.99+ at 10 tasks).
    single = k == 1 and all(n == 1 for n, _ in keys)
    df = max(total - 1, 1) if k == 1 and not single else None
    out = []
    for j in (0, 1):
        v = [_unbiased_pair(n, c, k)[j] for n, c in keys]
        mean = math.fsum(x * m for x, m in zip(v, w)) / total
        if single:
            var = mean * (1.0 - mean) / total
        else:
            var = math.fsum(m * (x - mean) ** 2 for x, m in zip(v, w)) / (total - 1) / total if total > 1 else 0.0
        low, high = ess_wilson(np, mean, var, total, trials / k, level, df)
        out.append((mean, float(low), float(high)))
    (at, at_lo, at_hi), (pw, pw_lo, pw_hi) = out
    return TrialPassK(TRIAL_UNBIASED, k, at, at_lo, at_hi, pw, pw_lo, pw_hi, total, undefined, level, "task_wilson")


def _weighted_t(pairs: Sequence[tuple[int, int]], mult: list[int], k: int, level: float, who: str) -> TrialPassK:
    """The unbiased family over many tasks given as distinct (n, c) pairs with multiplicities."""
    from assay.stats._beta import t_ppf

    rows = []
    undefined = 0
    for i, (pair, m) in enumerate(zip(pairs, mult)):
        n, c = check_counts(pair[0], pair[1], k, f"{who}: tasks[{i}]", min_n=0)[:2]
        if n < k:
            undefined += m
        elif m:
            rows.append((_unbiased_pair(n, c, k), m))
    total = sum(m for _, m in rows)
    if total == 0:
        return TrialPassK(TRIAL_UNBIASED, k, None, None, None, None, None, None, 0, undefined, level, "t_over_tasks")
    out = []
    for j in (0, 1):
        mean = math.fsum(v[j] * m for v, m in rows) / total
        if total < 2:
            out.append((mean, None, None))
            continue
        var = math.fsum(m * (v[j] - mean) ** 2 for v, m in rows) / (total - 1)
        half = t_ppf(0.5 + level / 2.0, total - 1) * math.sqrt(var / total)
        out.append((mean, max(0.0, mean - half), min(1.0, mean + half)))
    (at, at_lo, at_hi), (pw, pw_lo, pw_hi) = out
    return TrialPassK(TRIAL_UNBIASED, k, at, at_lo, at_hi, pw, pw_lo, pw_hi, total, undefined, level, "t_over_tasks")


def _t_bounds(np, values, level: float) -> tuple[float, float]:
    from assay.stats._beta import t_ppf

    n = len(values)
    mean = float(values.mean())
    half = t_ppf(0.5 + level / 2.0, n - 1) * float(values.std(ddof=1)) / math.sqrt(n)
    return max(0.0, mean - half), min(1.0, mean + half)


def _posterior_draws(np, tasks, k: int, a0: float, b0: float, n_draws: int, seed: int):
    """(n_draws, 2): the task-average of 1 - (1 - p)^k and of p^k under joint posterior draws."""
    counts = np.asarray(tasks, dtype=float)
    alpha, beta = a0 + counts[:, 1], b0 + counts[:, 0] - counts[:, 1]
    rng = np.random.default_rng(seed)
    out = np.empty((n_draws, 2))
    step = max(1, (1 << 20) // len(tasks))
    for start in range(0, n_draws, step):
        stop = min(n_draws, start + step)
        p = rng.beta(alpha, beta, size=(stop - start, len(tasks)))
        out[start:stop, 0] = 1.0 - ((1.0 - p) ** k).mean(axis=1)
        out[start:stop, 1] = (p**k).mean(axis=1)
    return out
