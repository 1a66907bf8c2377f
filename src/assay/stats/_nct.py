"""The power of a t test, exactly: the noncentral t distribution in pure Python.

A paired (one-sample) t test on n units rejects when |T| > t_{1-alpha/2, n-1}; under a true mean
difference delta with unit sd sigma, T follows the noncentral t with n - 1 degrees of freedom and
noncentrality delta sqrt(n) / sigma. The usual planning formula n = ((z_a + z_b) sigma / delta)^2
(or its t-quantile iteration) approximates that and is off by one or two units, more with few;
here the sample size is the smallest n whose exact power reaches the target, as statsmodels'
``TTestPower`` and G*Power give it. The CDF is Lenth's (1989) algorithm AS 243 (a Poisson-weighted
series of incomplete beta functions), checked against scipy's ``nct`` in the tests; scipy is not
needed.
"""

from __future__ import annotations

import math

from assay.stats._beta import beta_cdf, t_ppf

_ERRMAX = 1e-13
_ITRMAX = 5000


def _normal_sf(x: float) -> float:
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def nct_cdf(t: float, df: float, nc: float) -> float:
    """P(T <= t) for T noncentral t with *df* degrees of freedom and noncentrality *nc* (AS 243)."""
    if not (df > 0 and math.isfinite(df) and math.isfinite(nc)) or math.isnan(t):
        raise ValueError(f"nct_cdf: need df > 0 and finite t, nc; got t={t!r}, df={df!r}, nc={nc!r}")
    negative = t < 0
    tt, d = (-t, -nc) if negative else (t, nc)
    total = 0.0
    x = tt * tt / (tt * tt + df)
    if x > 0:
        lam = d * d
        # The Poisson weights p, q are carried as logarithms: exp(-lam / 2) underflows past nc ~ 38.
        log_p = math.log(0.5) - 0.5 * lam
        log_q = log_p + 0.5 * math.log(2.0 / math.pi) + math.log(abs(d)) if d else -math.inf
        sign_q = 1.0 if d >= 0 else -1.0
        p, q = math.exp(log_p), sign_q * math.exp(log_q)
        s = 0.5 - p
        a, b = 0.5, 0.5 * df
        rxb = (1.0 - x) ** b
        albeta = 0.5 * math.log(math.pi) + math.lgamma(b) - math.lgamma(0.5 + b)
        xodd = beta_cdf(x, a, b)
        godd = 2.0 * rxb * math.exp(a * math.log(x) - albeta)
        xeven = 1.0 - rxb
        geven = b * x * rxb
        total = p * xodd + q * xeven
        en = 1.0
        while True:
            a += 1.0
            xodd -= godd
            xeven -= geven
            godd *= x * (a + b - 1.0) / a
            geven *= x * (a + b - 0.5) / (a + 0.5)
            log_p += math.log(lam / (2.0 * en)) if lam else -math.inf
            log_q += math.log(lam / (2.0 * en + 1.0)) if lam else -math.inf
            p, q = math.exp(log_p), sign_q * math.exp(log_q)
            s -= p
            en += 1.0
            total += p * xodd + q * xeven
            if 2.0 * s * (xodd - godd) <= _ERRMAX or en > _ITRMAX:
                break
    total += _normal_sf(d)
    total = min(1.0, max(0.0, total))
    return 1.0 - total if negative else total


def _power(crit: float, df: int, nc: float) -> float:
    """P(|T| > crit) for T noncentral t with *df* degrees of freedom and noncentrality *nc*."""
    return 1.0 - nct_cdf(crit, df, nc) + nct_cdf(-crit, df, nc)


def t_test_power(n: int, effect: float, alpha: float) -> float:
    """Power of the two-sided level-*alpha* one-sample t test on *n* units; *effect* = delta / sigma."""
    return _power(t_ppf(1.0 - alpha / 2.0, n - 1), n - 1, abs(effect) * math.sqrt(n))


def t_test_n(effect: float, alpha: float, power: float, start: int = 2) -> int:
    """The smallest n >= *start* (at least 2) whose two-sided t test reaches *power* (exact)."""
    lo = max(2, start)
    if t_test_power(lo, effect, alpha) >= power:
        return lo
    hi = lo
    while t_test_power(hi, effect, alpha) < power:  # power rises with n: bracket, then bisect
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if t_test_power(mid, effect, alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def noncentrality_needed(df: int, alpha: float, power: float) -> float:
    """The noncentrality at which a two-sided t test with *df* degrees of freedom reaches *power*."""
    crit = t_ppf(1.0 - alpha / 2.0, df)

    def reach(nc: float) -> float:
        return _power(crit, df, nc)

    lo, hi = 0.0, crit + 10.0
    while reach(hi) < power:
        lo, hi = hi, hi * 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if reach(mid) >= power:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi
