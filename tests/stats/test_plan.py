"""Sample-size planning and variance components."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import ConfigError
from assay.stats import trials_needed, variance_components


def test_textbook_paired_and_independent():
    # (1.959964 + 0.841621)^2 * 0.25 / 0.05^2 = 784.9 -> 785 pairs; twice that per independent arm.
    paired = trials_needed(0.05, variance=0.25)
    assert (paired.n, paired.n_effective, paired.design_effect, paired.feasible) == (785, 785, 1.0, True)
    assert trials_needed(0.05, sd=0.5, design="independent").n == 1570
    assert trials_needed(-0.05, sd=0.5).n == 785  # the sign of delta does not matter
    assert trials_needed(0.05, sd=0.5, two_sided=False).n == 619  # (1.644854 + 0.841621)^2 * 100


def test_trials_per_task_for_a_fixed_task_set():
    # 500 tasks, icc 0.3: m >= 785 * 0.7 / (500 - 785 * 0.3) = 2.08 -> 3 trials per task.
    plan = trials_needed(0.05, variance=0.25, icc=0.3, n_tasks=500)
    assert (plan.trials_per_task, plan.n_tasks, plan.n, plan.design_effect, plan.min_tasks) == (3, 500, 1500, 1.6, 236)
    assert 500 * 3 / plan.design_effect >= 785 > 500 * 2 / (1 + 0.3)


def test_too_few_tasks_is_infeasible_whatever_the_trials():
    plan = trials_needed(0.05, variance=0.25, icc=0.3, n_tasks=200)
    assert (plan.feasible, plan.trials_per_task, plan.n, plan.min_tasks) == (False, None, None, 236)


def test_fixed_trials_per_task_gives_tasks():
    plan = trials_needed(0.05, variance=0.25, icc=0.3, trials_per_task=5)
    assert (plan.design_effect, plan.n_tasks, plan.trials_per_task) == (pytest.approx(2.2), 346, 5)
    assert plan.n == 346 * 5 >= 785 * 2.2


@given(delta=st.floats(0.01, 1.0), sd=st.floats(0.01, 2.0), icc=st.floats(0.0, 0.9),
       tasks=st.integers(1, 5000))
def test_solved_trials_are_enough_and_minimal(delta, sd, icc, tasks):
    plan = trials_needed(delta, sd=sd, icc=icc, n_tasks=tasks)
    worth = lambda m: tasks * m / (1 + (m - 1) * icc)  # noqa: E731 - effective sample size
    if plan.feasible:
        m = plan.trials_per_task
        assert worth(m) >= plan.n_effective * (1 - 1e-9)
        assert m == 1 or worth(m - 1) < plan.n_effective
    else:
        assert tasks <= plan.n_effective * icc and plan.trials_per_task is None


@given(sd=st.floats(0.01, 2.0), d1=st.floats(0.01, 1.0), d2=st.floats(0.01, 1.0))
def test_smaller_differences_need_more(sd, d1, d2):
    small, large = sorted((d1, d2))
    assert trials_needed(small, sd=sd).n >= trials_needed(large, sd=sd).n


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        ({"delta": 0.1}, ValueError, "give exactly one of sd or variance"),
        ({"delta": 0.1, "sd": 1, "variance": 1}, ValueError, "give exactly one of sd or variance"),
        ({"delta": 0.0, "sd": 1}, ValueError, "delta must be a finite non-zero difference, got 0.0"),
        ({"delta": 0.1, "sd": -1}, ValueError, "sd must be a finite number >= 0, got -1"),
        ({"delta": 0.1, "sd": 1, "power": 1.0}, ValueError, "power must be in (0, 1), got 1.0"),
        ({"delta": 0.1, "sd": 1, "alpha": 0}, ValueError, "alpha must be in (0, 1), got 0"),
        ({"delta": 0.1, "sd": 1, "icc": 1.5}, ValueError, "icc must be in [0, 1], got 1.5"),
        ({"delta": 0.1, "sd": 1, "n_tasks": 0}, ValueError, "n_tasks must be an integer >= 1, got 0"),
        ({"delta": 0.1, "sd": 1, "n_tasks": 5, "trials_per_task": 2}, ValueError, "not both"),
        ({"delta": 0.1, "sd": 1, "design": "pairs"}, ConfigError, "'paired'"),
    ],
    ids=["no-spread", "both-spreads", "delta", "sd", "power", "alpha", "icc", "tasks", "both-sizes", "design"],
)
def test_bad_arguments(kwargs, error, fragment):
    with pytest.raises(error) as info:
        trials_needed(**kwargs)
    assert fragment in str(info.value)


def test_variance_components_hand_computed():
    # Clusters (1, 2), (3, 4), (5, 6): MSW = 0.5, MSB = 2 * 4 = 8, n0 = 2 -> between = 3.75.
    vc = variance_components([1, 2, 3, 4, 5, 6], ["a", "a", "b", "b", "c", "c"])
    assert (vc.mean, vc.variance, vc.within, vc.between, vc.n, vc.n_clusters) == (3.5, 3.5, 0.5, 3.75, 6, 3)
    assert vc.icc == pytest.approx(3.75 / 4.25)


def test_variance_components_feed_the_planner():
    vc = variance_components([0, 1, 0, 1, 1, 1, 0, 0], [1, 1, 2, 2, 3, 3, 4, 4])
    plan = trials_needed(0.1, variance=vc.variance, icc=vc.icc, n_tasks=400)
    assert plan.feasible and plan.trials_per_task >= 1


def test_variance_components_edges():
    assert variance_components([], []) is None
    single = variance_components([0.3, 0.5], ["a", "a"])
    assert (single.icc, single.between, single.n_clusters) == (None, None, 1)
    assert math.isclose(single.variance, 0.02)
    with pytest.raises(ValueError, match="clusters has 1 ids for 2 values"):
        variance_components([1, 2], ["a"])


def test_plan_paired_ignores_between_task_variance_and_applies_holm():
    import random

    from assay.stats import plan_paired

    rng = random.Random(3)
    diffs, tasks = [], []
    for t in range(30):
        for _ in range(5):
            diffs.append(rng.gauss(0, 0.2))  # differences: between-task variance already cancelled
            tasks.append(t)
    one = plan_paired(diffs, tasks, delta=0.05)
    three = plan_paired(diffs, tasks, delta=0.05, n_tests=3)
    assert one.alpha_per_test == 0.05 and three.alpha_per_test == pytest.approx(0.05 / 3)
    assert three.n_needed > one.n_needed
    # task means of 5 differences: sd ~ 0.2 / sqrt(5); tasks ~ (t + t)^2 0.008 / 0.0025 ~ 26
    assert 18 <= one.n_needed <= 36 and one.feasible and one.trials_needed >= 1
    iid = plan_paired(diffs, None, delta=0.05)
    assert iid.trials_needed is None and 100 <= iid.n_needed <= 160  # 7.85 x 0.04 / 0.0025 ~ 126 pairs
    # too few tasks for the sign-flip test to reach 0.05, whatever the trials: infeasible
    few = plan_paired(diffs[:20], tasks[:20], delta=0.05)
    assert few.feasible is False and few.min_tasks >= 6


def _scipy_power(n, effect, alpha):
    stats = pytest.importorskip("scipy.stats")
    crit = stats.t.ppf(1 - alpha / 2, n - 1)
    nc = effect * math.sqrt(n)
    return stats.nct.sf(crit, n - 1, nc) + stats.nct.cdf(-crit, n - 1, nc)


@pytest.mark.parametrize(("sd", "delta", "expected"), [(1.0, 0.12, 547), (0.05, 0.05, 10), (1.0, 1.425, 7),
                                                       (0.5, 0.05, 787), (0.3, 0.2, 20), (0.1, 0.2, 6)],
                         ids=["d=0.12", "d=1", "d=1.425", "d=0.1", "d=0.67", "d=2"])
def test_paired_plan_is_exact_under_the_noncentral_t(sd, delta, expected):
    from assay.stats import iid_plan

    plan = iid_plan(sd**2, delta=delta)
    assert plan.n_needed == expected  # the t-quantile iteration gave 548, 11 and 6 (under-powered) for the first three
    effect = delta / sd
    if expected > 6:  # 6 is the sign-flip test's floor at alpha 0.05, not a power answer
        assert _scipy_power(expected, effect, 0.05) >= 0.8 > _scipy_power(expected - 1, effect, 0.05)


@pytest.mark.parametrize(("t", "df", "nc"), [(2.0, 9, 2.8), (-2.0, 9, 2.8), (1.96, 500, 0.5), (12.7, 1, 40.0),
                                             (4.0, 30, -3.0), (0.0, 5, 0.0), (-15.0, 2, -20.0), (8.0, 5000, 25.0)])
def test_noncentral_t_cdf_matches_scipy(t, df, nc):
    stats = pytest.importorskip("scipy.stats")
    from assay.stats._nct import nct_cdf

    assert nct_cdf(t, df, nc) == pytest.approx(float(stats.nct.cdf(t, df, nc)), abs=1e-11)


@settings(max_examples=40, deadline=None)
@given(effect=st.floats(0.05, 2.0), alpha=st.sampled_from([0.05, 0.01, 0.05 / 3]), power=st.floats(0.5, 0.95))
def test_t_test_n_is_the_smallest_n_with_the_power(effect, alpha, power):
    pytest.importorskip("scipy.stats")
    from assay.stats._nct import t_test_n

    n = t_test_n(effect, alpha, power)
    assert _scipy_power(n, effect, alpha) >= power - 1e-9
    assert n == 2 or _scipy_power(n - 1, effect, alpha) < power + 1e-9


def test_clustered_budget_uses_the_exact_noncentrality():
    stats = pytest.importorskip("scipy.stats")
    from assay.stats._nct import noncentrality_needed

    nc = noncentrality_needed(19, 0.05, 0.8)
    crit = stats.t.ppf(0.975, 19)
    assert stats.nct.sf(crit, 19, nc) + stats.nct.cdf(-crit, 19, nc) == pytest.approx(0.8, abs=1e-9)
