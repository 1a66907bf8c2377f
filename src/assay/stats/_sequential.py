"""Anytime-valid comparisons: look after every batch of tasks, stop when the difference is clear.

A fixed-n test rerun as tasks accrue, stopping at the first "significant", raises its false-alarm
rate with every look (3% for one look, 7.6% by 100 tasks looked at every 10, 24% by 1,000). A
*confidence sequence* holds at every n at once: P(the true mean ever leaves it) <= alpha, however
often one looks and whenever one stops. Two are here:

* ``SequentialMean`` (and ``SequentialComparison``, its task-difference form): the betting
  confidence sequence of Waudby-Smith and Ramdas (2023, JRSS-B, "Estimating means of bounded
  random variables by betting"), hedged capital with the predictable plug-in bets. For values
  mapped into [0, 1] and each candidate mean m, two gamblers bet that the mean is above / below m:
  K+_t(m) = prod (1 + l+_i (x_i - m)), K-_t(m) = prod (1 - l-_i (x_i - m)), with
  l_i = sqrt(2 log(2 / alpha) / (s2_{i-1} i log(1 + i))) truncated to c / m (resp. c / (1 - m)),
  c = 1/2, s2 the running variance estimate (started at 1/4). Under mean m, (K+ + K-) / 2 is a
  nonnegative martingale starting at 1, so by Ville's inequality it reaches 1 / alpha with
  probability <= alpha: the set {m : (K+_t + K-_t) / 2 < 1 / alpha} is a (1 - alpha) confidence
  sequence. It is computed on a grid of candidate means and intersected over time.
* ``SignEProcess``: for win/loss counts (ties carry no sign), the Krichevsky-Trofimov mixture
  e-process E_n = 2^n B(w + 1/2, l + 1/2) / B(1/2, 1/2) against P(win) = 1/2, a mixture of
  likelihood ratios over a Jeffreys prior: a nonnegative martingale under the null, so
  P(sup_n E_n >= 1 / alpha) <= alpha.

The assumption: observations arrive in random order (tasks exchangeable, e.g. drawn or shuffled
before they are run). A suite run easy-tasks-first breaks it and can mislead either way. The
price: at the same n a confidence sequence is wider than the fixed-n t interval, about 2x at 50
observations and 1.5-1.6x at 200-1,000 (``benchmarks/stats_round4.py``), the cost of being allowed to look at every n.

Small API, meant for online use too::

    seq = SequentialComparison(alpha=0.05)   # differences b - a in [-1, 1]
    seq.update([0.2, 0.0, -0.4])            # any batch size, any number of calls
    seq.decision                             # "continue", "B better" or "A better"
    seq.low, seq.high                        # the confidence sequence for the mean difference now
    state = seq.to_dict(); SequentialComparison.from_dict(state)   # JSON-safe, replayed exactly
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from assay.stats._np import require_numpy

GRID = 2000
"""Candidate means per unit of the [0, 1] scale (the bounds are rounded outwards to this grid)."""
BET_CAP = 0.5
"""c: a bet never stakes more than c / m (c / (1 - m)) of the capital, so no outcome ruins it."""
CONTINUE, ABOVE, BELOW = "continue", "above", "below"


def plugin_bets(np: Any, var_prev: Any, t: Any, alpha: float) -> Any:
    """The predictable plug-in bet l_t = sqrt(2 log(2 / alpha) / (s2_{t-1} t log(1 + t))), untruncated."""
    return np.sqrt(2.0 * math.log(2.0 / alpha) / (var_prev * t * np.log1p(t)))


def bet_step(np: Any, log_plus: Any, log_minus: Any, x: Any, m: Any, lam: Any) -> tuple[Any, Any]:
    """One observation *x* in [0, 1] against candidate mean(s) *m*: the two gamblers' log capital.

    Arrays broadcast (a grid of m, or replications of x), so the benchmark's simulation runs this
    very function."""
    up = np.minimum(lam, BET_CAP / m)
    down = np.minimum(lam, BET_CAP / (1.0 - m))
    return log_plus + np.log1p(up * (x - m)), log_minus + np.log1p(-down * (x - m))


def log_hedged(np: Any, log_plus: Any, log_minus: Any) -> Any:
    """log of (K+ + K-) / 2, the hedged capital compared with log(1 / alpha)."""
    return np.logaddexp(log_plus, log_minus) - math.log(2.0)


class SequentialMean:
    """A (1 - alpha) betting confidence sequence for the mean of values in [lower, upper].

    ``update(values)`` adds observations in the order given; ``low``/``high`` are the running
    intersection of the sequence (None before the first value), and ``decision`` says where it lies
    against ``null``: "above", "below" or "continue". Once it leaves "continue" it stays (the
    intersection only shrinks); ``decided_at`` is the n at which it did.
    """

    def __init__(self, alpha: float = 0.05, lower: float = 0.0, upper: float = 1.0, null: float | None = None,
                 grid: int = GRID) -> None:
        if not (0.0 < alpha < 1.0):
            raise ValueError(f"SequentialMean: alpha must be in (0, 1), got {alpha!r}")
        if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
            raise ValueError(f"SequentialMean: need finite lower < upper, got {lower!r}, {upper!r}")
        if null is None:
            null = (lower + upper) / 2.0
        if not (lower < null < upper):
            raise ValueError(f"SequentialMean: null must lie strictly inside ({lower}, {upper}), got {null!r}")
        if isinstance(grid, bool) or not isinstance(grid, int) or grid < 10:
            raise ValueError(f"SequentialMean: grid must be an integer >= 10, got {grid!r}")
        np = require_numpy("SequentialMean")
        self.alpha, self.lower, self.upper, self.null, self.grid = float(alpha), float(lower), float(upper), float(null), grid
        null_x = (self.null - self.lower) / (self.upper - self.lower)
        self._m = np.union1d(np.arange(1, grid) / grid, [null_x])  # the null is a candidate exactly
        self._null_index = int(np.searchsorted(self._m, null_x))
        self._log_plus = np.zeros(len(self._m))
        self._log_minus = np.zeros(len(self._m))
        self._in = np.ones(len(self._m), dtype=bool)  # candidates never rejected so far
        self._values: list[float] = []
        self._sum = 0.0
        self._mu = 0.5  # running estimates on the [0, 1] scale, started at 1/2 and 1/4
        self._ss = 0.25
        self.decided_at: int | None = None
        self._decision = CONTINUE

    @property
    def n(self) -> int:
        return len(self._values)

    @property
    def values(self) -> tuple[float, ...]:
        """Every value so far, in the order used (the state replayed by ``from_dict``)."""
        return tuple(self._values)

    @property
    def mean(self) -> float | None:
        return self._sum / self.n if self.n else None

    def update(self, values: Iterable[float]) -> SequentialMean:
        """Add *values* (in [lower, upper], finite), in order; returns self."""
        np = require_numpy("SequentialMean")
        batch = [float(v) for v in values]
        for i, v in enumerate(batch):
            if not (self.lower <= v <= self.upper):  # False for NaN too
                raise ValueError(f"SequentialMean.update: values[{i}] must be a number in [{self.lower:g}, "
                                 f"{self.upper:g}], got {v!r}")
        span = self.upper - self.lower
        threshold = math.log(1.0 / self.alpha)
        for v in batch:
            x = (v - self.lower) / span
            t = self.n + 1
            lam = float(plugin_bets(np, self._ss / t, t, self.alpha))
            self._log_plus, self._log_minus = bet_step(np, self._log_plus, self._log_minus, x, self._m, lam)
            self._in &= log_hedged(np, self._log_plus, self._log_minus) < threshold
            self._values.append(v)
            self._sum += v
            # s2_t = (1/4 + sum (x_i - mu_i)^2) / (t + 1), mu_i = (1/2 + sum_{j<=i} x_j) / (i + 1)
            self._mu = (self._mu * t + x) / (t + 1)
            self._ss += (x - self._mu) ** 2
            if self._decision == CONTINUE and not self._in[self._null_index] and self._in.any():
                above = bool(self._in[self._null_index + 1:].any())
                self._decision, self.decided_at = (ABOVE if above else BELOW), t
        return self

    def _bound(self, index: int) -> float:
        span = self.upper - self.lower
        if index < 0:
            return self.lower
        if index >= len(self._m):
            return self.upper
        return self.lower + span * float(self._m[index])

    @property
    def low(self) -> float | None:
        """The lower end of the confidence sequence now (rounded down to the grid), None before data."""
        if not self.n or not self._in.any():
            return None
        return self._bound(int(self._in.argmax()) - 1)

    @property
    def high(self) -> float | None:
        if not self.n or not self._in.any():
            return None
        return self._bound(len(self._in) - int(self._in[::-1].argmax()))

    @property
    def empty(self) -> bool:
        """True when every candidate mean has been rejected: the values drift (not in random order?)."""
        return self.n > 0 and not bool(self._in.any())

    @property
    def decision(self) -> str:
        return self._decision

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe state; ``from_dict`` replays the values and gets the same sequence."""
        return {"kind": type(self).__name__, "alpha": self.alpha, "lower": self.lower, "upper": self.upper,
                "null": self.null, "grid": self.grid, "values": list(self._values)}

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> Any:
        try:
            seq = cls._new(state)
            return seq.update(state["values"])
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{cls.__name__}.from_dict: not a saved state ({exc!r})") from None

    @classmethod
    def _new(cls, state: dict[str, Any]) -> Any:
        return cls(alpha=state["alpha"], lower=state["lower"], upper=state["upper"], null=state["null"],
                   grid=state["grid"])


class SequentialComparison(SequentialMean):
    """``SequentialMean`` of task-level differences b - a in [-1, 1] (scores in [0, 1]) against 0.

    ``decision``: "B better" (the sequence lies above 0), "A better" (below) or "continue".
    """

    def __init__(self, alpha: float = 0.05, grid: int = GRID) -> None:
        super().__init__(alpha=alpha, lower=-1.0, upper=1.0, null=0.0, grid=grid)

    @property
    def decision(self) -> str:
        return {ABOVE: "B better", BELOW: "A better"}.get(self._decision, CONTINUE)

    @classmethod
    def _new(cls, state: dict[str, Any]) -> Any:
        return cls(alpha=state["alpha"], grid=state["grid"])


class SignEProcess:
    """The KT-mixture e-process for win/loss counts against P(win) = 1/2 (ties left out).

    ``update(wins, losses)`` adds a batch; ``e_value`` is E_n = 2^n B(w + 1/2, l + 1/2) / B(1/2, 1/2);
    ``decision`` is "wins" or "losses" (whichever leads) from the first look at which
    E_n >= 1 / alpha, else "continue". Valid at any n and under optional stopping (Ville's
    inequality); E_n depends on the counts only, so the order within a batch does not matter.
    """

    def __init__(self, alpha: float = 0.05) -> None:
        if not (0.0 < alpha < 1.0):
            raise ValueError(f"SignEProcess: alpha must be in (0, 1), got {alpha!r}")
        self.alpha = float(alpha)
        self.wins = self.losses = 0
        self.decided_at: int | None = None
        self._decision = CONTINUE

    @property
    def n(self) -> int:
        return self.wins + self.losses

    @staticmethod
    def log_e(wins: int, losses: int) -> float:
        n = wins + losses
        return (n * math.log(2.0) + math.lgamma(wins + 0.5) + math.lgamma(losses + 0.5) - math.lgamma(n + 1.0)
                - math.log(math.pi))

    @property
    def e_value(self) -> float:
        return math.exp(min(self.log_e(self.wins, self.losses), 700.0))

    def update(self, wins: int = 0, losses: int = 0) -> SignEProcess:
        """Add a batch of *wins* and *losses*; the e-process is checked once, at the batch's end (a
        look: checking at fewer times than every count keeps it valid); returns self."""
        for name, v in (("wins", wins), ("losses", losses)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"SignEProcess.update: {name} must be an integer >= 0, got {v!r}")
        self.wins += wins
        self.losses += losses
        if (self._decision == CONTINUE and self.wins != self.losses
                and self.log_e(self.wins, self.losses) >= math.log(1.0 / self.alpha)):
            self._decision = "wins" if self.wins > self.losses else "losses"
            self.decided_at = self.n
        return self

    @property
    def decision(self) -> str:
        return self._decision
