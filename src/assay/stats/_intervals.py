"""Intervals on aggregates: Wilson for proportions, t or cluster bootstrap for means.

Trials of one task (or turns of one conversation) are not independent draws, so treating them as
such makes intervals too narrow. When cluster ids repeat, ``mean_interval`` resamples whole
clusters (percentile bootstrap of the pooled mean); otherwise it uses the Student t interval, which
is exact under normality, deterministic and better than a percentile bootstrap for small n.
Every interval contains its point estimate; results do not depend on input order.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

from assay.errors import ConfigError
from assay.stats._beta import beta_cdf, normal_ppf, t_ppf
from assay.stats._np import canonical, require_numpy

_CHUNK = 1 << 20  # resampled cluster indices held at once (8 MiB of int64; larger is slower)


MIN_BOOTSTRAP_CLUSTERS = 50
"""Fewer clusters than this: a cluster-robust t interval instead of the cluster bootstrap (a
percentile bootstrap of 20-30 clusters is too narrow: 0.886 coverage for 0/1 values at 20)."""
MAX_BOOTSTRAP_CLUSTERS = 1000
"""More clusters than this: the cluster-robust t interval is accurate and O(n), the bootstrap O(n x n_boot)."""


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate with a two-sided interval; low and high are None when it cannot be had."""

    estimate: float
    low: float | None
    high: float | None
    level: float
    n: int
    """Observations behind the estimate."""
    n_clusters: int
    """Independent units: clusters when they repeat, else n."""
    method: str
    """One of "wilson" (``wilson_interval``: the plain Wilson score interval, no continuity
    correction), "wilson_half_cc" (Wilson with half a continuity correction), "ess_wilson",
    "cluster_wilson" (``bounded_mean_interval``), "t", "bootstrap" (iid), "cluster_bootstrap" or
    "cluster_t" (``mean_interval``)."""


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with *df* degrees of freedom: I_x(df/2, 1/2), x = df / (df + t^2)."""
    if math.isinf(t):
        return 0.0
    return min(1.0, beta_cdf(df / (df + t * t), 0.5 * df, 0.5))


def check_level(level: float, who: str) -> float:
    if not (0.0 < level < 1.0):
        raise ValueError(f"{who}: level must be in (0, 1), got {level!r}")
    return float(level)


def check_positive_int(value: object, name: str, who: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:  # numpy integers too
        raise ValueError(f"{who}: {name} must be an integer >= 1, got {value!r}")
    return int(value)


def wilson_interval(successes: int, n: int, level: float = 0.95) -> Interval | None:
    """The plain Wilson score interval (no continuity correction) for a binomial proportion, method
    "wilson"; None when n = 0. (Pass rates use ``bounded_mean_interval``, whose independent 0/1 case
    is Wilson with half a continuity correction, "wilson_half_cc".)

    Unlike the Wald interval it stays inside [0, 1] and keeps its coverage near 0 and 1.
    """
    level = check_level(level, "wilson_interval")
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 0:  # numpy integers are fine
        raise ValueError(f"wilson_interval: n must be an integer >= 0, got {n!r}")
    if isinstance(successes, bool) or not isinstance(successes, Integral) or not 0 <= successes <= n:
        raise ValueError(f"wilson_interval: successes must be an integer in [0, n={n}], got {successes!r}")
    n, successes = int(n), int(successes)
    if n == 0:
        return None
    p = successes / n
    z = normal_ppf(0.5 + level / 2.0)
    z2n = z * z / n
    center = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n))
    low = 0.0 if successes == 0 else min(max(center - half, 0.0), p)
    high = 1.0 if successes == n else max(min(center + half, 1.0), p)
    return Interval(p, low, high, level, n, n, "wilson")


def _floats(values: Sequence[float], who: str) -> list[float]:
    out = [float(v) for v in values]
    for i, v in enumerate(out):
        if not math.isfinite(v):
            raise ValueError(f"{who}: values[{i}] must be a finite number, got {values[i]!r}")
    return out


def _t_interval(values: list[float], level: float) -> Interval:
    n = len(values)
    mean = math.fsum(values) / n  # fsum: exactly rounded, so the result ignores input order
    if n == 1:
        return Interval(mean, None, None, level, 1, 1, "t")
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    half = t_ppf(0.5 + level / 2.0, n - 1) * math.sqrt(var / n)
    return Interval(mean, mean - half, mean + half, level, n, n, "t")


def _int_array(np: Any, ids: Any) -> bool:
    return np is not None and isinstance(ids, np.ndarray) and ids.dtype.kind in "iu"


def _index_ranks(np: Any, ids: Any) -> Any:
    """For small non-negative integer ids (a run's task indices): the rank of every id value among
    the distinct ones (what ``np.unique(..., return_inverse=True)`` gives), from a count per value
    instead of a sort; None for other ids."""
    if not len(ids):
        return None
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high > 4 * len(ids) + 1024:
        return None
    present = np.bincount(ids, minlength=high + 1) > 0
    return np.cumsum(present) - 1


def _distinct(ids: Any) -> int:
    """How many different cluster ids (numpy integer arrays counted without Python objects)."""
    if type(ids).__module__ == "numpy":
        import numpy as np
        if _int_array(np, ids):
            ranks = _index_ranks(np, ids)
            return len(np.unique(ids)) if ranks is None else int(ranks[-1]) + 1
    return len(set(ids))


def _exact_in_any_order(np: Any, values: Any) -> bool:
    """Whether every partial sum of *values* is exact (whole numbers whose magnitudes sum below 2**53,
    such as pass flags), so that their sums come out the same in any order and need no sort."""
    values = np.asarray(values)
    if values.dtype.kind == "b":
        return True
    if values.dtype.kind not in "iuf" or (values.dtype.kind == "f" and not bool(np.all(np.trunc(values) == values))):
        return False
    return float(np.abs(values.astype(np.float64)).sum()) < 2.0 ** 53


def cluster_totals(np, values, cluster_ids):
    """Per-cluster sums and counts, clusters in canonical order, summed in a canonical order."""
    if _int_array(np, cluster_ids):  # large runs hand in integer ids: group without Python objects
        ranks = _index_ranks(np, cluster_ids)
        if ranks is None:
            _, inv = np.unique(cluster_ids, return_inverse=True)
        else:  # int32 ranks where they fit: 4 bytes per value less in the gather and the sort below
            inv = (ranks.astype(np.int32) if len(ranks) < 2**31 else ranks)[cluster_ids]
        if not _exact_in_any_order(np, values):
            order = np.lexsort((values, inv))
            values, inv = values[order], inv[order]
        g = int(inv.max()) + 1 if len(inv) else 0
        return np.bincount(inv, weights=values, minlength=g), np.bincount(inv, minlength=g)
    index: dict[Hashable, int] = {}
    for cid in cluster_ids:
        index.setdefault(cid, len(index))
    rank = np.empty(len(index), dtype=np.int64)
    for r, cid in enumerate(canonical(index)):
        rank[index[cid]] = r
    inv = rank[np.fromiter((index[c] for c in cluster_ids), dtype=np.int64, count=len(values))]
    order = np.lexsort((values, inv))
    values, inv = values[order], inv[order]
    return np.bincount(inv, weights=values, minlength=len(index)), np.bincount(inv, minlength=len(index))


def bootstrap_ratios(np, sums, counts, n_boot: int, seed: int):
    """Resample clusters with replacement; per replicate, total of each row of *sums* / total count.

    *sums* is (statistics, clusters); the same resampled clusters serve every statistic, so paired
    quantities stay paired. Indices are drawn in chunks to bound memory.
    """
    sums = np.atleast_2d(np.asarray(sums, dtype=float))
    counts = np.asarray(counts, dtype=float)
    g = counts.shape[0]
    rng = np.random.default_rng(seed)
    out = np.empty((n_boot, sums.shape[0]))
    step = max(1, _CHUNK // g)
    equal = bool((counts == counts[0]).all())  # then every replicate has the same total count
    for start in range(0, n_boot, step):
        stop = min(n_boot, start + step)
        idx = rng.integers(0, g, size=(stop - start, g))
        den = counts[0] * g if equal else np.take(counts, idx).sum(axis=1)
        for s in range(sums.shape[0]):
            out[start:stop, s] = np.take(sums[s], idx).sum(axis=1) / den
    return out


def percentile_interval(np, replicates, estimate: float, level: float) -> tuple[float, float]:
    """Equal-tailed percentile interval, widened if need be to contain *estimate*."""
    low, high = np.quantile(replicates, [0.5 - level / 2.0, 0.5 + level / 2.0])
    return min(float(low), estimate), max(float(high), estimate)


_METHODS = ("auto", "t", "bootstrap")


def mean_interval(
    values: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
    method: str = "auto",
) -> Interval | None:
    """The mean of *values* with a *level* interval; None when there are no values.

    ``method="auto"``: a cluster bootstrap when cluster ids repeat and there are at least
    MIN_BOOTSTRAP_CLUSTERS clusters; with fewer, a percentile bootstrap is far too narrow (two
    clusters give two resampled means), so a cluster-robust t interval (CR1 standard error, G - 1
    degrees of freedom) is used, as it is above MAX_BOOTSTRAP_CLUSTERS clusters where it is
    accurate and far cheaper; without repeats, the Student t interval.
    ``"bootstrap"`` forces the bootstrap (iid when *clusters* is None); ``"t"`` forces t (clusters
    ignored). The bootstrap needs numpy and is reproducible for a given *seed*. With one value, or
    one cluster, there is no spread to measure: the bounds are None. For independent pass/fail
    outcomes prefer ``wilson_interval``: a t interval can reach past 0 or 1.
    """
    level = check_level(level, "mean_interval")
    check_positive_int(n_boot, "n_boot", "mean_interval")
    if method not in _METHODS:
        raise ConfigError.unknown("mean_interval method", method, _METHODS)
    if clusters is not None and len(clusters) != len(values):
        raise ValueError(f"mean_interval: clusters has {len(clusters)} ids for {len(values)} values")
    if len(values) == 0:
        return None
    repeats = clusters is not None and _distinct(clusters) < len(clusters)
    if method == "t" or (method == "auto" and not repeats):
        return _t_interval(_floats(values, "mean_interval"), level)
    np = require_numpy("mean_interval (bootstrap)")
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"mean_interval: values must be a flat sequence of numbers, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"mean_interval: values[{bad}] must be a finite number, got {values[bad]!r}")
    if clusters is None:
        sums, counts = np.sort(arr), np.ones(len(arr))
    else:
        sums, counts = cluster_totals(np, arr, clusters)
    estimate = math.fsum(memoryview(arr)) / len(arr)
    name = "cluster_bootstrap" if clusters is not None else "bootstrap"
    if len(counts) == 1:
        return Interval(estimate, None, None, level, len(arr), 1, name)
    if method == "auto" and clusters is not None and not MIN_BOOTSTRAP_CLUSTERS <= len(counts) <= MAX_BOOTSTRAP_CLUSTERS:
        g = len(counts)
        resid = sums - counts * estimate
        se = math.sqrt(g / (g - 1) * float(np.dot(resid, resid))) / len(arr)
        half = t_ppf(0.5 + level / 2, g - 1) * se
        return Interval(estimate, estimate - half, estimate + half, level, len(arr), g, "cluster_t")
    reps = bootstrap_ratios(np, sums, counts, n_boot, seed)[:, 0]
    low, high = percentile_interval(np, reps, estimate, level)
    return Interval(estimate, low, high, level, len(arr), len(counts), name)


def bounded_mean_interval(
    values: Sequence[float], clusters: Sequence[Hashable] | None = None, level: float = 0.95
) -> Interval | None:
    """The mean of values in [0, 1] (0/1 outcomes or scores) with an interval that covers; None if empty.

    The effective-sample-size Wilson interval of ``assay.stats._bounded``: for independent 0/1
    outcomes the Wilson interval with half a continuity correction, method "wilson_half_cc"; for scores, or when
    cluster ids repeat (trials of one task), Wilson on n_eff = m (1 - m) / v with the cluster-robust
    variance v and a t correction for the number of clusters ("ess_wilson", "cluster_wilson").
    It never collapses to zero width when every value is 0 or 1, it stays inside [0, 1], and it
    always contains the estimate. Chosen over t, cluster-t and the percentile bootstrap by the
    coverage simulation in ``benchmarks/coverage.py``.
    """
    from assay.stats._bounded import cluster_mean_var, ess_wilson, is_binary

    who = "bounded_mean_interval"
    level = check_level(level, who)
    if clusters is not None and len(clusters) != len(values):
        raise ValueError(f"{who}: clusters has {len(clusters)} ids for {len(values)} values")
    if len(values) == 0:
        return None
    np = require_numpy(who)
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{who}: values must be a flat sequence of numbers, got shape {arr.shape}")
    bad = np.flatnonzero(~((arr >= 0.0) & (arr <= 1.0)))  # False for NaN too
    if len(bad):
        raise ValueError(f"{who}: values[{int(bad[0])}] must be a number in [0, 1], got {values[int(bad[0])]!r}")
    n = len(arr)
    estimate = math.fsum(memoryview(arr)) / n  # no list of a million floats
    binary = is_binary(np, arr)
    repeats = clusters is not None and _distinct(clusters) < n
    if repeats:
        sums, counts = cluster_totals(np, arr, clusters)
    else:
        sums, counts = np.sort(arr), np.ones(n)
    g = len(counts)
    if binary and not repeats:
        low, high = ess_wilson(np, estimate, estimate * (1 - estimate) / n, n, n, level)
        method = "wilson_half_cc"
    else:
        _, var = cluster_mean_var(np, sums, counts)
        low, high = ess_wilson(np, estimate, var, g, n if binary else np.inf, level, df=max(g - 1, 1))
        method = "cluster_wilson" if repeats else "ess_wilson"
    return Interval(estimate, float(low), float(high), level, n, g, method)
