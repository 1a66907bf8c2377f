"""Planning: how many trials it takes to see a difference of a given size, before paying for them.

Normal approximation: to detect a true mean difference delta with a two-sided level-alpha test
and the given power, n = m * ((z_{1-alpha/2} + z_power) * sigma / delta)^2 independent
observations, where m = 1 for a paired design (sigma = sd of the per-item differences) and m = 2
per arm for two independent arms (sigma = sd within each arm). Trials nested in tasks are not
independent: with intra-class correlation rho and t trials per task, each observation is worth
1 / (1 + (t - 1) rho) of one (the design effect); past some point more trials stop helping and
only more tasks do.

``trials_needed`` is that normal approximation. The paired plans behind ``assay plan``
(``plan_paired``, ``iid_plan``, ``clustered_plan``) are exact: the smallest number of units whose
paired t test has the power asked for under the noncentral t (``assay.stats._nct``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from assay.errors import ConfigError
from assay.stats._beta import normal_ppf
from assay.stats._nct import noncentrality_needed, t_test_n

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


@dataclass(frozen=True, slots=True)
class PairedPlan:
    """How many tasks (or trials per task) a paired comparison needs, from paired differences."""

    n_needed: int
    """Tasks (clustered) or pairs (independent) needed at today's trials per task."""
    trials_per_task: float
    """Trials per task the plan assumes (today's mean)."""
    trials_needed: int | None
    """Keeping today's tasks: trials per task needed; None when no number suffices (or no clusters)."""
    min_tasks: int | None
    """Fewest tasks with which enough trials can succeed (the task x run interaction does not
    shrink with trials); None without clusters."""
    feasible: bool
    sd_difference: float
    """sd of the unit of the test: task means of the differences (clustered), or the differences."""
    interaction: float | None
    """Variance of task means of differences that more trials cannot remove (task x run)."""
    within: float | None
    """Within-task variance of the differences."""
    alpha_per_test: float
    """alpha / n_tests: Holm's first step, which the most significant of n_tests metrics must pass."""


def min_clusters(alpha: float) -> int:
    """Fewest clusters with which a two-sided sign-flip test can reach *alpha* (2 / 2**G < alpha)."""
    g = 2
    while 2.0 / 2**g >= alpha:
        g += 1
    return g


def _units_needed(var: float, delta: float, alpha: float, power: float) -> int:
    """Units for a two-sided level-alpha paired t test of a mean difference delta: the smallest n
    whose exact (noncentral t) power reaches *power*, and at least enough clusters for the
    sign-flip test to reach alpha at all (2 / 2**G < alpha)."""
    floor = min_clusters(alpha)
    if var <= 0:
        return floor
    return t_test_n(abs(delta) / math.sqrt(var), alpha, power, start=floor)


def plan_paired(
    diffs: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    delta: float,
    alpha: float = 0.05,
    power: float = 0.8,
    n_tests: int = 1,
    interaction: float | None = None,
) -> PairedPlan | None:
    """Plan a paired comparison from the variance of paired differences (b - a per paired trace).

    Between-task variance cancels in paired differences, so only what differs between the two runs
    counts. Clustered (trials of a task): the test's unit is the task mean of the differences; its
    variance is interaction + within / m for m trials per task. Tasks needed at today's m come from
    the between-task variance of those task means; trials needed keeping today's tasks from the
    split into interaction and within (infeasible when the interaction alone is too large).
    *n_tests* metrics compared under Holm: the plan uses alpha / n_tests, the level the most
    significant of them must pass. *interaction* overrides the estimate (0 when planning from one
    run, where the differences are simulated as two independent trials). None with < 2 units.
    """
    who = "plan_paired"
    if not (delta != 0 and math.isfinite(delta)):
        raise ValueError(f"{who}: delta must be a finite non-zero difference, got {delta!r}")
    if not (0.0 < alpha < 1.0) or not (0.0 < power < 1.0):
        raise ValueError(f"{who}: alpha and power must be in (0, 1), got {alpha!r}, {power!r}")
    if isinstance(n_tests, bool) or not isinstance(n_tests, int) or n_tests < 1:
        raise ValueError(f"{who}: n_tests must be an integer >= 1, got {n_tests!r}")
    values = [float(d) for d in diffs]
    if clusters is None or len(set(clusters)) == len(values):
        n = len(values)
        if n < 2:
            return None
        mean = math.fsum(values) / n
        return iid_plan(math.fsum((v - mean) ** 2 for v in values) / (n - 1), delta=delta, alpha=alpha,
                        power=power, n_tests=n_tests)
    if len(clusters) != len(values):
        raise ValueError(f"{who}: clusters has {len(clusters)} ids for {len(values)} differences")
    groups: dict[Hashable, list[float]] = {}
    for v, c in zip(values, clusters):
        groups.setdefault(c, []).append(v)
    g = len(groups)
    if g < 2:
        return None
    means = [math.fsum(vs) / len(vs) for vs in groups.values()]
    grand = math.fsum(means) / g
    var_means = math.fsum((m - grand) ** 2 for m in means) / (g - 1)
    dof = len(values) - g
    within = math.fsum((v - m) ** 2 for vs, m in zip(groups.values(), means) for v in vs) / dof if dof else 0.0
    m_harm = g / math.fsum(1.0 / len(vs) for vs in groups.values())
    if interaction is None:
        inter, var_unit = max(0.0, var_means - within / m_harm), var_means
    else:
        inter = float(interaction)
        var_unit = inter + within / m_harm
    return clustered_plan(var_unit, inter, within, m_harm, g, delta=delta, alpha=alpha, power=power,
                          n_tests=n_tests)


def iid_plan(var: float, *, delta: float, alpha: float = 0.05, power: float = 0.8, n_tests: int = 1) -> PairedPlan:
    """Independent pairs whose differences have variance *var*: how many pairs."""
    level = alpha / n_tests
    return PairedPlan(_units_needed(var, delta, level, power), 1.0, None, None, True, math.sqrt(var), None, None,
                      level)


def clustered_plan(var_unit: float, interaction: float, within: float, trials_per_task: float, n_tasks: int, *,
                   delta: float, alpha: float = 0.05, power: float = 0.8, n_tests: int = 1) -> PairedPlan:
    """The clustered plan from variance components of task means of paired differences.

    *var_unit*: variance of one task's mean difference at *trials_per_task*; *interaction*: the part
    more trials cannot remove; *within*: within-task variance of single differences.
    """
    level = alpha / n_tests
    g = n_tasks
    tasks = _units_needed(var_unit, delta, level, power)
    min_tasks = max(min_clusters(level), _units_needed(interaction, delta, level, power) if interaction > 0 else 0)
    if g < min_clusters(level):
        budget = 0.0  # the sign-flip test cannot reach the level with so few tasks, whatever the trials
    else:  # what the variance of a task mean may be, with today's g tasks: delta sqrt(g) / sd = nc
        budget = g * delta**2 / noncentrality_needed(g - 1, level, power) ** 2
    sd = math.sqrt(var_unit)
    if budget <= interaction:
        return PairedPlan(tasks, trials_per_task, None, max(min_tasks, g + 1), False, sd, interaction, within, level)
    trials = max(1, math.ceil(within / (budget - interaction) - 1e-9)) if within > 0 else 1
    return PairedPlan(tasks, trials_per_task, trials, min_tasks, True, sd, interaction, within, level)
