"""Win rates and Bradley-Terry strengths against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from assay.stats._pairwise import bradley_terry, win_rate


def games(i: int, j: int, scores: list[float], first_task: int = 0) -> list[tuple[int, int, float, int]]:
    return [(i, j, s, first_task + t) for t, s in enumerate(scores)]


def test_two_players_strength_gap_is_the_log_odds():
    # 7 wins, 1 tie, 2 losses: 7.5 of 10 points, so p_A / p_B = 7.5 / 2.5 = 3
    s = bradley_terry(["A", "B"], games(0, 1, [1.0] * 7 + [0.5] + [0.0] * 2), n_boot=200)
    assert s.theta[0] - s.theta[1] == pytest.approx(math.log(3), abs=1e-8)
    assert s.theta[0] == pytest.approx(-s.theta[1])  # centred on 0
    assert s.win_probability(0, 1) == pytest.approx(0.75, abs=1e-9)


def test_three_players_exact_fit():
    # strengths 2 : 1 : 1 reproduce these records exactly (A-B 4-2, B-C 3-3, A-C 4-2 on six tasks),
    # so the MLE is theta = ln(2, 1, 1) - mean = (2/3, -1/3, -1/3) ln 2
    ab, bc, ac = [1, 1, 1, 1, 0, 0], [1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0]
    comps = games(0, 1, ab) + games(1, 2, bc) + games(0, 2, ac)
    s = bradley_terry(["A", "B", "C"], comps, n_boot=300, seed=3)
    ln2 = math.log(2)
    assert s.theta == pytest.approx((2 / 3 * ln2, -1 / 3 * ln2, -1 / 3 * ln2), abs=1e-8)
    assert s.converged and s.n_tasks == 6
    for lo, t, hi in zip(s.ci_low, s.theta, s.ci_high):
        assert lo <= t <= hi
    again = bradley_terry(["A", "B", "C"], list(reversed(comps)), n_boot=300, seed=3)
    assert again == s  # seeded, and independent of the order comparisons are listed in


def test_unbeaten_player_stays_finite_and_ranks_first():
    comps = games(0, 1, [1.0] * 5) + games(1, 2, [1.0, 1.0, 0.0])
    s = bradley_terry(["A", "B", "C"], comps, n_boot=50)
    assert all(math.isfinite(t) for t in s.theta)
    assert s.theta[0] > s.theta[1] > s.theta[2]


def test_disconnected_players_are_refused():
    with pytest.raises(ValueError, match="C, D never met the others"):
        bradley_terry(["A", "B", "C", "D"], games(0, 1, [1.0, 0.0]) + games(2, 3, [1.0]))


def test_win_rate_with_ties_and_bad_scores():
    w = win_rate([1.0, 1.0, 0.5, 0.0])
    assert (w.wins, w.ties, w.losses, w.rate) == (2, 1, 1, 0.625)
    assert w.ci_low < 0.625 < w.ci_high
    # decisive pairs 2 vs 1: two-sided sign test p = 2 * P(X >= 2 | n = 3) = 2 * 4/8 = 1
    assert w.p_value == pytest.approx(1.0)
    with pytest.raises(ValueError, match="1 \\(win\\), 0.5 \\(tie\\) or 0"):
        win_rate([0.7])
    assert win_rate([]).rate is None


def test_a_player_that_never_loses_gets_the_stated_prior_not_10000_iterations():
    comparisons = [(0, 1, 1.0, t) for t in range(5)] + [(1, 2, 1.0, t) for t in range(5)] + [(2, 1, 1.0, 9)]
    s = bradley_terry(["A", "B", "C"], comparisons, n_boot=50)
    assert s.converged and s.iterations < 1000 and s.prior == 0.5
    assert all(math.isfinite(t) for t in s.theta) and s.theta[0] > s.theta[1] > s.theta[2]
    # the fit is the MLE of the data plus one virtual tie per pair that met (A-B and B-C)
    optimize = pytest.importorskip("scipy.optimize")
    wins = {(0, 1): 5.5, (1, 0): 0.5, (1, 2): 5.5, (2, 1): 1.5}

    def nll(free):
        theta = [free[0], free[1], -free[0] - free[1]]
        return -sum(w * (theta[i] - math.log(math.exp(theta[i]) + math.exp(theta[j]))) for (i, j), w in wins.items())

    ref = optimize.minimize(nll, [0.0, 0.0], method="BFGS", options={"gtol": 1e-10}).x
    assert s.theta == pytest.approx([ref[0], ref[1], -ref[0] - ref[1]], abs=1e-6)
    exact = bradley_terry(["A", "B", "C"], [(0, 1, 1.0, 0), (1, 0, 1.0, 1), (1, 2, 1.0, 2), (2, 1, 1.0, 3),
                                            (0, 2, 1.0, 4), (2, 0, 1.0, 5)], n_boot=10)
    assert exact.prior == 0.0  # everyone won and lost: the plain MLE
