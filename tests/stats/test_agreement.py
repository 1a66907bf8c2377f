"""Kappa, Krippendorff's alpha and the Rogan-Gladen correction against hand-worked values."""

from __future__ import annotations

import pytest

from assay.stats import cohen_kappa, confusion_matrix, corrected_pass_rate, krippendorff_alpha, rogan_gladen


def test_kappa_of_a_2x2_table():
    # po = 35/50 = .7; rows .5 .5, columns .6 .4: pe = .5; kappa = .2 / .5
    assert cohen_kappa([[20, 5], [10, 15]]) == pytest.approx(0.4)


def test_perfect_and_chance_agreement():
    assert cohen_kappa([[5, 0], [0, 5]]) == pytest.approx(1.0)
    assert cohen_kappa([[1, 1], [1, 1]]) == pytest.approx(0.0)
    assert cohen_kappa([[4, 0], [0, 0]]) is None  # one category only: chance agreement is total


def test_weighted_kappa_counts_near_misses_less():
    m = [[3, 1, 0], [1, 1, 1], [0, 0, 3]]
    # unweighted: po .7, pe .34; quadratic on 0, 1, 2: observed .075, expected .375
    assert cohen_kappa(m) == pytest.approx(0.36 / 0.66)
    assert cohen_kappa(m, weights="quadratic") == pytest.approx(0.8)
    # linear, w = |i - j| / 2: observed 3 x .5 / 10 = .15;
    # expected sum r_i c_j w_ij = .4*.2*.5 + .4*.4*1 + .3*.4*.5 + .3*.4*.5 + .3*.4*1 + .3*.2*.5 = .47
    assert cohen_kappa(m, weights="linear") == pytest.approx(1 - 0.15 / 0.47)
    with pytest.raises(ValueError, match="weights must be"):
        cohen_kappa(m, weights="cubic")


def test_confusion_matrix_rows_first_rater():
    assert confusion_matrix(["a", "a", "b"], ["a", "b", "b"], ["a", "b"]) == [[1, 1], [0, 1]]
    with pytest.raises(ValueError, match="'c' is not one of"):
        confusion_matrix(["a"], ["c"], ["a", "b"])


def test_krippendorff_alpha_nominal_and_interval():
    # units (1,1) (2,2) (1,2): D_o = 2/6, pooled 1:3 2:3 -> D_e = 18/30; alpha = 1 - (1/3)/.6
    assert krippendorff_alpha([[1, 1], [2, 2], [1, 2]]) == pytest.approx(1 - (1 / 3) / 0.6)
    # interval, units (1,2) (3,3) with a missing rating in a third unit: D_o = (1+1)/1/4 = .5,
    # pooled 1, 2, 3, 3: pairs (1,2) 1, (1,3) 2 x 4, (2,3) 2 x 1 = 11, both orders 22, over n(n-1) = 12
    assert krippendorff_alpha([[1, 2], [3, 3], [None, 5]], level="interval") == pytest.approx(1 - 0.5 / (22 / 12))
    assert krippendorff_alpha([["a", "a"], ["a", "a"]]) is None  # no variation
    assert krippendorff_alpha([[1], [2]]) is None  # nothing pairable


def test_rogan_gladen_point_estimate():
    # the judge passes 97.5% of truly passing items and fails 75% of truly failing ones:
    # 80% observed is (0.8 + 0.75 - 1) / (0.975 + 0.75 - 1) = 0.55 / 0.725 = 75.9% true
    assert rogan_gladen(0.8, 0.975, 0.75) == pytest.approx(0.55 / 0.725)
    assert rogan_gladen(0.5, 0.5, 0.5) is None and rogan_gladen(0.5, 0.4, 0.5) is None
    assert rogan_gladen(0.1, 0.9, 0.8) == 0.0  # clipped


def test_corrected_pass_rate_on_a_constructed_case():
    # 80 of 100 verdicts pass; card: 39 of 40 human-passed passed (TPR .975), 30 of 40 human-failed failed (TNR .75)
    c = corrected_pass_rate(80, 100, tp=39, fn=1, tn=30, fp=10)
    assert c.raw == 0.8 and c.tpr == 0.975 and c.tnr == 0.75
    assert c.estimate == pytest.approx(0.55 / 0.725)
    assert c.low < c.estimate < c.high
    # the delta method's half-width, sqrt(p(1-p)/n + pi^2 Se(1-Se)/40 + (1-pi)^2 Sp(1-Sp)/40) / J * 1.96,
    # is 0.127; the simulation's interval has about that width (it is skewed: the upper side is longer)
    assert c.high - c.low == pytest.approx(2 * 0.1275, abs=0.04)
    assert corrected_pass_rate(80, 100, tp=39, fn=1, tn=30, fp=10) == c  # seeded: the same every time


def test_a_near_certain_card_leaves_only_the_runs_sampling():
    # with a huge calibration set the interval is the run's own Jeffreys interval pushed through the correction
    c = corrected_pass_rate(80, 100, tp=975_000, fn=25_000, tn=750_000, fp=250_000, draws=200_000)
    from assay.stats import beta_ppf
    lo, hi = (beta_ppf(q, 80.5, 20.5) for q in (0.025, 0.975))
    assert c.low == pytest.approx((lo - 0.25) / 0.725, abs=0.004)
    assert c.high == pytest.approx((hi - 0.25) / 0.725, abs=0.004)
    small = corrected_pass_rate(80, 100, tp=39, fn=1, tn=30, fp=10)
    assert small.high - small.low > c.high - c.low  # a small card widens it


def test_a_judge_no_better_than_chance_is_not_corrected():
    assert corrected_pass_rate(50, 100, tp=5, fn=5, tn=5, fp=5) is None
    assert corrected_pass_rate(50, 100, tp=5, fn=0, tn=0, fp=0) is None  # no human-failed items: TNR unknown
    with pytest.raises(ValueError, match="passed <= n"):
        corrected_pass_rate(5, 4, tp=1, fn=1, tn=1, fp=1)


def test_krippendorff_alpha_ordinal_by_hand():
    # Values 1, 2, 3 with counts 2, 2, 2 over three items: distances from cumulative counts.
    # d(1,2) = (2 + 2 - 2)^2 = 4, d(2,3) = 4, d(1,3) = (6 - 2)^2 = 16.
    units = [[1, 2], [2, 3], [1, 3]]
    observed = (2 * 4 + 2 * 4 + 2 * 16) / 6
    expected = 2 * (2 * 2 * 4 + 2 * 2 * 4 + 2 * 2 * 16) / (6 * 5)
    assert krippendorff_alpha(units, level="ordinal") == pytest.approx(1 - observed / expected)
    with pytest.raises(ValueError, match="comparable"):
        krippendorff_alpha([[1, "a"], [2, 2]], level="ordinal")
    with pytest.raises(ValueError, match="'ordinal'"):
        krippendorff_alpha(units, level="ratio")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_krippendorff_alpha_matches_the_krippendorff_package(level, seed):
    kd = pytest.importorskip("krippendorff")
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, 40)
    data = np.clip(truth + rng.integers(-1, 2, (3, 40)), 1, 5).astype(float)  # 3 raters, a 1-5 scale
    data[rng.random((3, 40)) < 0.15] = np.nan  # some missing ratings
    units = [[None if np.isnan(v) else int(v) for v in data[:, i]] for i in range(40)]
    expected = kd.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(units, level=level) == pytest.approx(expected, abs=1e-12)


def test_corrected_pass_rate_with_clusters_carries_the_task_variance():
    pytest.importorskip("numpy")
    # 8 tasks x 5 trials, every task all-pass or all-fail: 40 verdicts carry the information of 8
    verdicts = [1] * 25 + [0] * 15
    tasks = [t for t in range(8) for _ in range(5)]
    card = dict(tp=95, fn=5, tn=95, fp=5)
    flat = corrected_pass_rate(25, 40, **card)
    clustered = corrected_pass_rate(verdicts, 40, **card, clusters=tasks)
    assert clustered.method == "cluster_jeffreys_simulation" and flat.method == "jeffreys_simulation"
    assert clustered.estimate == pytest.approx(flat.estimate) and clustered.raw == 25 / 40
    assert clustered.high - clustered.low > 1.5 * (flat.high - flat.low)
    # one trial per task: the clusters change little (a t correction for 40 tasks)
    alone = corrected_pass_rate(verdicts, 40, **card, clusters=list(range(40)))
    assert alone.high - alone.low == pytest.approx(flat.high - flat.low, rel=0.1)
    with pytest.raises(ValueError, match="passed must be the sequence of the n verdicts"):
        corrected_pass_rate(25, 40, **card, clusters=tasks)
    with pytest.raises(ValueError, match=r"verdicts\[0\] must be True/False or 1/0, got 0.5"):
        corrected_pass_rate([0.5] + verdicts[1:], 40, **card, clusters=tasks)
    with pytest.raises(ValueError, match="n=41 verdicts expected, got 40 verdicts and 40 cluster ids"):
        corrected_pass_rate(verdicts, 41, **card, clusters=tasks)
