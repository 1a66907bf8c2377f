"""Accounting, the budget cap and the dry run.

Metered sits right on the transport (below Limited), so every real call, retries and re-asks
included, is counted once, and the budget is checked only when a call holds a slot and is about
to start. It may start only while spending plus the estimates of the calls in flight is under the
cap, so concurrency cannot overshoot it by more than the estimates' error.

A cost a backend reports that is not a finite number >= 0 (NaN, infinite, negative) is never added
as is: it would switch the cap off (NaN compares false, a negative refunds). Such a call, and under
a USD cap one whose cost is unknown, is charged conservatively: the most of its price, its estimate
and the dearest call seen so far; with nothing to price it, the USD cap stops new calls.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from assay.errors import ProviderError

from ._base import Wrapper, guarded
from ._limits import estimate_tokens
from ._prices import Price
from ._protocol import Judge, JudgeRequest, Verdict, errored
from ._stats import JudgeStats
from ._stop import check_stop


@dataclasses.dataclass(slots=True)
class Budget:
    """A cap in USD and/or tokens (input + output); ``None`` means no cap on that axis."""

    usd: float | None = None
    tokens: int | None = None
    spent_usd: float = 0.0
    spent_tokens: int = 0
    _reserved_usd: float = 0.0
    _reserved_tokens: int = 0
    unkept: str | None = None
    """Why the USD cap can no longer be kept (a call's cost unknown, nothing to price it): no new call starts."""

    def __post_init__(self) -> None:
        for name, value in (("usd", self.usd), ("tokens", self.tokens)):
            if value is not None and value < 0:
                raise ValueError(f"budget {name} must be >= 0, got {value!r}")

    def exhausted(self) -> str | None:
        """Why no new call may start, or None."""
        if self.unkept is not None:
            return f"budget exhausted: {self.unkept}"
        if self.usd is not None and self.spent_usd + self._reserved_usd >= self.usd:
            return f"budget exhausted: ${self.spent_usd:.4f} spent of ${self.usd:.4f}"
        if self.tokens is not None and self.spent_tokens + self._reserved_tokens >= self.tokens:
            return f"budget exhausted: {self.spent_tokens} tokens spent of {self.tokens}"
        return None

    def reserve(self, tokens: int, usd: float) -> None:
        self._reserved_tokens += tokens
        self._reserved_usd += usd

    def settle(self, reserved_tokens: int, reserved_usd: float, tokens: int, usd: float) -> None:
        self._reserved_tokens -= reserved_tokens
        self._reserved_usd -= reserved_usd
        self.spent_tokens += tokens
        self.spent_usd += usd


class Metered(Wrapper):
    """Count every backend call in ``stats`` and stop starting calls once ``budget`` is spent.

    Calls refused by the budget come back as skipped Verdicts ("budget exhausted ..."). A call
    whose cost is unknown counts its tokens but not dollars (see ``stats.unpriced_calls``), except
    under a USD cap, where it is charged conservatively (see the module's docstring); a reported cost
    that is not a finite number >= 0 is always replaced, so no total downstream adds a NaN.
    """

    def __init__(self, inner: Judge, *, budget: Budget | None = None, price: Price | None = None,
                 stats: JudgeStats | None = None) -> None:
        super().__init__(inner, stats=stats)
        self.budget, self.price = budget, price or getattr(inner, "price", None)
        self._scale, self._seen_estimated, self._seen_actual = 1.0, 0, 0
        self._dearest = 0.0  # the largest valid cost one call has reported: what a call of unknown cost is charged

    def _priced(self, verdict: Verdict, est_usd: float) -> Verdict:
        """*verdict* with a cost that is a finite number >= 0, or None (unknown) where that is allowed."""
        cost = verdict.cost_usd
        if cost is not None and math.isfinite(cost) and cost >= 0:
            self._dearest = max(self._dearest, cost)
            return verdict
        capped = self.budget is not None and self.budget.usd is not None
        if verdict.skipped or verdict.cached or (cost is None and not capped):
            return verdict if cost is None else dataclasses.replace(verdict, cost_usd=None)
        priced = self.price.cost(verdict.input_tokens, verdict.output_tokens) if self.price else None
        charged = max(priced or 0.0, est_usd, self._dearest)
        if charged > 0 or (priced is not None and cost is None):
            return dataclasses.replace(verdict, cost_usd=charged)
        if capped and self.budget is not None:
            told = "no cost" if cost is None else f"cost {cost!r}"
            self.budget.unkept = (f"a call to {self.model} reported {told} and nothing prices it "
                                  "(pass prices={...} or use budget_tokens)")
        return dataclasses.replace(verdict, cost_usd=None)

    async def call(self, request: JudgeRequest) -> Verdict:
        budget = self.budget
        if budget is None:
            return await self._counted(request, 0.0)
        reason = budget.exhausted()
        if reason is not None:
            return errored(self.model, reason, skipped=True, attempts=0)
        raw = sum(estimate_tokens(request))
        est_in, est_out = (round(n * self._scale) for n in estimate_tokens(request))
        est_usd = self.price.cost(est_in, est_out) if self.price else 0.0
        budget.reserve(est_in + est_out, est_usd)
        tokens, usd = 0, 0.0
        try:
            verdict = await self._counted(request, est_usd)
            tokens, usd = verdict.input_tokens + verdict.output_tokens, verdict.cost_usd or 0.0
            return verdict
        finally:
            budget.settle(est_in + est_out, est_usd, tokens, usd)
            if tokens:  # learn how far off chars/4 is for this model, so reservations get closer
                self._seen_estimated += raw
                self._seen_actual += tokens
                self._scale = max(1.0, self._seen_actual / self._seen_estimated)

    async def _counted(self, request: JudgeRequest, est_usd: float) -> Verdict:
        check_stop()  # after an interrupt no new call starts, whatever layer queued it
        try:
            verdict = self._priced(await self.next(request), est_usd)
        except ProviderError:
            self.stats.record_call(0, 0, 0.0)
            raise
        if not verdict.skipped and not verdict.cached:
            self.stats.record_call(verdict.input_tokens, verdict.output_tokens, verdict.cost_usd)
        return verdict


class DryRun:
    """A judge that sends nothing: skipped Verdicts, and estimates of calls, tokens and cost in stats.

    Put it where the backend would be (``Cached(DryRun(...))``) so cache hits are not estimated.
    """

    backend = "dry-run"

    def __init__(self, model: str, *, price: Price | None = None, stats: JudgeStats | None = None,
                 identity: dict[str, Any] | None = None) -> None:
        self.model, self.price, self.stats = model, price, stats or JudgeStats()
        self.identity = identity
        """The backend's cache identity (see Backend.identity), so cache hits are seen as in a real run."""

    async def call(self, request: JudgeRequest) -> Verdict:
        est_in, est_out = estimate_tokens(request)
        cost = self.price.cost(est_in, est_out) if self.price else None
        s = self.stats
        s.estimated_calls += 1
        s.estimated_input_tokens += est_in
        s.estimated_output_tokens += est_out
        s.estimated_cost_usd = None if cost is None or s.estimated_cost_usd is None else s.estimated_cost_usd + cost
        price = f", ~${cost:.5f}" if cost is not None else ", price unknown"
        return errored(self.model, f"dry run: not sent (~{est_in} input + {est_out} output tokens{price})",
                       skipped=True, attempts=0)

    async def judge(self, request: JudgeRequest) -> Verdict:
        return await guarded(self, request)

    def __repr__(self) -> str:
        return f"DryRun({self.model!r})"
