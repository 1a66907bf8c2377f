"""Comparing two runs item by item: paired difference, cluster-t interval and test, Holm.

Pairing removes the between-item variance that dominates agent evals (some tasks are simply hard),
so a paired test finds regressions an unpaired one misses. When items come in clusters (trials of
one task), the cluster is the unit: its items share whatever makes the task easy or hard.

The interval and the p-value come from one statistic, the cluster-robust t (CR1 standard error,
G - 1 degrees of freedom for G clusters), so the interval excludes 0 exactly when p < 1 - level:
they cannot contradict each other. The previous method (a percentile cluster bootstrap interval
beside a sign-flip permutation test) excluded 0 in 9% of null comparisons at 8 tasks (13% at 5)
while its test held 5%; ``benchmarks/stats_round4.py`` measures both. The sign-flip p-value is
still computed (``sign_flip_p``, with its floor ``min_p_value``), and the t p-value is never
allowed below the exact design floor 2 / 2**G: with G clusters no symmetric test can go lower.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from assay.stats._beta import t_ppf
from assay.stats._intervals import (
    bootstrap_ratios,
    check_level,
    check_positive_int,
    cluster_totals,
    percentile_interval,
    t_two_sided_p,
)
from assay.stats._np import canonical, require_numpy

_CHUNK = 1 << 20  # sign flips held at once


@dataclass(frozen=True, slots=True)
class Comparison:
    """Run b against run a on the ids both scored; the statistics are None when none are shared."""

    difference: float | None
    """Mean of b - a over paired ids (positive: b scores higher)."""
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    """Two-sided p-value of the interval's own method (``method``): the cluster-t test of a zero
    mean difference, floored at 2 / 2**n_clusters; for "bootstrap" the sign-flip p-value."""
    mean_a: float | None
    mean_b: float | None
    n_paired: int
    n_clusters: int
    only_in_a: tuple[Hashable, ...]
    """Ids scored in a but not in b (left out of every statistic)."""
    only_in_b: tuple[Hashable, ...]
    level: float
    permutations: int
    """Sign patterns the p-value covers: all 2**G of the G clusters with a non-zero sum when exact
    (enumerated, or the exact distribution of the total), else the n_perm random draws."""
    exact: bool
    min_p_value: float | None = None
    """The smallest p-value this design can give (2 / 2**n_clusters exact, else the random flips'
    floor 1 / (1 + n_perm)): with 2 clusters it is 0.5, so no difference, however large, is ever
    significant."""
    method: str = "cluster_t"
    """"cluster_t" (interval and p-value from the cluster-robust t statistic) or "bootstrap" (the
    previous method: percentile cluster bootstrap interval, sign-flip p-value)."""
    sign_flip_p: float | None = None
    """Two-sided sign-flip permutation p-value over clusters (clusters summing to 0 left out): exact
    when ``exact``, else over ``permutations`` random patterns. With one pair per task and 0/1
    scores it is the exact sign test."""


_METHODS = ("cluster_t", "bootstrap")


def _scored(scores: Mapping[Hashable, float | None], side: str) -> dict[Hashable, float]:
    out = {}
    for key, value in scores.items():
        if value is None:
            continue
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"paired_compare: {side}[{key!r}] must be a finite number or None, got {value!r}")
        out[key] = number
    return out


def paired_compare(
    a: Mapping[Hashable, float | None],
    b: Mapping[Hashable, float | None],
    clusters: Mapping[Hashable, Hashable] | None = None,
    level: float = 0.95,
    n_boot: int = 2000,
    n_perm: int = 10000,
    seed: int = 0,
    method: str = "cluster_t",
) -> Comparison:
    """Compare scores *b* against *a* (id -> score) on the ids both have; None scores count as absent.

    *clusters* maps each id to its cluster (e.g. trial id -> task id); without it each id is its own
    cluster. ``method="cluster_t"`` (default): the interval is mean +- t_{G-1} x CR1 standard error
    and the p-value is the same t statistic's (floored at 2 / 2**G), so the two agree; it
    covers 0.93-0.99 from 5 clusters up (``benchmarks/stats_round4.py``). ``"bootstrap"``: the
    previous percentile cluster bootstrap (*n_boot* resamples) with the sign-flip p-value, which
    can disagree with it and is too narrow below 50 clusters. Either way ``sign_flip_p`` flips the
    sign of each cluster's summed difference (clusters summing to 0, ties, left out), exactly while
    that is cheap (see ``_sign_flip_p``), else over n_perm random patterns as (1 + hits) /
    (1 + n_perm), never below that floor of 1 / (1 + n_perm).
    """
    if method not in _METHODS:
        raise ValueError(f"paired_compare: method must be one of {', '.join(_METHODS)}, got {method!r}")
    level = check_level(level, "paired_compare")
    check_positive_int(n_boot, "n_boot", "paired_compare")
    check_positive_int(n_perm, "n_perm", "paired_compare")
    sa, sb = _scored(a, "a"), _scored(b, "b")
    ids = canonical(sa.keys() & sb.keys())
    only_a, only_b = tuple(canonical(sa.keys() - sb.keys())), tuple(canonical(sb.keys() - sa.keys()))
    if not ids:
        return Comparison(None, None, None, None, None, None, 0, 0, only_a, only_b, level, 0, False, None, method)
    if clusters is None:
        cluster_of = ids
    else:
        missing = [i for i in ids if i not in clusters]
        if missing:
            shown = ", ".join(map(repr, missing[:5])) + (", ..." if len(missing) > 5 else "")
            raise ValueError(f"paired_compare: clusters has no entry for {len(missing)} paired ids: {shown}")
        cluster_of = [clusters[i] for i in ids]
    diffs = [sb[i] - sa[i] for i in ids]
    n = len(ids)
    mean_a, mean_b = math.fsum(sa[i] for i in ids) / n, math.fsum(sb[i] for i in ids) / n
    difference = math.fsum(diffs) / n
    np = require_numpy("paired_compare")
    sums, counts = cluster_totals(np, np.asarray(diffs, dtype=float), cluster_of)
    g = len(counts)
    low = high = None
    flip_p, used, exact = _sign_flip_p(np, sums, n_perm, seed)
    floor = min_p_value(g, n_perm, exact=exact)
    if method == "bootstrap":
        if g >= 2:
            reps = bootstrap_ratios(np, sums, counts, n_boot, seed)[:, 0]
            low, high = percentile_interval(np, reps, difference, level)
        p_value = flip_p
    else:
        low, high, t_p = cluster_t(np, sums, counts, difference, level)
        # no test on G clusters can honestly go below 2 / 2**G (the exact sign-flip floor)
        p_value = 1.0 if t_p is None else max(t_p, min_p_value(g, exact=True))
    return Comparison(difference, low, high, p_value, mean_a, mean_b, n, g, only_a, only_b, level, used, exact,
                      floor, method, flip_p)


def cluster_t(np, sums, counts, estimate: float, level: float) -> tuple[float | None, float | None, float | None]:
    """(low, high, p) of the cluster-robust t interval and test of a zero mean, from per-cluster sums
    and counts: CR1 standard error sqrt(G / (G - 1) sum_g (S_g - n_g m)^2) / n, G - 1 degrees of
    freedom. One cluster: (None, None, None). No spread at all: a zero-width interval, p 1 when the
    estimate is 0, else 0 (the caller floors it at 2 / 2**G)."""
    g = len(counts)
    if g < 2:
        return None, None, None
    n = float(counts.sum())
    resid = sums - counts * estimate
    se = math.sqrt(g / (g - 1) * float(np.dot(resid, resid))) / n
    scale = max(abs(estimate), float(np.abs(sums).max()) / max(float(counts.min()), 1.0), 1e-300)
    if se <= 1e-12 * scale:
        return estimate, estimate, 1.0 if abs(estimate) <= 1e-12 * scale else 0.0
    half = t_ppf(0.5 + level / 2.0, g - 1) * se
    return estimate - half, estimate + half, t_two_sided_p(estimate / se, g - 1)


def min_p_value(n_clusters: int, n_perm: int = 10000, *, exact: bool | None = None) -> float:
    """The smallest two-sided sign-flip p-value reachable with *n_clusters* clusters.

    Exact test: the observed pattern and its mirror image are always hits, so p >= 2 / 2**G.
    Random flips: p >= 1 / (1 + n_perm), the floor of the Monte Carlo estimate. *exact* None: the
    test any data on G clusters is sure to get (exact while 2**G is within ``enumeration_limit``).
    """
    if n_clusters < 1:
        return 1.0
    if exact is None:
        exact = n_clusters < 63 and 2**n_clusters <= enumeration_limit(n_perm)
    if exact:
        return min(1.0, math.ldexp(2.0, -n_clusters)) or math.ldexp(1.0, -1074)
    return 1.0 / (1 + n_perm)


def enumeration_limit(n_perm: int) -> int:
    """Sign patterns counted outright (any values): n_perm, and at least 2**32 - 32 clusters, whose
    two halves' 65,536 totals each meet in the middle in milliseconds: an exact answer is better
    than n_perm random draws of the same cost."""
    return max(n_perm, _ENUMERATE)


_ENUMERATE = 1 << 32
_GRID_WORK = 1 << 26  # cells x clusters of the exact distribution on an integer grid
_DENOMINATORS = range(1, 101)  # cluster sums that are multiples of 1/D (0.5 for ties, 0.1 for judges' 0.7)


def _sign_flip_p(np, sums, n_perm: int, seed: int) -> tuple[float, int, bool]:
    """Two-sided p-value of the total under random signs per cluster: (p, patterns, exact).

    Clusters whose sum is 0 are left out, as a sign test leaves out ties: their sign changes no
    total, so the exact p-value is the same with or without them, and they must not push the test
    into random flips. Exact by enumeration up to ``enumeration_limit``; beyond it, exact from the
    distribution of the total when the sums lie on a grid (multiples of 1/D: the binomial sign
    test when all are equal, else a convolution); random flips only for other data.
    """
    scale = max(float(np.abs(sums).sum()), 1e-300)
    sums = sums[np.abs(sums) > 1e-12 * scale]
    g = len(sums)
    if g == 0:
        return 1.0, 1, True
    observed = abs(float(sums.sum()))
    # Ties (|flipped| == |observed|) must count as hits; allow for rounding in the sums.
    threshold = observed - 1e-10 * scale
    if threshold <= 0:  # a total of 0: every pattern is at least as extreme, p = 1 exactly at any G
        return 1.0, 2**g, True
    if g < 63 and 2**g <= enumeration_limit(n_perm):
        return _count_hits(np, sums, threshold) / 2**g, 2**g, True
    grid = _on_grid(np, sums)
    if grid is not None:
        p = _grid_p(np, grid)
        if p is not None:
            return max(p, min_p_value(g, exact=True)), 2**g, True
    rng = np.random.default_rng([seed, 1])  # a stream apart from the bootstrap's
    hits, step, base = 0, max(1, _CHUNK // g), float(sums.sum())
    for start in range(0, n_perm, step):
        m = min(n_perm, start + step) - start
        bits = np.unpackbits(rng.integers(0, 256, size=(m, (g + 7) // 8), dtype=np.uint8), axis=1)[:, :g]
        totals = 2.0 * (bits @ sums) - base  # sum of s_j * S_j with s_j = 2 * bit - 1
        hits += int((np.abs(totals) >= threshold).sum())
    return (1 + hits) / (1 + n_perm), n_perm, False


def _count_hits(np, sums, threshold: float) -> int:
    """Sign patterns whose |total| reaches *threshold* (> 0), all 2**G of them counted by meeting in
    the middle: every total of the first half against the sorted totals of the second."""
    half = len(sums) // 2
    left, right = _totals(np, sums[:half]), np.sort(_totals(np, sums[half:]))
    n = len(right)
    hits = 0
    for start in range(0, len(left), _CHUNK):  # chunks bound the memory of 2**(G/2) lookups
        part = left[start:start + _CHUNK]
        above = n - np.searchsorted(right, threshold - part, side="left")  # left + right >= threshold
        below = np.searchsorted(right, -threshold - part, side="right")  # left + right <= -threshold
        hits += int(above.sum()) + int(below.sum())
    return hits


def _totals(np, values):
    """The 2**len(values) signed totals sum(s_j v_j), s_j = +-1."""
    out = np.zeros(1)
    for v in values.tolist():
        out = np.concatenate([out + v, out - v])
    return out


def _on_grid(np, sums):
    """The sums as integers (multiples of 1/D for a small D), or None."""
    for d in _DENOMINATORS:
        x = sums * d
        r = np.rint(x)
        if bool((np.abs(x - r) <= 1e-9 * np.maximum(1.0, np.abs(x))).all()):
            return r.astype(np.int64)
    return None


def _grid_p(np, values) -> float | None:
    """P(|sum of s_j v_j| >= |sum of v_j|) over equally likely signs s_j, for integers v_j != 0."""
    from assay.stats._beta import beta_cdf

    g, observed = len(values), abs(int(values.sum()))
    size = np.abs(values)
    if observed == 0:
        return 1.0
    if bool((size == size[0]).all()):  # the sign test: T = v (2B - g), B ~ Binomial(g, 1/2)
        k = (g + observed // int(size[0])) // 2
        return min(1.0, 2.0 * beta_cdf(0.5, k, g - k + 1))
    reach = int(size.sum())
    if g * (2 * reach + 1) > _GRID_WORK:
        return None
    dist = np.zeros(2 * reach + 1)
    dist[reach] = 1.0
    for v in size.tolist():  # convolve with the two equally likely signs of +-v
        new = np.zeros_like(dist)
        new[v:] += dist[:-v]
        new[:-v] += dist[v:]
        dist = new * 0.5
    return min(1.0, float(dist[:reach - observed + 1].sum() + dist[reach + observed:].sum()))


def holm(pvalues: Mapping[str, float]) -> dict[str, float]:
    """Holm-Bonferroni adjusted p-values (family-wise error control), in the input's key order.

    The i-th smallest of m p-values is multiplied by m - i (i from 0), then made monotone with a
    running maximum and capped at 1.
    """
    for key, p in pvalues.items():
        if not (0.0 <= p <= 1.0):
            raise ValueError(f"holm: p-value {key!r} must be in [0, 1], got {p!r}")
    m = len(pvalues)
    running, adjusted = 0.0, {}
    for rank, key in enumerate(sorted(pvalues, key=pvalues.__getitem__)):
        running = max(running, min(1.0, (m - rank) * pvalues[key]))
        adjusted[key] = running
    return {key: adjusted[key] for key in pvalues}
