"""Wilson and mean intervals: known values, edge sizes, invariants, coverage."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import ConfigError
from assay.stats import mean_interval, wilson_interval

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


def test_wilson_known_values():
    r = wilson_interval(7, 10)
    assert (round(r.low, 4), round(r.high, 4), r.estimate, r.method) == (0.3968, 0.8922, 0.7, "wilson")
    assert wilson_interval(0, 10).low == 0.0 and round(wilson_interval(0, 10).high, 4) == 0.2775
    assert wilson_interval(10, 10).high == 1.0 and round(wilson_interval(10, 10).low, 4) == 0.7225


def test_wilson_no_trials_is_none():
    assert wilson_interval(0, 0) is None


@given(n=st.integers(1, 10_000), frac=st.floats(0, 1), level=st.floats(0.5, 0.999))
def test_wilson_contains_estimate_inside_unit_interval(n, frac, level):
    r = wilson_interval(round(frac * n), n, level)
    assert 0.0 <= r.low <= r.estimate <= r.high <= 1.0


@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.8], ids=str)
def test_wilson_coverage_near_nominal(p):
    # Exact coverage: sum the binomial probabilities of the outcomes whose interval covers p.
    n = 40
    cover = math.fsum(math.comb(n, c) * p**c * (1 - p) ** (n - c)
                      for c in range(n + 1) if wilson_interval(c, n).low <= p <= wilson_interval(c, n).high)
    assert 0.90 <= cover <= 0.99


@pytest.mark.parametrize(
    "args, fragment",
    [((11, 10), "successes must be an integer in [0, n=10], got 11"), ((1, -1), "n must be an integer >= 0, got -1"),
     ((1.5, 3), "got 1.5"), ((1, 3, 95), "level must be in (0, 1), got 95")],
    ids=["s>n", "n<0", "float", "level"],
)
def test_wilson_bad_arguments(args, fragment):
    with pytest.raises(ValueError) as info:
        wilson_interval(*args)
    assert fragment in str(info.value)


def test_t_interval_known_value():
    r = mean_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    # t(0.975, 4) = 2.7764451052, sd = sqrt(2.5)
    half = 2.7764451051977987 * math.sqrt(2.5) / math.sqrt(5)
    assert (r.estimate, r.method, r.n, r.n_clusters) == (3.0, "t", 5, 5)
    assert (r.low, r.high) == pytest.approx((3 - half, 3 + half), rel=1e-12)


def test_empty_and_single():
    assert mean_interval([]) is None
    one = mean_interval([0.4])
    assert (one.estimate, one.low, one.high, one.n) == (0.4, None, None, 1)


def test_unique_clusters_use_t_repeated_use_the_cluster_bootstrap():
    pytest.importorskip("numpy")
    values = [0.1, 0.5, 0.9, 0.4]
    assert mean_interval(values, ["a", "b", "c", "d"]).method == "t"
    few = mean_interval(values, ["a", "a", "b", "b"], n_boot=500)
    assert (few.method, few.n, few.n_clusters) == ("cluster_t", 4, 2)
    # CR1 by hand: cluster sums 0.6 and 1.3, mean 0.475; t(1) quantile 12.706
    resid = [0.6 - 2 * 0.475, 1.3 - 2 * 0.475]
    se = (2 / 1 * sum(r * r for r in resid)) ** 0.5 / 4
    assert few.high - few.estimate == pytest.approx(12.7062047 * se, rel=1e-6)
    many = [0.1 * (i % 10) for i in range(150)]
    clustered = mean_interval(many, [i // 3 for i in range(150)], n_boot=500)
    assert (clustered.method, clustered.n, clustered.n_clusters) == ("cluster_bootstrap", 150, 50)
    assert mean_interval(values, method="bootstrap", n_boot=500).method == "bootstrap"
    assert mean_interval(values, ["a", "a", "b", "b"], method="t").method == "t"


def test_one_cluster_has_no_interval():
    pytest.importorskip("numpy")
    r = mean_interval([1.0, 2.0, 4.0], ["t1"] * 3)
    assert (r.estimate, r.low, r.high, r.n_clusters) == (7 / 3, None, None, 1)


def test_bootstrap_is_seeded():
    pytest.importorskip("numpy")
    rng = random.Random(5)
    values = [rng.random() for _ in range(150)]
    clusters = [i // 3 for i in range(150)]
    a = mean_interval(values, clusters, seed=11)
    assert mean_interval(values, clusters, seed=11) == a
    assert mean_interval(values, clusters, seed=12) != a


@settings(max_examples=60, deadline=None)
@given(data=st.lists(st.tuples(finite, st.integers(0, 6)), min_size=1, max_size=40), seed=st.integers(0, 2**31))
def test_cluster_bootstrap_contains_estimate_and_ignores_order(data, seed):
    pytest.importorskip("numpy")
    values, clusters = [v for v, _ in data], [c for _, c in data]
    r = mean_interval(values, clusters, n_boot=200, seed=seed)
    assert r.estimate == pytest.approx(math.fsum(values) / len(values), rel=1e-12, abs=1e-9)
    if r.low is not None:
        assert r.low <= r.estimate <= r.high
    shuffled = list(data)
    random.Random(seed).shuffle(shuffled)
    again = mean_interval([v for v, _ in shuffled], [c for _, c in shuffled], n_boot=200, seed=seed)
    assert again == r


@given(values=st.lists(finite, min_size=2, max_size=50), level=st.floats(0.5, 0.999))
def test_t_interval_contains_estimate_and_ignores_order(values, level):
    r = mean_interval(values, level=level)
    assert r.low <= r.estimate <= r.high
    assert mean_interval(sorted(values), level=level) == r


def test_cluster_bootstrap_coverage_near_nominal_where_naive_t_fails():
    # 30 tasks with a random task effect and 1-6 trials each; the true mean is 0.
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(2024)
    covered = naive = 0
    reps = 300
    for r in range(reps):
        sizes = rng.integers(1, 7, 30)
        values = np.repeat(rng.normal(0, 1, 30), sizes) + rng.normal(0, 1, sizes.sum())
        clusters = np.repeat(np.arange(30), sizes).tolist()
        iv = mean_interval(values, clusters, n_boot=400, seed=r)
        covered += iv.low <= 0.0 <= iv.high
        flat = mean_interval(values, method="t")
        naive += flat.low <= 0.0 <= flat.high
    assert 0.90 <= covered / reps <= 0.99
    assert naive / reps < 0.88  # treating trials as independent is overconfident


def test_t_interval_coverage_near_nominal():
    rng = random.Random(99)
    reps = 1000
    covered = 0
    for _ in range(reps):
        iv = mean_interval([rng.gauss(1.0, 2.0) for _ in range(12)])
        covered += iv.low <= 1.0 <= iv.high
    assert 0.93 <= covered / reps <= 0.97


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        ({"values": [1.0, math.nan]}, ValueError, "values[1] must be a finite number, got nan"),
        ({"values": [1.0, 2.0], "clusters": ["a"]}, ValueError, "clusters has 1 ids for 2 values"),
        ({"values": [1.0], "level": 1.5}, ValueError, "level must be in (0, 1), got 1.5"),
        ({"values": [1.0], "n_boot": 0}, ValueError, "n_boot must be an integer >= 1, got 0"),
        ({"values": [1.0], "method": "boot"}, ConfigError, "'bootstrap'"),
    ],
    ids=["nan", "lengths", "level", "n_boot", "method"],
)
def test_bad_arguments(kwargs, error, fragment):
    with pytest.raises(error) as info:
        mean_interval(**kwargs)
    assert fragment in str(info.value)


def test_nan_rejected_on_the_bootstrap_path_too():
    pytest.importorskip("numpy")
    with pytest.raises(ValueError, match=r"values\[2\] must be a finite number, got inf"):
        mean_interval([1.0, 2.0, math.inf], ["a", "a", "b"])


def test_many_clusters_use_the_cluster_robust_t_interval_which_agrees_with_the_bootstrap():
    pytest.importorskip("numpy")
    import random

    rng = random.Random(3)
    values, clusters = [], []
    for task in range(1500):
        level = rng.random()
        for _ in range(3):
            values.append(min(1.0, max(0.0, level + rng.gauss(0, 0.1))))
            clusters.append(task)
    fast = mean_interval(values, clusters)
    slow = mean_interval(values, clusters, method="bootstrap", n_boot=1000)
    assert fast.method == "cluster_t" and slow.method == "cluster_bootstrap"
    assert fast.low == pytest.approx(slow.low, abs=0.003) and fast.high == pytest.approx(slow.high, abs=0.003)


def test_numpy_scalars_are_accepted_and_the_estimate_stays_inside():
    np = pytest.importorskip("numpy")
    from assay.stats import bounded_mean_interval

    assert wilson_interval(np.int64(3), np.int64(10)) == wilson_interval(3, 10)
    values = np.array([0.1, 0.7, 0.3, 0.9, 0.5], dtype=np.float32)
    for r in (bounded_mean_interval(values), mean_interval(list(values)), bounded_mean_interval(values, [0, 0, 1, 1, 2])):
        assert r.low <= r.estimate <= r.high


@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=40), st.integers(1, 6))
@settings(max_examples=200, deadline=None)
def test_bounded_interval_contains_its_estimate_inside_unit_interval(values, groups):
    pytest.importorskip("numpy")
    from assay.stats import bounded_mean_interval

    for clusters in (None, [i % groups for i in range(len(values))]):
        r = bounded_mean_interval(values, clusters)
        assert 0.0 <= r.low <= r.estimate <= r.high <= 1.0
        assert r.high > r.low  # never zero width, even when every value is the same


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.sampled_from([0.0, 1.0, 0.1, 0.7, 1 / 3, 2.0 ** -30])),
                min_size=1, max_size=300), st.booleans())
def test_cluster_totals_skip_the_sort_only_where_order_cannot_matter(pairs, flags_only):
    """Whole-number values (pass flags) are summed without the canonical sort; the sums must be those
    of the sorted summation, and fractional values are still summed in the sorted order."""
    import numpy as np

    from assay.stats._intervals import cluster_totals

    ids = np.array([c for c, _ in pairs], dtype=np.int64)
    values = np.array([float(v >= 0.5) if flags_only else v for _, v in pairs])
    sums, counts = cluster_totals(np, values, ids)
    _, inv = np.unique(ids, return_inverse=True)
    order = np.lexsort((values, inv))
    assert sums.tobytes() == np.bincount(inv[order], weights=values[order]).tobytes()
    assert counts.tolist() == np.bincount(inv).tolist()
