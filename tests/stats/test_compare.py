"""Paired comparison between runs and Holm's adjustment."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.stats import holm, paired_compare

np = pytest.importorskip("numpy")


def two_runs(effect: float, seed: int, tasks: int = 60, trials: int = 5):
    """Run a, and run b = a + effect + noise; scores share a strong per-task difficulty."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.0, 1.0, tasks)
    ids = [f"task{t}/trial{j}" for t in range(tasks) for j in range(trials)]
    clusters = {i: i.split("/")[0] for i in ids}
    a = {i: float(difficulty[int(clusters[i][4:])] + rng.normal(0, 0.3)) for i in ids}
    b = {i: a[i] + effect + float(rng.normal(0, 0.3)) for i in ids}
    return a, b, clusters


def test_finds_a_planted_regression():
    a, b, clusters = two_runs(effect=-0.15, seed=1)
    r = paired_compare(a, b, clusters, seed=3)
    assert r.p_value < 0.01
    assert r.ci_high < 0 and r.ci_low <= r.difference <= r.ci_high
    assert r.difference == pytest.approx(-0.15, abs=0.05)
    assert (r.n_paired, r.n_clusters, r.exact, r.permutations) == (300, 60, False, 10_000)
    assert r.mean_b - r.mean_a == pytest.approx(r.difference, abs=1e-12)


def test_does_not_cry_wolf_on_a_null_difference():
    a, b, clusters = two_runs(effect=0.0, seed=2)
    r = paired_compare(a, b, clusters, seed=3)
    assert r.p_value > 0.05
    assert r.ci_low <= 0.0 <= r.ci_high


def test_unpaired_ids_are_listed_and_none_counts_as_absent():
    r = paired_compare({"x": 0.1, "y": 0.2, "z": 0.5, "only_a": 1.0, "gap": None},
                       {"x": 0.3, "y": 0.5, "z": 0.6, "gap": 0.9, "only_b": 0.0})
    assert (r.only_in_a, r.only_in_b) == (("only_a",), ("gap", "only_b"))
    assert r.n_paired == 3 and r.difference == pytest.approx(0.2)


def test_exact_sign_flip_enumeration():
    # Differences 0.2, 0.3, 0.1 (all positive): of the 8 sign patterns, 2 reach |total| = 0.6.
    r = paired_compare({1: 0.1, 2: 0.2, 3: 0.5}, {1: 0.3, 2: 0.5, 3: 0.6})
    assert (r.p_value, r.permutations, r.exact) == (0.25, 8, True)


def test_clusters_are_the_unit_of_resampling():
    # Two tasks with five trials each: only 4 sign patterns exist, whatever the trial count.
    a = {(t, j): 0.0 for t in range(2) for j in range(5)}
    b = {(t, j): 1.0 for t in range(2) for j in range(5)}
    r = paired_compare(a, b, {key: key[0] for key in a})
    assert (r.n_paired, r.n_clusters, r.permutations, r.p_value) == (10, 2, 4, 0.5)
    assert paired_compare(a, b).p_value < 0.01  # treated as 10 independent items


def test_no_overlap_and_single_pair():
    empty = paired_compare({"a": 1.0}, {"b": 1.0})
    assert (empty.difference, empty.p_value, empty.n_paired, empty.only_in_a, empty.only_in_b) == (
        None, None, 0, ("a",), ("b",))
    one = paired_compare({"a": 0.2}, {"a": 0.7})
    assert one.difference == pytest.approx(0.5)
    assert (one.ci_low, one.ci_high, one.p_value) == (None, None, 1.0)


def test_seeded_and_order_independent():
    a, b, clusters = two_runs(effect=-0.05, seed=4, tasks=20)
    r = paired_compare(a, b, clusters, seed=9)
    keys = list(a)
    random.Random(0).shuffle(keys)
    assert paired_compare({k: a[k] for k in keys}, {k: b[k] for k in reversed(keys)}, clusters, seed=9) == r


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"a": {"x": 1.0}, "b": {"x": 1.0}, "clusters": {}}, "clusters has no entry for 1 paired ids: 'x'"),
        ({"a": {"x": float("nan")}, "b": {"x": 1.0}}, "a['x'] must be a finite number or None, got nan"),
        ({"a": {}, "b": {}, "level": 2}, "level must be in (0, 1), got 2"),
        ({"a": {}, "b": {}, "n_perm": 0}, "n_perm must be an integer >= 1, got 0"),
    ],
    ids=["cluster-missing", "nan", "level", "n_perm"],
)
def test_bad_arguments(kwargs, fragment):
    with pytest.raises(ValueError) as info:
        paired_compare(**kwargs)
    assert fragment in str(info.value)


def test_holm_hand_computed():
    # Sorted: d .005 x4 = .02; a .01 x3 = .03; c .03 x2 = .06; b .04 x1 = .04 -> running max .06.
    adjusted = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005})
    assert list(adjusted) == ["a", "b", "c", "d"]
    assert adjusted == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06, "d": 0.02})


def test_holm_caps_at_one_and_handles_empty():
    assert holm({"a": 0.6, "b": 0.7}) == {"a": 1.0, "b": 1.0}
    assert holm({}) == {}
    with pytest.raises(ValueError, match=r"p-value 'a' must be in \[0, 1\], got 1.2"):
        holm({"a": 1.2})


@given(st.dictionaries(st.text(max_size=3), st.floats(0, 1), max_size=12))
def test_holm_is_monotone_and_never_below_raw(pvalues):
    adjusted = holm(pvalues)
    assert adjusted.keys() == pvalues.keys()
    order = sorted(pvalues, key=pvalues.__getitem__)
    for key in pvalues:
        assert pvalues[key] <= adjusted[key] <= 1.0
    assert [adjusted[k] for k in order] == sorted(adjusted[k] for k in order)


def test_smallest_achievable_p_value():
    from assay.stats import min_p_value

    assert min_p_value(2) == 0.5 and min_p_value(5) == 2 / 32
    assert min_p_value(20, n_perm=10000) == 1 / 10001  # Monte Carlo past 2**G > n_perm
    r = paired_compare({"a": 0.0, "b": 0.0}, {"a": 1.0, "b": 1.0})
    assert r.p_value == r.min_p_value == 0.5  # the largest possible effect, and still p = 0.5
