"""pass@k and pass^k for one conversation, with pluggable statistical modes (Fair Forge's Agentic metric).

Per conversation n = interactions, c = correct ones, p = c / n; pass@k = 1 - (1 - p)^k is the chance
that at least one of k independent attempts succeeds and pass^k = p^k the chance that all k do.
``FrequentistMode`` plugs in p = c / n. ``BayesianMode`` puts a Beta(a + c, b + n - c) posterior on p
and reports posterior means with equal-tailed credible intervals; by default they are computed
exactly (Beta moments and quantiles, no sampling), so they are reproducible to the last digit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral
from typing import ClassVar, Literal, Protocol, runtime_checkable

from assay.errors import ConfigError
from assay.stats._beta import beta_interval
from assay.stats._np import require_numpy

PER_CONVERSATION = "per_conversation_plugin"

Quality = Literal["Reliable", "Inconsistent", "Needs Improvement", "Moderate"]


def check_int(value: object, name: str, who: str, minimum: int) -> int:
    """*value* as an int >= *minimum*, or ValueError naming the bad value."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{who}: {name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{who}: {name} must be >= {minimum}, got {value!r}")
    return int(value)


def check_counts(n: object, c: object, k: object, who: str, min_n: int = 1) -> tuple[int, int, int]:
    n, c, k = check_int(n, "n", who, min_n), check_int(c, "c", who, 0), check_int(k, "k", who, 1)
    if c > n:
        raise ValueError(f"{who}: c must be <= n (n={n!r}), got c={c!r}")
    return n, c, k


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - (1 - c/n)^k: the plug-in chance that at least one of k attempts succeeds."""
    n, c, k = check_counts(n, c, k, "pass_at_k")
    return _plugin(n, c, k)[0]


def pass_pow_k(n: int, c: int, k: int) -> float:
    """(c/n)^k: the plug-in chance that all k attempts succeed."""
    n, c, k = check_counts(n, c, k, "pass_pow_k")
    return _plugin(n, c, k)[1]


def _plugin(n: int, c: int, k: int) -> tuple[float, float]:
    # Exact rationals, rounded once: pass@1 == pass^1 == c/n and the order in k is kept exactly.
    if k <= 1000:
        total = n**k
        return (total - (n - c) ** k) / total, c**k / total
    p = c / n
    return -math.expm1(k * math.log1p(-p)) if p < 1.0 else 1.0, p**k


def quality_assessment(pass_at_k: float, pass_pow_k: float) -> Quality:
    """Fair Forge's reading of a (pass@k, pass^k) pair.

    "Needs Improvement" when pass@k < 0.70; "Reliable" when pass@k > 0.95 and pass^k > 0.70;
    "Inconsistent" when pass@k > 0.95 and pass^k < 0.50. Fair Forge's table leaves the rest open
    (0.70 <= pass@k <= 0.95, or pass@k > 0.95 with 0.50 <= pass^k <= 0.70): we call that "Moderate".
    """
    for name, value in (("pass_at_k", pass_at_k), ("pass_pow_k", pass_pow_k)):
        if not (0.0 <= value <= 1.0):
            raise ValueError(f"quality_assessment: {name} must be in [0, 1], got {value!r}")
    if pass_at_k < 0.70:
        return "Needs Improvement"
    if pass_at_k > 0.95 and pass_pow_k > 0.70:
        return "Reliable"
    if pass_at_k > 0.95 and pass_pow_k < 0.50:
        return "Inconsistent"
    return "Moderate"


@dataclass(frozen=True, slots=True)
class PassK:
    """pass@k and pass^k of one conversation under one statistical mode (CIs None when frequentist)."""

    n: int
    c: int
    k: int
    pass_at_k: float
    pass_pow_k: float
    pass_at_k_ci_low: float | None = None
    pass_at_k_ci_high: float | None = None
    pass_pow_k_ci_low: float | None = None
    pass_pow_k_ci_high: float | None = None
    ci_level: float | None = None
    mode: str = "frequentist"
    """One of "frequentist", "bayesian_exact" or "bayesian_monte_carlo"."""
    family: str = PER_CONVERSATION
    """Which pass@k estimator family: per conversation, p from interactions (not trials)."""


@runtime_checkable
class StatisticalMode(Protocol):
    """Turns a conversation's (n, c) into pass@k and pass^k; the seam for Fair Forge's statistical modes."""

    name: str

    def estimate(self, n: int, c: int, k: int) -> PassK: ...


@dataclass(frozen=True, slots=True)
class FrequentistMode:
    """Plug in p = c / n; no interval (pass@k is 1.0 whenever c = n)."""

    name: ClassVar[str] = "frequentist"

    def estimate(self, n: int, c: int, k: int) -> PassK:
        n, c, k = check_counts(n, c, k, "FrequentistMode.estimate")
        at_k, pow_k = _plugin(n, c, k)
        return PassK(n, c, k, pass_at_k=at_k, pass_pow_k=pow_k)


def posterior_at_k(alpha: float, beta: float, k: int) -> float:
    """E[1 - (1 - p)^k] for p ~ Beta(alpha, beta).

    Summed as sum_{j<k} E[p (1 - p)^j] = sum_j alpha/(alpha+beta+j) prod_{i<j} (beta+i)/(alpha+beta+i):
    positive terms, so no cancellation, pass@1 equals E[p] exactly and the value never falls as k grows.
    """
    if k > 256:
        return 1.0 - rising_ratio(beta, alpha + beta, k)
    total, run, ab = 0.0, 1.0, alpha + beta
    for j in range(k):
        total += run * alpha / (ab + j)
        run *= (beta + j) / (ab + j)
    return min(total, 1.0)  # rounding can carry the sum a hair past 1


def rising_ratio(x: float, y: float, k: int) -> float:
    """prod_{i<k} (x + i) / (y + i), a ratio of rising factorials (Beta moments)."""
    if k <= 256:
        out = 1.0
        for i in range(k):
            out *= (x + i) / (y + i)
        return out
    return math.exp(math.lgamma(x + k) - math.lgamma(x) - math.lgamma(y + k) + math.lgamma(y))


_METHODS = ("exact", "monte_carlo")


@dataclass(frozen=True, slots=True)
class BayesianMode:
    """Beta(a + c, b + n - c) posterior on p; posterior means and equal-tailed credible intervals.

    ``method="exact"`` (default) uses closed forms: E[p^k] = prod (alpha + i) / (alpha + beta + i),
    E[1 - (1 - p)^k] = 1 - prod (beta + i) / (alpha + beta + i), and, because both are increasing
    in p, the interval ends are the Beta quantiles pushed through the transform. ``"monte_carlo"``
    samples ``mc_samples`` draws with numpy (seeded), for parity with Fair Forge's API.

    The posterior of p^k is very skewed for large k: with k >= 8 and all (or no) interactions
    correct, its mean can lie beyond the 97.5% quantile. That is the distribution, not an error.
    """

    mc_samples: int = 5000
    ci_level: float = 0.95
    beta_prior_a: float = 1.0
    beta_prior_b: float = 1.0
    method: str = "exact"
    seed: int = 42
    name: ClassVar[str] = "bayesian"

    def __post_init__(self) -> None:
        check_int(self.mc_samples, "mc_samples", "BayesianMode", 1)
        if not (0.0 < self.ci_level < 1.0):
            raise ValueError(f"BayesianMode: ci_level must be in (0, 1), got {self.ci_level!r}")
        for field in ("beta_prior_a", "beta_prior_b"):
            value = getattr(self, field)
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"BayesianMode: {field} must be a finite number > 0, got {value!r}")
        if self.method not in _METHODS:
            raise ConfigError.unknown("BayesianMode method", self.method, _METHODS)

    def posterior(self, n: int, c: int) -> tuple[float, float]:
        """The posterior Beta(alpha, beta) of p after c successes in n."""
        return self.beta_prior_a + c, self.beta_prior_b + n - c

    def estimate(self, n: int, c: int, k: int) -> PassK:
        n, c, k = check_counts(n, c, k, "BayesianMode.estimate")
        alpha, beta = self.posterior(n, c)
        if self.method == "monte_carlo":
            return self._monte_carlo(n, c, k, alpha, beta)
        low, high = beta_interval(alpha, beta, self.ci_level)
        return PassK(
            n, c, k,
            pass_at_k=posterior_at_k(alpha, beta, k),
            pass_pow_k=rising_ratio(alpha, alpha + beta, k),
            pass_at_k_ci_low=1.0 - (1.0 - low) ** k,
            pass_at_k_ci_high=1.0 - (1.0 - high) ** k,
            pass_pow_k_ci_low=low**k,
            pass_pow_k_ci_high=high**k,
            ci_level=self.ci_level,
            mode="bayesian_exact",
        )

    def _monte_carlo(self, n: int, c: int, k: int, alpha: float, beta: float) -> PassK:
        np = require_numpy("BayesianMode(method='monte_carlo')")
        p = np.random.default_rng(self.seed).beta(alpha, beta, size=self.mc_samples)
        tails = [(1.0 - self.ci_level) / 2.0, (1.0 + self.ci_level) / 2.0]
        at_k, pow_k = 1.0 - (1.0 - p) ** k, p**k
        (at_lo, at_hi), (pow_lo, pow_hi) = np.quantile(at_k, tails), np.quantile(pow_k, tails)
        return PassK(
            n, c, k,
            pass_at_k=float(at_k.mean()),
            pass_pow_k=float(pow_k.mean()),
            pass_at_k_ci_low=float(at_lo),
            pass_at_k_ci_high=float(at_hi),
            pass_pow_k_ci_low=float(pow_lo),
            pass_pow_k_ci_high=float(pow_hi),
            ci_level=self.ci_level,
            mode="bayesian_monte_carlo",
        )
