"""Intervals for means of values in [0, 1]: pass rates, per-task pass@k, metric scores.

One method, chosen by the coverage simulation in ``benchmarks/coverage.py``: the Wilson score
interval with half a continuity correction, on the *effective* sample size
n_eff = m (1 - m) / v, where m is the mean and v its (cluster-robust) variance, as Korn and
Graubard (1998) do for clustered survey proportions. For independent 0/1 outcomes n_eff is n and
this is the plain (half-corrected) Wilson interval. Three guards make it honest:

* **Saturation.** When every value is 0, or every value is 1, or they have no spread, v is 0 and a
  t or bootstrap interval collapses to [m, m]. We then use n_eff = number of independent units
  (tasks): the data cannot tell how correlated trials are, so each task counts as one draw.
* **Small samples.** Where v is estimated from few units (means of scores, clustered pass rates),
  n_eff is scaled by (z / t_{G-1})^2 - the t correction of a cluster-t interval, carried into
  Wilson's asymmetric shape, which also follows the skew of bounded scores near 0 or 1.
* **Caps.** n_eff never exceeds the independent 0/1 draws behind the mean (n trials; n / k for
  pass@k), so an underdispersed sample cannot claim more information than it has.

Every function here takes arrays (a leading axis of replicates is fine), so the coverage
simulation runs the very code the engine runs, vectorised.
"""

from __future__ import annotations

from typing import Any

from assay.stats._beta import normal_ppf, t_ppf

CONTINUITY = 0.5
"""Continuity correction, in units of 1 / (2 n_eff): 0 is plain Wilson (0.914 coverage at n = 10,
p = .05), 1 the classic correction (0.997 in some clustered cells); 0.5 keeps every cell of the
simulation grid within [0.93, 0.99]."""


def _wilson_bound(np: Any, p: Any, n: Any, z: float, sign: float) -> Any:
    z2n = z * z / n
    center = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * np.sqrt(np.maximum(p * (1.0 - p) / n + z2n / (4.0 * n), 0.0))
    return center + sign * half


def wilson_bounds(np: Any, p: Any, n: Any, level: float, continuity: float = CONTINUITY) -> tuple[Any, Any]:
    """Wilson score bounds for proportion(s) *p* on (effective) size(s) *n*, continuity-corrected.

    The corrected bounds are the Wilson bounds at p -/+ continuity / (2 n); they are clipped to
    [0, 1] and widened if need be to contain p (so the estimate is always inside its interval).
    """
    p, n = np.asarray(p, dtype=float), np.asarray(n, dtype=float)
    z = normal_ppf(0.5 + level / 2.0)
    shift = continuity / (2.0 * n)
    low = _wilson_bound(np, np.maximum(p - shift, 0.0), n, z, -1.0)
    high = _wilson_bound(np, np.minimum(p + shift, 1.0), n, z, 1.0)
    low = np.where(p <= 0.0, 0.0, np.minimum(np.maximum(low, 0.0), p))
    high = np.where(p >= 1.0, 1.0, np.maximum(np.minimum(high, 1.0), p))
    return low, high


def effective_n(np: Any, mean: Any, var: Any, units: Any, cap: Any, level: float, df: Any = None) -> Any:
    """n_eff = mean (1 - mean) / var, t-corrected for *df*, capped at *cap*; *units* when saturated.

    *units*: independent units (tasks), used when var is 0 or the mean is 0 or 1. *df* (degrees of
    freedom of var, e.g. tasks - 1) scales n_eff by (z / t_df)^2; None leaves it alone.
    """
    mean, var = np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
    saturated = (var <= 0.0) | (mean <= 0.0) | (mean >= 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = mean * (1.0 - mean) / np.where(saturated, 1.0, var)
    if df is not None:
        n = n * np.asarray(t_ratio(np, df, level)) ** 2
    return np.where(saturated, units, np.minimum(n, cap))


def t_ratio(np: Any, df: Any, level: float) -> Any:
    """z / t_df for scalar or array df (t quantiles computed once per distinct df)."""
    z = normal_ppf(0.5 + level / 2.0)
    df = np.asarray(df)
    if df.ndim == 0:
        return z / t_ppf(0.5 + level / 2.0, float(max(int(df), 1)))
    out = np.empty(df.shape)
    for d in np.unique(df):
        out[df == d] = z / t_ppf(0.5 + level / 2.0, float(max(int(d), 1)))
    return out


def ess_wilson(np: Any, mean: Any, var: Any, units: Any, cap: Any, level: float, df: Any = None) -> tuple[Any, Any]:
    """The effective-sample-size Wilson interval (see the module docstring)."""
    return wilson_bounds(np, mean, effective_n(np, mean, var, units, cap, level, df), level)


def cluster_mean_var(np: Any, sums: Any, counts: Any) -> tuple[float, float]:
    """Pooled mean of clustered values and its CR1 (cluster-robust) variance, from per-cluster totals."""
    n = float(counts.sum())
    g = len(counts)
    mean = float(sums.sum()) / n
    if g < 2:
        return mean, 0.0
    resid = sums - counts * mean
    return mean, g / (g - 1) * float(np.dot(resid, resid)) / (n * n)


def is_binary(np: Any, values: Any) -> bool:
    return bool(((values == 0.0) | (values == 1.0)).all())
