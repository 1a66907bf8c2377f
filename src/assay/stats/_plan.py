"""Planning: how many trials it takes to see a difference of a given size, before paying for them.

Normal approximation: to detect a true mean difference delta with a two-sided level-alpha test
and the given power, n = m * ((z_{1-alpha/2} + z_power) * sigma / delta)^2 independent
observations, where m = 1 for a paired design (sigma = sd of the per-item differences) and m = 2
per arm for two independent arms (sigma = sd within each arm). Trials nested in tasks are not
independent: with intra-class correlation rho and t trials per task, each observation is worth
1 / (1 + (t - 1) rho) of one (the design effect); past some point more trials stop helping and
only more tasks do.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from assay.errors import ConfigError
from assay.stats._beta import normal_ppf

_DESIGNS = ("paired", "independent")


@dataclass(frozen=True, slots=True)
class TrialPlan:
    """What it takes to detect a difference; with ``n_tasks`` given, read ``trials_per_task``."""

    n: int | None
    """Observations needed (pairs if paired, per arm if independent), design effect included;
    None when infeasible."""
    n_effective: int
    """The same for independent observations (design effect 1)."""
    design_effect: float | None
    trials_per_task: int | None
    """Trials per task: solved for when n_tasks is given (None if no number suffices)."""
    n_tasks: int | None
    """Tasks: given, or implied by trials_per_task."""
    min_tasks: int | None
    """Fewest tasks with which enough trials can succeed (None without clustering)."""
    feasible: bool
    design: str


def trials_needed(
    delta: float,
    *,
    sd: float | None = None,
    variance: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    design: str = "paired",
    two_sided: bool = True,
    icc: float = 0.0,
    trials_per_task: int | None = None,
    n_tasks: int | None = None,
) -> TrialPlan:
    """Sample size to detect a mean difference *delta*, given the observed spread (sd or variance).

    Without clustering (icc = 0, the default) the answer is ``n``. With ``icc`` > 0 (trials of a task
    correlated): give ``n_tasks`` to get the trials per task needed (infeasible when n_tasks is at
    most n_effective * icc: then add tasks, not trials), or ``trials_per_task`` to get the total and
    the number of tasks. Pure function: it measures nothing; ``variance_components`` estimates
    variance and icc from a previous run.
    """
    who = "trials_needed"
    if (sd is None) == (variance is None):
        raise ValueError(f"{who}: give exactly one of sd or variance, got sd={sd!r}, variance={variance!r}")
    if sd is not None and not (sd >= 0 and math.isfinite(sd)):
        raise ValueError(f"{who}: sd must be a finite number >= 0, got {sd!r}")
    if variance is not None and not (variance >= 0 and math.isfinite(variance)):
        raise ValueError(f"{who}: variance must be a finite number >= 0, got {variance!r}")
    var = float(variance) if variance is not None else float(sd) ** 2
    if not (delta != 0 and math.isfinite(delta)):
        raise ValueError(f"{who}: delta must be a finite non-zero difference, got {delta!r}")
    if not (0.0 < alpha < 1.0):
        raise ValueError(f"{who}: alpha must be in (0, 1), got {alpha!r}")
    if not (0.0 < power < 1.0):
        raise ValueError(f"{who}: power must be in (0, 1), got {power!r}")
    if design not in _DESIGNS:
        raise ConfigError.unknown("design", design, _DESIGNS)
    if not (0.0 <= icc <= 1.0):
        raise ValueError(f"{who}: icc must be in [0, 1], got {icc!r}")
    for name, value in (("trials_per_task", trials_per_task), ("n_tasks", n_tasks)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{who}: {name} must be an integer >= 1, got {value!r}")
    if trials_per_task is not None and n_tasks is not None:
        raise ValueError(f"{who}: give trials_per_task or n_tasks, not both")

    z = normal_ppf(1.0 - alpha / 2.0 if two_sided else 1.0 - alpha) + normal_ppf(power)
    arms = 1.0 if design == "paired" else 2.0
    # Rounded to 12 significant digits first so that exact products do not round up by one.
    n_eff = max(1, math.ceil(float(f"{arms * (z * z) * var / (delta * delta):.12g}")))
    min_tasks = math.floor(n_eff * icc) + 1 if icc > 0 else None

    if n_tasks is not None:
        if icc > 0 and n_tasks <= n_eff * icc:
            return TrialPlan(None, n_eff, None, None, n_tasks, min_tasks, False, design)
        # t tasks x m trials is worth t m / (1 + (m - 1) icc) observations; solve for m.
        m = max(1, math.ceil(n_eff * (1.0 - icc) / (n_tasks - n_eff * icc) - 1e-9))
        return TrialPlan(n_tasks * m, n_eff, 1.0 + (m - 1) * icc, m, n_tasks, min_tasks, True, design)
    if trials_per_task is not None:
        effect = 1.0 + (trials_per_task - 1) * icc
        total = math.ceil(n_eff * effect - 1e-9)
        tasks = math.ceil(total / trials_per_task)
        return TrialPlan(tasks * trials_per_task, n_eff, effect, trials_per_task, tasks, min_tasks, True, design)
    return TrialPlan(n_eff, n_eff, 1.0, None, None, min_tasks, True, design)


@dataclass(frozen=True, slots=True)
class VarianceComponents:
    """One-way random-effects split of the variance of clustered observations."""

    mean: float
    variance: float
    """Sample variance of all observations, ignoring clusters."""
    between: float | None
    """Between-cluster variance component (ANOVA estimator, floored at 0)."""
    within: float | None
    icc: float | None
    """between / (between + within); None with fewer than two clusters or no replication."""
    n: int
    n_clusters: int


def variance_components(values: Sequence[float], clusters: Sequence[Hashable]) -> VarianceComponents | None:
    """Variance and intra-class correlation of *values* grouped by *clusters*, for ``trials_needed``.

    The unbalanced one-way ANOVA estimator; None when there are no values.
    """
    if len(values) != len(clusters):
        raise ValueError(f"variance_components: clusters has {len(clusters)} ids for {len(values)} values")
    groups: dict[Hashable, list[float]] = {}
    for i, (value, cluster) in enumerate(zip(values, clusters)):
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"variance_components: values[{i}] must be a finite number, got {values[i]!r}")
        groups.setdefault(cluster, []).append(value)
    n, g = len(values), len(groups)
    if n == 0:
        return None
    mean = math.fsum(float(v) for v in values) / n
    total = math.fsum((float(v) - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    if g < 2 or n <= g:
        return VarianceComponents(mean, total, None, None, None, n, g)
    means = {c: math.fsum(vs) / len(vs) for c, vs in groups.items()}
    ss_between = math.fsum(len(vs) * (means[c] - mean) ** 2 for c, vs in groups.items())
    ss_within = math.fsum((v - means[c]) ** 2 for c, vs in groups.items() for v in vs)
    ms_between, ms_within = ss_between / (g - 1), ss_within / (n - g)
    n0 = (n - math.fsum(len(vs) ** 2 for vs in groups.values()) / n) / (g - 1)
    between = max(0.0, (ms_between - ms_within) / n0)
    icc = between / (between + ms_within) if between + ms_within > 0 else 0.0
    return VarianceComponents(mean, total, between, ms_within, icc, n, g)
