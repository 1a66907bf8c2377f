"""Win rates and Bradley-Terry strengths against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from assay.stats._pairwise import bradley_terry, win_rate

np = pytest.importorskip("numpy")


def games(i: int, j: int, scores: list[float], first_task: int = 0) -> list[tuple[int, int, float, int]]:
    return [(i, j, s, first_task + t) for t, s in enumerate(scores)]


def _score_equations(theta, wins, penalty=0.25):
    """The penalised log-likelihood's gradient, written out: W_i - sum_j n_ij sigma(t_i - t_j) - penalty t_i."""
    k = len(theta)
    out = []
    for i in range(k):
        g = sum(wins[i][j] for j in range(k)) - penalty * theta[i]
        for j in range(k):
            n_ij = wins[i][j] + wins[j][i]
            g -= n_ij / (1 + math.exp(theta[j] - theta[i]))
        out.append(g)
    return out


def test_two_players_strength_gap_solves_the_stated_prior_score_equation():
    # 7 wins, 1 tie, 2 losses: 7.5 of 10 points. Without a prior the gap is the log-odds ln 3; with
    # the N(0, 2^2) prior, theta_A = -theta_B = d / 2 solves 7.5 - 10 sigma(d) - 0.25 d / 2 = 0.
    s = bradley_terry(["A", "B"], games(0, 1, [1.0] * 7 + [0.5] + [0.0] * 2), n_boot=200)
    lo, hi = 0.0, 2.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 7.5 - 10 / (1 + math.exp(-mid)) - 0.125 * mid > 0 else (lo, mid)
    assert s.theta[0] - s.theta[1] == pytest.approx(lo, abs=1e-8) and 0.9 * math.log(3) < lo < math.log(3)
    assert s.theta[0] == pytest.approx(-s.theta[1])  # centred on 0
    assert s.prior == 0.25


def test_three_players_fit_solves_the_score_equations_and_the_mle_without_the_prior():
    # strengths 2 : 1 : 1 reproduce these records exactly (A-B 4-2, B-C 3-3, A-C 4-2 on six tasks),
    # so the MLE is theta = ln(2, 1, 1) - mean = (2/3, -1/3, -1/3) ln 2; the prior shrinks it a little
    from assay.stats._pairwise import fit_bt

    ab, bc, ac = [1, 1, 1, 1, 0, 0], [1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0]
    comps = games(0, 1, ab) + games(1, 2, bc) + games(0, 2, ac)
    s = bradley_terry(["A", "B", "C"], comps, n_boot=300, seed=3)
    wins = [[0, 4, 4], [2, 0, 3], [2, 3, 0]]
    assert _score_equations(s.theta, wins) == pytest.approx([0, 0, 0], abs=1e-8)
    ln2 = math.log(2)
    assert 0 < s.theta[0] < 2 / 3 * ln2 and s.theta[1] == pytest.approx(s.theta[2], abs=1e-10)
    mle = fit_bt(np, np.array(wins, dtype=float), penalty=1e-12)[0]  # a vanishing prior: the MLE
    assert (mle - mle.mean()).tolist() == pytest.approx((2 / 3 * ln2, -1 / 3 * ln2, -1 / 3 * ln2), abs=1e-6)
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


def test_a_player_that_never_loses_gets_the_same_stated_prior_as_everyone():
    comparisons = [(0, 1, 1.0, t) for t in range(5)] + [(1, 2, 1.0, t) for t in range(5)] + [(2, 1, 1.0, 9)]
    s = bradley_terry(["A", "B", "C"], comparisons, n_boot=50)
    assert s.converged and s.iterations < 50 and s.prior == 0.25
    assert all(math.isfinite(t) for t in s.theta) and s.theta[0] > s.theta[1] > s.theta[2]
    assert _score_equations(s.theta, [[0, 5, 0], [0, 0, 5], [0, 1, 0]]) == pytest.approx([0, 0, 0], abs=1e-8)
    optimize = pytest.importorskip("scipy.optimize")
    wins = {(0, 1): 5, (1, 2): 5, (2, 1): 1}

    def neg_posterior(theta):
        return (-sum(w * (theta[i] - math.log(math.exp(theta[i]) + math.exp(theta[j]))) for (i, j), w in wins.items())
                + 0.125 * sum(t * t for t in theta))

    ref = optimize.minimize(neg_posterior, [0.0, 0.0, 0.0], method="BFGS", options={"gtol": 1e-10}).x
    assert s.theta == pytest.approx(list(ref), abs=1e-6)


@pytest.mark.parametrize("seed", range(40))
def test_a_loss_never_raises_a_rating(seed):
    """Property: add one loss for player i against anyone: i's rating never goes up, the winner's
    never goes down - whether i was unbeaten before or not (no switch to jump at)."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 7))
    comps = [(int(i), int(j), float(rng.choice([0.0, 0.5, 1.0])), t)
             for t in range(int(rng.integers(1, 12)))
             for i, j in [rng.choice(k, 2, replace=False)]]
    comps += [(i, i + 1, 1.0, f"link{i}") for i in range(k - 1)]  # connected; player 0 possibly unbeaten
    names = [f"p{i}" for i in range(k)]
    before = bradley_terry(names, comps, n_boot=1)
    for i, j in [(0, 1), (int(rng.integers(k)), int(rng.integers(k)))]:
        if i == j:
            continue
        after = bradley_terry(names, comps + [(i, j, 0.0, "extra")], n_boot=1)
        assert after.theta[i] <= before.theta[i] + 1e-9
        assert after.theta[j] >= before.theta[j] - 1e-9


def test_one_loss_lowers_an_unbeaten_leader():
    """The old switch: 3.04 logits unbeaten, 3.32 after a loss. Now a loss lowers the leader."""
    comps = [(0, 1, 1.0, t) for t in range(6)] + [(1, 2, 1.0, t) for t in range(3)] + [(2, 1, 1.0, 7)]
    unbeaten = bradley_terry(["A", "B", "C"], comps, n_boot=1)
    lost_once = bradley_terry(["A", "B", "C"], comps + [(0, 1, 0.0, 8)], n_boot=1)
    assert lost_once.theta[0] < unbeaten.theta[0]
    assert lost_once.theta[0] - lost_once.theta[1] < unbeaten.theta[0] - unbeaten.theta[1]


