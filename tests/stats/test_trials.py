"""Trial-based (Inspect AI style) pass@k: unbiased estimators and their task-level aggregate."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import ConfigError
from assay.stats import (
    TRIAL_BAYESIAN,
    TRIAL_UNBIASED,
    BayesianMode,
    trial_pass_k,
    unbiased_pass_at_k,
    unbiased_pass_pow_k,
)


def binom_pmf(n: int, c: int, p: float) -> float:
    return math.comb(n, c) * p**c * (1 - p) ** (n - c)


def test_hand_computed_values():
    # 7 of 10 trials, k = 3: C(3,3)/C(10,3) = 1/120 of the 3-subsets hold no success; C(7,3) = 35 all do.
    assert unbiased_pass_at_k(10, 7, 3) == pytest.approx(1 - 1 / 120, rel=1e-15)
    assert unbiased_pass_pow_k(10, 7, 3) == pytest.approx(35 / 120, rel=1e-15)
    assert unbiased_pass_at_k(10, 7, 1) == unbiased_pass_pow_k(10, 7, 1) == 0.7
    assert (unbiased_pass_at_k(5, 3, 5), unbiased_pass_pow_k(5, 3, 5)) == (1.0, 0.0)


@pytest.mark.parametrize("n, c, k", [(2, 1, 3), (0, 0, 1), (4, 4, 5)], ids=["2<3", "no-trials", "4<5"])
def test_fewer_trials_than_k_is_undefined(n, c, k):
    assert unbiased_pass_at_k(n, c, k) is None
    assert unbiased_pass_pow_k(n, c, k) is None


@pytest.mark.parametrize(
    "args, fragment",
    [((-1, 0, 1), "n must be >= 0, got -1"), ((3, 4, 1), "c must be <= n (n=3), got c=4"),
     ((3, 1, 0), "k must be >= 1, got 0")],
    ids=["n<0", "c>n", "k=0"],
)
def test_bad_counts(args, fragment):
    with pytest.raises(ValueError) as info:
        unbiased_pass_at_k(*args)
    assert fragment in str(info.value)


@given(n=st.integers(1, 40), k=st.integers(1, 40), p=st.floats(0.0, 1.0))
def test_unbiased_in_expectation_exactly(n, k, p):
    # Summing over the binomial distribution of c: the expectation is the true pass@k and pass^k.
    if n < k:
        return
    at_k = math.fsum(binom_pmf(n, c, p) * unbiased_pass_at_k(n, c, k) for c in range(n + 1))
    pow_k = math.fsum(binom_pmf(n, c, p) * unbiased_pass_pow_k(n, c, k) for c in range(n + 1))
    assert at_k == pytest.approx(1 - (1 - p) ** k, abs=1e-12)
    assert pow_k == pytest.approx(p**k, abs=1e-12)


@pytest.mark.parametrize("p, n, k", [(0.35, 8, 3), (0.8, 5, 5), (0.1, 20, 10)], ids=str)
def test_unbiased_by_simulation(p, n, k):
    # A seeded simulation; the plug-ins are biased (Jensen), the unbiased estimators are not.
    rng = random.Random(1234)
    tasks = [(n, sum(rng.random() < p for _ in range(n))) for _ in range(20_000)]
    est = math.fsum(unbiased_pass_at_k(n, c, k) for n, c in tasks) / len(tasks)
    plug = math.fsum(1 - (1 - c / n) ** k for n, c in tasks) / len(tasks)
    sd = math.sqrt(math.fsum((unbiased_pass_at_k(n, c, k) - est) ** 2 for n, c in tasks) / len(tasks))
    target = 1 - (1 - p) ** k
    assert abs(est - target) < 4 * sd / math.sqrt(len(tasks)) + 1e-9
    assert plug < target  # 1 - (1 - x)^k is concave: the plug-in pass@k falls short
    est_pow = math.fsum(unbiased_pass_pow_k(n, c, k) for n, c in tasks) / len(tasks)
    plug_pow = math.fsum((c / n) ** k for n, c in tasks) / len(tasks)
    assert est_pow == pytest.approx(p**k, abs=0.005)
    assert plug_pow > p**k  # x^k is convex: the plug-in pass^k overshoots


def test_aggregate_counts_undefined_tasks_and_names_the_family():
    pytest.importorskip("numpy")
    r = trial_pass_k([(10, 7), (2, 2), (5, 0), (0, 0)], k=3, n_boot=200, method="bootstrap")
    assert (r.family, r.method, r.k) == (TRIAL_UNBIASED, "t_over_tasks", 3)  # 2 tasks: too few to bootstrap
    assert (r.n_tasks, r.n_undefined) == (2, 2)
    assert r.pass_at_k == pytest.approx((unbiased_pass_at_k(10, 7, 3) + 0.0) / 2)
    assert r.pass_pow_k == pytest.approx(unbiased_pass_pow_k(10, 7, 3) / 2)
    assert r.pass_at_k_ci_low <= r.pass_at_k <= r.pass_at_k_ci_high


def test_no_defined_task_gives_none_not_a_guess():
    r = trial_pass_k([(2, 1), (1, 1)], k=3)
    assert (r.pass_at_k, r.pass_pow_k, r.pass_at_k_ci_low, r.n_tasks, r.n_undefined) == (None, None, None, 0, 2)
    assert trial_pass_k([], k=1).n_tasks == 0


def test_one_task_has_no_bootstrap_interval():
    r = trial_pass_k([(10, 7)], k=3, method="bootstrap")
    assert r.pass_at_k == unbiased_pass_at_k(10, 7, 3)
    assert (r.pass_at_k_ci_low, r.pass_at_k_ci_high, r.pass_pow_k_ci_low, r.pass_pow_k_ci_high) == (None,) * 4


def test_wilson_over_tasks_counts_one_task_as_one_draw_and_never_collapses():
    pytest.importorskip("numpy")
    one = trial_pass_k([(10, 7)], k=3)
    assert one.method == "task_wilson" and 0.0 < one.pass_at_k_ci_low < one.pass_at_k <= one.pass_at_k_ci_high == 1.0
    # every task saturates: the interval is Wilson over the 20 tasks, not [1, 1]
    easy = trial_pass_k([(5, 5)] * 20, k=5)
    assert easy.pass_at_k == 1.0 and easy.pass_at_k_ci_high == 1.0 and 0.8 < easy.pass_at_k_ci_low < 0.9
    hard = trial_pass_k([(5, 0)] * 20, k=5)
    assert hard.pass_pow_k == 0.0 and hard.pass_pow_k_ci_low == 0.0 and 0.1 < hard.pass_pow_k_ci_high < 0.2
    # counts= is the same as listing the tasks
    assert trial_pass_k([(5, 5), (5, 1)], 2, counts=[7, 3]) == trial_pass_k([(5, 5)] * 7 + [(5, 1)] * 3, 2)


task_lists = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)).map(lambda t: (max(t), min(t))),
                      min_size=2, max_size=30)


@settings(max_examples=40, deadline=None)
@given(tasks=task_lists, k=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_bootstrap_interval_contains_estimate_and_ignores_order(tasks, k, seed):
    pytest.importorskip("numpy")
    r = trial_pass_k(tasks, k, n_boot=200, seed=seed)
    shuffled = list(tasks)
    random.Random(seed).shuffle(shuffled)
    assert trial_pass_k(shuffled, k, n_boot=200, seed=seed) == r
    if r.n_tasks >= 2:
        assert 0.0 <= r.pass_at_k_ci_low <= r.pass_at_k <= r.pass_at_k_ci_high <= 1.0
        assert 0.0 <= r.pass_pow_k_ci_low <= r.pass_pow_k <= r.pass_pow_k_ci_high <= 1.0


def test_bayesian_variant_averages_per_task_posteriors():
    pytest.importorskip("numpy")
    tasks = [(10, 7), (8, 8), (6, 1), (2, 2)]
    with pytest.warns(FutureWarning, match=r"method='bayesian'\) is deprecated.*0.79"):
        r = trial_pass_k(tasks, k=3, method="bayesian", n_boot=4000)
    assert (r.family, r.method, r.n_tasks, r.n_undefined) == (TRIAL_BAYESIAN, "posterior_draws", 3, 1)
    per_task = [BayesianMode().estimate(n, c, 3) for n, c in tasks if n >= 3]
    assert r.pass_at_k == pytest.approx(sum(t.pass_at_k for t in per_task) / 3, rel=1e-12)
    assert r.pass_pow_k == pytest.approx(sum(t.pass_pow_k for t in per_task) / 3, rel=1e-12)
    assert r.pass_at_k_ci_low < r.pass_at_k < r.pass_at_k_ci_high
    assert r.pass_pow_k_ci_low < r.pass_pow_k < r.pass_pow_k_ci_high
    with pytest.warns(FutureWarning):
        assert trial_pass_k(tasks, k=3, method="bayesian", n_boot=4000) == r  # seeded


def test_bayesian_single_task_matches_the_exact_interval():
    pytest.importorskip("numpy")
    with pytest.warns(FutureWarning):
        r = trial_pass_k([(10, 7)], k=3, method="bayesian", n_boot=20_000)
    exact = BayesianMode().estimate(10, 7, 3)
    assert r.pass_pow_k == pytest.approx(exact.pass_pow_k, rel=1e-12)
    assert r.pass_pow_k_ci_low == pytest.approx(exact.pass_pow_k_ci_low, abs=0.01)
    assert r.pass_pow_k_ci_high == pytest.approx(exact.pass_pow_k_ci_high, abs=0.01)


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        ({"tasks": [(3, 4)], "k": 1}, ValueError, "tasks[0]: c must be <= n (n=3), got c=4"),
        ({"tasks": [(3,)], "k": 1}, ValueError, "tasks[0] must be an (n, c) pair, got (3,)"),
        ({"tasks": [(3, 1)], "k": 0}, ValueError, "k must be >= 1, got 0"),
        ({"tasks": [(3, 1)], "k": 1, "level": 0.0}, ValueError, "level must be in (0, 1), got 0.0"),
        ({"tasks": [(3, 1)], "k": 1, "prior": (0, 1)}, ValueError, "prior must be two finite numbers > 0"),
        ({"tasks": [(3, 1)], "k": 1, "method": "bootstap"}, ConfigError, "'bootstrap'"),
    ],
    ids=["c>n", "not-a-pair", "k", "level", "prior", "method"],
)
def test_bad_arguments(kwargs, error, fragment):
    with pytest.raises(error) as info:
        trial_pass_k(**kwargs)
    assert fragment in str(info.value)


def test_many_tasks_use_a_t_interval_over_tasks_close_to_the_bootstrap():
    pytest.importorskip("numpy")
    import random

    from assay.stats import _trials

    rng = random.Random(5)
    tasks = [(10, sum(rng.random() < p for _ in range(10))) for p in (rng.random() for _ in range(1200))]
    fast = trial_pass_k(tasks, 3, method="bootstrap")
    assert fast.method == "t_over_tasks"
    limit = _trials.BOOTSTRAP_MAX_TASKS
    try:
        _trials.BOOTSTRAP_MAX_TASKS = 10**9
        slow = trial_pass_k(tasks, 3, n_boot=1000, method="bootstrap")
    finally:
        _trials.BOOTSTRAP_MAX_TASKS = limit
    assert slow.method == "task_bootstrap" and slow.pass_at_k == fast.pass_at_k
    assert fast.pass_at_k_ci_low == pytest.approx(slow.pass_at_k_ci_low, abs=0.005)
    assert fast.pass_pow_k_ci_high == pytest.approx(slow.pass_pow_k_ci_high, abs=0.005)


@pytest.mark.parametrize("n_tasks", [40, 3000], ids=["bootstrap-regime", "t-regime"])
def test_counts_are_the_same_as_listing_each_task(n_tasks):
    pytest.importorskip("numpy")
    from collections import Counter

    rng = random.Random(n_tasks)
    tasks = [(rng.choice([2, 5, 10]), 0) for _ in range(n_tasks)]
    tasks = [(n, rng.randint(0, n)) for n, _ in tasks]
    listed = trial_pass_k(tasks, 2, n_boot=500)
    grouped = Counter(tasks)
    counted = trial_pass_k(list(grouped), 2, n_boot=500, counts=list(grouped.values()))
    assert counted.method == listed.method and counted.n_tasks == listed.n_tasks
    for field in ("pass_at_k", "pass_at_k_ci_low", "pass_at_k_ci_high", "pass_pow_k", "pass_pow_k_ci_high"):
        assert getattr(counted, field) == pytest.approx(getattr(listed, field), abs=1e-9 if n_tasks > 1000 else 0.02)


def test_pass_at_1_and_the_pass_rate_share_one_interval():
    from assay.stats import bounded_mean_interval

    tasks = [(3, 2), (3, 1), (3, 2), (3, 1)]
    r = trial_pass_k(tasks, 1)
    flags = [1.0 if t < c else 0.0 for n, c in tasks for t in range(n)]
    clusters = [i for i, (n, _) in enumerate(tasks) for _ in range(n)]
    rate = bounded_mean_interval(flags, clusters)
    assert (r.pass_at_k, r.pass_at_k_ci_low, r.pass_at_k_ci_high) == pytest.approx(
        (rate.estimate, rate.low, rate.high), abs=1e-12)
    assert r.pass_at_k_ci_low == pytest.approx(0.2213, abs=1e-4)  # was 0.2382: no t correction


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 6), successes=st.lists(st.integers(0, 6), min_size=1, max_size=12))
def test_pass_at_1_interval_is_the_pass_rate_interval_for_equal_trials(n, successes):
    from assay.stats import bounded_mean_interval

    tasks = [(n, min(c, n)) for c in successes]
    r = trial_pass_k(tasks, 1)
    flags = [1.0 if t < c else 0.0 for _, c in tasks for t in range(n)]
    clusters = [i for i, _ in enumerate(tasks) for _ in range(n)] if n > 1 else None
    rate = bounded_mean_interval(flags, clusters)
    assert r.pass_at_k == pytest.approx(rate.estimate, abs=1e-12)
    assert (r.pass_at_k_ci_low, r.pass_at_k_ci_high) == pytest.approx((rate.low, rate.high), abs=1e-9)
