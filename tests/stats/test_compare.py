"""Paired comparison between runs and Holm's adjustment."""

import math
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
    assert (r.sign_flip_p, r.permutations, r.exact) == (0.25, 8, True)


def test_clusters_are_the_unit_of_resampling():
    # Two tasks with five trials each: only 4 sign patterns exist, whatever the trial count.
    a = {(t, j): 0.0 for t in range(2) for j in range(5)}
    b = {(t, j): 1.0 for t in range(2) for j in range(5)}
    r = paired_compare(a, b, {key: key[0] for key in a})
    assert (r.n_paired, r.n_clusters, r.permutations, r.sign_flip_p) == (10, 2, 4, 0.5)
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
    assert min_p_value(32, n_perm=10000) == 2 / 2**32  # counted: 2**32 patterns meet in the middle
    assert min_p_value(40, n_perm=10000) == 1 / 10001  # random flips (unless the data sit on a grid)
    assert min_p_value(40, exact=True) == 2 / 2**40
    r = paired_compare({"a": 0.0, "b": 0.0}, {"a": 1.0, "b": 1.0})
    assert r.sign_flip_p == r.min_p_value == 0.5  # the largest possible effect, and still p = 0.5


def _flips(diffs, seed=0):
    """paired_compare of b - a = diffs, one id per cluster."""
    return paired_compare(dict.fromkeys(range(len(diffs)), 0.0), dict(enumerate(diffs)), seed=seed)


@pytest.mark.parametrize(("wins", "losses", "ties"), [(20, 0, 0), (15, 5, 0), (13, 0, 10), (30, 18, 4),
                                                      (60, 40, 7), (500, 450, 50), (3, 3, 30)],
                         ids=lambda v: str(v))
def test_sign_test_is_exact_beyond_13_tasks_and_ties_do_not_count(wins, losses, ties):
    diffs = [0.5] * wins + [-0.5] * losses + [0.0] * ties
    r = _flips(diffs)
    assert r.exact
    total = wins + losses
    expected = min(1.0, 2 * sum(math.comb(total, j) for j in range(max(wins, losses), total + 1)) / 2**total)
    assert r.sign_flip_p == pytest.approx(expected, rel=1e-10)
    scipy_stats = pytest.importorskip("scipy.stats")
    assert r.sign_flip_p == pytest.approx(scipy_stats.binomtest(wins, total, 0.5).pvalue, rel=1e-10)


def test_twenty_wins_of_twenty_is_not_floored_at_1e_4():
    r = _flips([1.0] * 20)
    assert r.sign_flip_p == pytest.approx(2 / 2**20, rel=1e-12)  # 1.9e-6, where random flips gave 1e-4
    assert r.min_p_value == r.sign_flip_p


def test_ties_do_not_push_the_test_into_random_flips():
    r = _flips([0.3, 0.1, 0.2, 0.4, 0.5, 0.25, 0.35, 0.15] + [0.0] * 40)  # 8 decisive of 48 clusters
    assert r.exact and r.permutations == 2**8
    assert r.sign_flip_p == pytest.approx(2 / 2**8)


def _exact_by_polynomial(values):
    """The exact two-sided p-value from the generating function of the total, in integers."""
    dist = {0: 1}
    for v in values:
        new = {}
        for total, count in dist.items():
            for step in (v, -v):
                new[total + step] = new.get(total + step, 0) + count
        dist = new
    observed = abs(sum(values))
    return sum(c for t, c in dist.items() if abs(t) >= observed) / 2 ** len(values)


@pytest.mark.parametrize("seed", range(4))
def test_exact_distribution_on_a_grid_beyond_enumeration(seed):
    rng = random.Random(seed)
    values = [rng.choice([1, 2, 3, -1, -2, 4]) for _ in range(40)]  # 40 tasks x up to 4 trials, sums in halves
    r = _flips([v / 2 for v in values])
    assert r.exact and r.permutations == 2**40
    assert r.sign_flip_p == pytest.approx(_exact_by_polynomial(values), rel=1e-9)


def test_scores_in_tenths_are_on_a_grid_too():
    values = [7, -3, 5, 2, 9, 1, -4, 6, 3, 8, 2, 5, -1, 4, 6, 7, 3, 2, 5, 1, 4, 3, 2, -2, 6]
    r = _flips([v / 10 for v in values])
    assert r.exact
    assert r.sign_flip_p == pytest.approx(_exact_by_polynomial(values), rel=1e-9)


def test_random_flips_only_beyond_and_their_floor_is_stated():
    rng = random.Random(5)
    diffs = [rng.gauss(0.3, 1.0) * math.pi for _ in range(40)]
    r = _flips(diffs)
    assert not r.exact and r.permutations == 10_000
    assert r.min_p_value == 1 / 10_001 and r.sign_flip_p >= r.min_p_value


@pytest.mark.parametrize("seed", range(3))
def test_enumeration_matches_scipy_permutation_test(seed):
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(seed)
    diffs = [rng.gauss(0.2, 1.0) for _ in range(15)]
    r = _flips(diffs)
    ref = scipy_stats.permutation_test((np.asarray(diffs),), np.sum, permutation_type="samples",
                                       n_resamples=2**15, alternative="two-sided")
    assert r.exact and r.sign_flip_p == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("g", [1, 2, 5, 9, 12])
def test_meeting_in_the_middle_counts_every_pattern(g):
    rng = random.Random(g)
    diffs = [rng.gauss(0.1, 1.0) for _ in range(g)] + [0.0]  # and a tie, which does not count
    brute = 0
    for code in range(2**g):
        total = sum(d if code >> j & 1 else -d for j, d in enumerate(diffs[:g]))
        brute += abs(total) >= abs(sum(diffs)) - 1e-12
    r = _flips(diffs)
    assert r.exact and r.sign_flip_p == pytest.approx(brute / 2**g, abs=1e-15)


def test_thirty_clusters_of_real_numbers_are_exact():
    rng = random.Random(3)
    diffs = [rng.gauss(0.4, 1.0) for _ in range(30)]
    r = _flips(diffs)
    assert r.exact and r.permutations == 2**30 and r.min_p_value == 2 / 2**30
    scipy_stats = pytest.importorskip("scipy.stats")  # its random flips: within Monte Carlo error
    ref = scipy_stats.permutation_test((np.asarray(diffs),), np.sum, permutation_type="samples",
                                       n_resamples=200_000, alternative="two-sided", rng=1)
    assert r.sign_flip_p == pytest.approx(ref.pvalue, abs=4 * math.sqrt(ref.pvalue / 200_000) + 1e-5)


# -- one method family: cluster-t interval and p-value ----------------------------------------------

def test_cluster_t_by_hand():
    # three tasks with two trials each; per-task sums of b - a: 0.4, 0.2, 0.0 over n = 6 trials
    a = {(t, j): 0.5 for t in range(3) for j in range(2)}
    b = {(0, 0): 0.7, (0, 1): 0.7, (1, 0): 0.6, (1, 1): 0.6, (2, 0): 0.5, (2, 1): 0.5}
    r = paired_compare(a, b, {k: k[0] for k in a})
    mean = 0.6 / 6
    resid = [0.4 - 2 * mean, 0.2 - 2 * mean, 0.0 - 2 * mean]
    se = math.sqrt(3 / 2 * sum(x * x for x in resid)) / 6
    from assay.stats import t_ppf

    half = t_ppf(0.975, 2) * se
    assert r.method == "cluster_t" and r.difference == pytest.approx(mean)
    assert (r.ci_low, r.ci_high) == pytest.approx((mean - half, mean + half), abs=1e-12)
    # t = mean / se on 2 df: p = I_{2 / (2 + t^2)}(1, 1/2) = 1 - sqrt(1 - x) ... closed form for 2 df
    t = mean / se
    from assay.stats._intervals import t_two_sided_p

    assert t_two_sided_p(t, 2) == pytest.approx(1 - t / math.sqrt(2 + t * t), rel=1e-10)  # t_2 in closed form
    assert 1 - t / math.sqrt(2 + t * t) < 0.25
    # ... but no test on 3 tasks can go below 2 / 2**3: the reported p is that floor
    assert r.p_value == r.min_p_value == 0.25
    assert r.sign_flip_p == 0.5  # 2 non-zero task sums: 4 patterns, 2 as extreme


def test_t_p_value_is_the_inverse_of_the_t_quantile():
    from assay.stats import t_ppf
    from assay.stats._intervals import t_two_sided_p

    for df in (1, 2, 4, 7, 19, 49, 300):
        for q in (0.9, 0.975, 0.995):
            assert t_two_sided_p(t_ppf(q, df), df) == pytest.approx(2 * (1 - q), rel=1e-9)
    scipy_stats = pytest.importorskip("scipy.stats")
    for t, df in ((2.1, 3), (0.3, 10), (5.0, 1), (-2.0, 7)):
        assert t_two_sided_p(t, df) == pytest.approx(2 * scipy_stats.t.sf(abs(t), df), rel=1e-10)


@pytest.mark.parametrize("seed", range(25))
def test_interval_and_p_value_never_contradict(seed):
    rng = np.random.default_rng(seed)
    tasks = int(rng.integers(6, 60))
    trials = int(rng.integers(1, 5))
    ids = [(t, j) for t in range(tasks) for j in range(trials)]
    shift = float(rng.choice([0.0, 0.1, 0.3]))
    q = rng.beta(1, 1, tasks)
    a = {i: float(rng.random() < q[i[0]]) for i in ids}
    b = {i: float(rng.random() < min(1.0, q[i[0]] + shift)) for i in ids}
    r = paired_compare(a, b, {i: i[0] for i in ids})
    assert r.min_p_value < 0.05  # 6 tasks or more: the floor does not decide
    excludes = r.ci_low > 0 or r.ci_high < 0
    assert excludes == (r.p_value < 0.05), (r.ci_low, r.ci_high, r.p_value)


def test_the_issue_case_agrees_with_itself():
    # 4 of 20 tasks improved, 16 unchanged: the bootstrap said [0.05, 0.40] beside a sign-flip p of 0.125
    a = dict.fromkeys(range(20), 0.0)
    b = {i: 1.0 if i < 4 else 0.0 for i in range(20)}
    old = paired_compare(a, b, method="bootstrap")
    assert old.ci_low > 0 and old.p_value == pytest.approx(0.125)  # the contradiction
    new = paired_compare(a, b)
    assert (new.ci_low > 0) == (new.p_value < 0.05) and new.sign_flip_p == pytest.approx(0.125)


def test_null_comparisons_exclude_zero_about_five_percent_of_the_time():
    # the same agent twice, 8 tasks x 5 trials of 0/1 outcomes: the previous bootstrap excluded 0 in
    # 9-11% of such runs; the cluster-t interval (and its test) in 5% (600 runs: 3 SE is 0.027)
    rng = np.random.default_rng(4)
    ids = [(t, j) for t in range(8) for j in range(5)]
    clusters = {i: i[0] for i in ids}
    hits = 0
    for _ in range(600):
        q = rng.beta(1, 1, 8)
        a = {i: float(rng.random() < q[i[0]]) for i in ids}
        b = {i: float(rng.random() < q[i[0]]) for i in ids}
        r = paired_compare(a, b, clusters, n_perm=200)
        hits += r.ci_low > 0 or r.ci_high < 0
    assert hits / 600 <= 0.05 + 0.027


def test_no_spread_and_the_design_floor():
    # every task improved by exactly 0.2: zero standard error; p is the design's floor, 2 / 2**G
    a = {(t, j): 0.0 for t in range(4) for j in range(5)}
    b = {(t, j): 1.0 if j == 0 else 0.0 for t in range(4) for j in range(5)}
    r = paired_compare(a, b, {k: k[0] for k in a})
    assert (r.ci_low, r.ci_high) == pytest.approx((0.2, 0.2)) and r.p_value == r.min_p_value == 2 / 16
    same = paired_compare(a, a, {k: k[0] for k in a})
    assert (same.ci_low, same.ci_high, same.p_value) == (0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="method must be one of cluster_t, bootstrap"):
        paired_compare(a, b, method="bca")


def test_a_total_of_zero_is_exact_at_any_cluster_count():
    # 40 wins and 40 losses over 80 tasks: p = 1 exactly (it was 'random flips' beyond 62 tasks)
    from assay.stats import win_rate

    r = paired_compare(dict.fromkeys(range(80), 0.0), {i: 0.5 if i < 40 else -0.5 for i in range(80)})
    assert (r.sign_flip_p, r.exact) == (1.0, True)
    w = win_rate([1.0] * 40 + [0.0] * 40)
    assert (w.p_value, w.exact) == (1.0, True)
