"""Anytime-valid comparisons: the betting confidence sequence and the sign e-process."""

from __future__ import annotations

import math

import pytest

from assay.stats import SequentialComparison, SequentialMean, SignEProcess
from assay.stats._sequential import bet_step, log_hedged, plugin_bets

np = pytest.importorskip("numpy")


def _null_false_alarms(reps: int, n: int, look_every: int, seed: int, alpha: float = 0.05) -> float:
    """Share of null sequences (task differences -1/0/+1, mean 0) whose 0 is ever rejected at a look.

    Runs the module's own bet_step / plugin_bets / log_hedged on the null candidate, vectorised
    over replications (the class runs the same functions over a grid)."""
    rng = np.random.default_rng(seed)
    x = (rng.choice([-1.0, 0.0, 0.0, 1.0], size=(reps, n)) + 1.0) / 2.0
    lp, lm = np.zeros(reps), np.zeros(reps)
    mu, ss = np.full(reps, 0.5), np.full(reps, 0.25)
    alarmed = np.zeros(reps, dtype=bool)
    for i in range(n):
        t = i + 1
        lam = plugin_bets(np, ss / t, t, alpha)
        lp, lm = bet_step(np, lp, lm, x[:, i], 0.5, lam)
        mu = (mu * t + x[:, i]) / (t + 1)
        ss = ss + (x[:, i] - mu) ** 2
        if t % look_every == 0:
            alarmed |= log_hedged(np, lp, lm) >= math.log(1 / alpha)
    return float(alarmed.mean())


def test_false_alarms_stay_below_alpha_over_100_looks():
    # 4,000 null sequences looked at after every task up to 100: the one-look t test would alarm
    # at ~5% per look, and repeated looks at that test reach far more; Ville's bound is 5%.
    rate = _null_false_alarms(4000, 100, 1, seed=7)
    se = math.sqrt(0.05 * 0.95 / 4000)
    assert rate <= 0.05 + 2 * se, rate


def test_the_class_matches_the_vectorised_core():
    # The null candidate of the class's grid is rejected exactly when the vectorised core says so.
    rng = np.random.default_rng(3)
    for _ in range(30):
        diffs = rng.choice([-1.0, 0.0, 1.0], p=[0.2, 0.4, 0.4], size=60)
        seq = SequentialComparison(alpha=0.05).update(diffs.tolist())
        lp = lm = np.zeros(1)
        ss, mu, rejected = 0.25, 0.5, False
        for i, d in enumerate(diffs):
            t, x = i + 1, (d + 1) / 2
            lp, lm = bet_step(np, lp, lm, x, 0.5, plugin_bets(np, ss / t, t, 0.05))
            mu = (mu * t + x) / (t + 1)
            ss += (x - mu) ** 2
            rejected |= bool(log_hedged(np, lp, lm)[0] >= math.log(20))
        assert (seq.decision != "continue") == rejected
        if seq.decision != "continue":
            assert (seq.decision == "B better") == (seq.low > 0)


def test_a_clear_improvement_is_found_and_the_sequence_covers_the_truth():
    rng = np.random.default_rng(11)
    diffs = rng.choice([-1.0, 0.0, 1.0], p=[0.1, 0.5, 0.4], size=400)  # true mean 0.3
    seq = SequentialComparison()
    for start in range(0, 400, 10):
        seq.update(diffs[start:start + 10].tolist())
    assert seq.decision == "B better" and seq.decided_at is not None and seq.decided_at < 200
    assert seq.low <= 0.3 <= seq.high and seq.low > 0
    # wider than the fixed-n t interval of the same data, but within a small factor of it
    half_t = 1.96 * float(np.std(diffs, ddof=1)) / math.sqrt(400)
    assert 1.0 < (seq.high - seq.low) / (2 * half_t) < 2.5


def test_a_regression_reads_a_better_and_batches_do_not_matter():
    rng = np.random.default_rng(5)
    diffs = rng.choice([-1.0, -0.5, 0.0, 0.5], size=300).tolist()  # mean -0.25
    one = SequentialComparison().update(diffs)
    many = SequentialComparison()
    for d in diffs:
        many.update([d])
    assert one.decision == many.decision == "A better"
    assert (one.low, one.high, one.decided_at) == (many.low, many.high, many.decided_at)
    assert one.high < 0


def test_state_round_trips_and_continues():
    rng = np.random.default_rng(2)
    diffs = rng.uniform(-1, 1, 80).tolist()
    whole = SequentialComparison(alpha=0.1).update(diffs)
    part = SequentialComparison(alpha=0.1).update(diffs[:30])
    resumed = SequentialComparison.from_dict(part.to_dict()).update(diffs[30:])
    assert (resumed.low, resumed.high, resumed.decision, resumed.n) == (whole.low, whole.high, whole.decision, 80)
    assert resumed.values == tuple(diffs)


def test_bounds_and_bad_input():
    seq = SequentialMean(lower=0.0, upper=10.0)
    assert (seq.low, seq.high, seq.mean, seq.decision) == (None, None, None, "continue")
    seq.update([4.0, 6.0])
    assert 0.0 <= seq.low < 5.0 < seq.high <= 10.0  # two values can show nothing
    with pytest.raises(ValueError, match=r"values\[1\] must be a number in \[0, 10\]"):
        seq.update([1.0, 11.0])
    with pytest.raises(ValueError, match=r"values\[0\]"):
        seq.update([float("nan")])
    with pytest.raises(ValueError, match="alpha"):
        SequentialMean(alpha=1.5)
    with pytest.raises(ValueError, match="null"):
        SequentialMean(null=1.0)
    with pytest.raises(ValueError, match="not a saved state"):
        SequentialComparison.from_dict({"alpha": 0.05})


def test_sign_e_process_matches_its_closed_form_and_decides_once():
    e = SignEProcess(alpha=0.05)
    e.update(40, 40)
    # 2^80 B(40.5, 40.5) / B(1/2, 1/2), by a direct product of KT predictive probabilities
    direct, w, l = 1.0, 0, 0
    for outcome in [1, 0] * 40:
        p_win = (w + 0.5) / (w + l + 1)
        direct *= 2 * (p_win if outcome else 1 - p_win)
        w, l = w + outcome, l + 1 - outcome
    assert e.e_value == pytest.approx(direct, rel=1e-9)
    assert e.decision == "continue"
    e.update(wins=60)
    assert e.decision == "wins" and e.decided_at == 140 and e.e_value >= 20
    e.update(losses=500)
    assert e.decision == "wins"  # decided once, at the first crossing
    with pytest.raises(ValueError, match="wins must be an integer"):
        e.update(wins=-1)


def test_sign_e_process_false_alarms_over_100_looks():
    rng = np.random.default_rng(9)
    reps, alarms = 3000, 0
    outcomes = rng.integers(0, 2, size=(reps, 100))
    wins = np.cumsum(outcomes, axis=1)
    n = np.arange(1, 101)
    for r in range(reps):
        if any(SignEProcess.log_e(int(w), int(k - w)) >= math.log(20) for w, k in zip(wins[r], n)):
            alarms += 1
    assert alarms / reps <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / reps)
