"""Comparing two runs item by item: paired difference, bootstrap interval, permutation test, Holm.

Pairing removes the between-item variance that dominates agent evals (some tasks are simply hard),
so a paired test finds regressions an unpaired one misses. When items come in clusters (trials of
one task), the cluster is the unit that is resampled and whose sign is flipped: its items share
whatever makes the task easy or hard.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from assay.stats._intervals import (
    bootstrap_ratios,
    check_level,
    check_positive_int,
    cluster_totals,
    percentile_interval,
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
    """Two-sided paired permutation p-value (sign flips of whole clusters)."""
    mean_a: float | None
    mean_b: float | None
    n_paired: int
    n_clusters: int
    only_in_a: tuple[Hashable, ...]
    """Ids scored in a but not in b (left out of every statistic)."""
    only_in_b: tuple[Hashable, ...]
    level: float
    permutations: int
    """Sign patterns evaluated: all 2**n_clusters when that is at most n_perm (an exact test)."""
    exact: bool
    min_p_value: float | None = None
    """The smallest p-value this design can give (2 / 2**n_clusters exact, else 1 / (1 + n_perm)):
    with 2 clusters it is 0.5, so no difference, however large, is ever significant."""


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
) -> Comparison:
    """Compare scores *b* against *a* (id -> score) on the ids both have; None scores count as absent.

    *clusters* maps each id to its cluster (e.g. trial id -> task id); without it each id is its own
    cluster. The interval is a cluster bootstrap percentile interval of the mean difference; the
    p-value flips the sign of each cluster's summed difference, exactly over all 2**G patterns when
    2**G <= n_perm, else over n_perm random patterns as (1 + hits) / (1 + n_perm), never 0.
    """
    level = check_level(level, "paired_compare")
    check_positive_int(n_boot, "n_boot", "paired_compare")
    check_positive_int(n_perm, "n_perm", "paired_compare")
    sa, sb = _scored(a, "a"), _scored(b, "b")
    ids = canonical(sa.keys() & sb.keys())
    only_a, only_b = tuple(canonical(sa.keys() - sb.keys())), tuple(canonical(sb.keys() - sa.keys()))
    if not ids:
        return Comparison(None, None, None, None, None, None, 0, 0, only_a, only_b, level, 0, False, None)
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
    if g >= 2:
        reps = bootstrap_ratios(np, sums, counts, n_boot, seed)[:, 0]
        low, high = percentile_interval(np, reps, difference, level)
    p_value, used, exact = _sign_flip_p(np, sums, n_perm, seed)
    return Comparison(difference, low, high, p_value, mean_a, mean_b, n, g, only_a, only_b, level, used, exact,
                      min_p_value(g, n_perm))


def min_p_value(n_clusters: int, n_perm: int = 10000) -> float:
    """The smallest two-sided sign-flip p-value reachable with *n_clusters* clusters.

    Exact test (2**G <= n_perm): the observed pattern and its mirror image are always hits, so
    p >= 2 / 2**G. Monte Carlo: p >= 1 / (1 + n_perm).
    """
    if n_clusters < 1:
        return 1.0
    if n_clusters < 63 and 2**n_clusters <= n_perm:
        return min(1.0, 2.0 / 2**n_clusters)
    return 1.0 / (1 + n_perm)


def _sign_flip_p(np, sums, n_perm: int, seed: int) -> tuple[float, int, bool]:
    """Two-sided p-value of the total under random signs per cluster."""
    g = len(sums)
    observed = abs(float(sums.sum()))
    # Ties (|flipped| == |observed|) must count as hits; allow for rounding in the sums.
    threshold = observed - 1e-10 * max(float(np.abs(sums).sum()), 1e-300)
    if g < 63 and 2**g <= n_perm:
        patterns = np.arange(2**g, dtype=np.int64)[:, None] >> np.arange(g, dtype=np.int64) & 1
        totals = (2 * patterns - 1) @ sums
        return float((np.abs(totals) >= threshold).mean()), 2**g, True
    rng = np.random.default_rng([seed, 1])  # a stream apart from the bootstrap's
    hits, step, base = 0, max(1, _CHUNK // g), float(sums.sum())
    for start in range(0, n_perm, step):
        m = min(n_perm, start + step) - start
        bits = np.unpackbits(rng.integers(0, 256, size=(m, (g + 7) // 8), dtype=np.uint8), axis=1)[:, :g]
        totals = 2.0 * (bits @ sums) - base  # sum of s_j * S_j with s_j = 2 * bit - 1
        hits += int((np.abs(totals) >= threshold).sum())
    return (1 + hits) / (1 + n_perm), n_perm, False


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
