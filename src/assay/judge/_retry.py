"""Retries for transient failures and re-asks for replies that do not fit the schema.

Two different loops: Retrying repeats the *same* call after a 429, 5xx, timeout or dropped
connection (never after 400/401/403/404, which would fail again); Reasking continues the
*conversation*, showing the judge its invalid reply and the validation error - except after a
reply cut off at max_tokens (usually a small model looping in its reasoning): that runaway text
is never sent back (it would only fill the context); the judge is asked afresh, told to be
brief, with a tighter max_tokens and, at temperature 0, a small temperature to leave the loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random

from assay.errors import ProviderError
from assay.model._options import RETRIES

from ._base import Wrapper
from ._breaker import Tripping
from ._parse import output_guess, reask_message
from ._protocol import Judge, JudgeRequest, Verdict, errored
from ._stats import JudgeStats

_WATCH_S = 0.25
"""How often a call waiting to retry looks at the breaker: once it opens, the wait ends."""


class Retrying(Wrapper):
    """Retry transient failures with full-jitter exponential backoff, honouring Retry-After.

    ``retries`` extra attempts after the first; a delay is ``uniform(0, min(max_delay,
    base_delay * 2**n))`` unless the server said how long to wait. A server that asks for more
    than ``max_retry_after`` seconds gets no retry (the call fails now, saying so), and once the
    breaker below (:class:`~assay.judge._breaker.Tripping`) opens, a call waiting to retry stops
    waiting and is reported skipped, as the calls the breaker refuses are: a judge that keeps
    answering 429 cannot hold a run for retry after retry.
    """

    def __init__(self, inner: Judge, *, retries: int = RETRIES, base_delay: float = 0.5, max_delay: float = 20.0,
                 max_retry_after: float = 120.0, seed: int | None = None, stats: JudgeStats | None = None) -> None:
        super().__init__(inner, stats=stats)
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries!r}")
        self.retries, self.base_delay, self.max_delay = retries, base_delay, max_delay
        self.max_retry_after = max_retry_after
        self._random = random.Random(seed)

    def delay(self, attempt: int, error: ProviderError) -> float | None:
        """Seconds to wait before attempt number *attempt* + 1 (0-based *attempt* just failed);
        None when the server asks for a longer wait than ``max_retry_after``."""
        if error.retry_after is not None:
            if error.retry_after > self.max_retry_after:
                return None
            # A little jitter on top so a burst of 429s does not come back in lockstep.
            return error.retry_after * (1 + 0.1 * self._random.random())
        return self._random.uniform(0, min(self.max_delay, self.base_delay * 2 ** attempt))

    async def call(self, request: JudgeRequest) -> Verdict:
        attempt = 0
        while True:
            try:
                verdict = await self.next(request)
            except ProviderError as exc:
                wait = self.delay(attempt, exc) if exc.retryable and attempt < self.retries else None
                if wait is None and exc.retryable and attempt < self.retries:
                    exc.args = (f"{exc} (the server asks to wait {exc.retry_after:g} s, longer than the "
                                f"{self.max_retry_after:g} s assay waits to retry a call)",)
                if wait is None:
                    exc.attempts = attempt + getattr(exc, "attempts", 1)  # type: ignore[attr-defined]
                    raise
                breaker = await self._wait(wait)
                if breaker is not None:  # the judge stopped answering while this call waited
                    return errored(self.model, breaker, skipped=True, attempts=attempt + 1)
                self.stats.retries += 1
                attempt += 1
                continue
            return dataclasses.replace(verdict, attempts=verdict.attempts + attempt) if attempt else verdict

    async def _wait(self, seconds: float) -> str | None:
        """Sleep *seconds*, or less: the open breaker's message as soon as it opens."""
        breaker = _breaker_below(self.inner)
        if breaker is None:
            await asyncio.sleep(seconds)
            return None
        loop = asyncio.get_running_loop()
        until = loop.time() + seconds
        while breaker.reason is None and (left := until - loop.time()) > 0:
            await asyncio.sleep(min(left, _WATCH_S))
        return breaker.reason


def _breaker_below(judge: Judge) -> Tripping | None:
    while judge is not None and not isinstance(judge, Tripping):
        judge = getattr(judge, "inner", None)  # type: ignore[assignment]
    return judge


def combine(first: Verdict, second: Verdict) -> Verdict:
    """*second* carrying the usage of both calls (cost unknown if either is unknown)."""
    cost = None if first.cost_usd is None or second.cost_usd is None else first.cost_usd + second.cost_usd
    return dataclasses.replace(
        second, input_tokens=first.input_tokens + second.input_tokens,
        output_tokens=first.output_tokens + second.output_tokens, cost_usd=cost,
        latency_s=first.latency_s + second.latency_s, attempts=first.attempts + second.attempts,
        queued_s=first.queued_s + second.queued_s)


TRUNCATED = "truncated at max_tokens"
BRIEF = ("Your previous answer was cut off at the length limit. Answer again from the start, briefly: at most "
         "three short quotes, one or two sentences of reasoning, then the verdict.")
FRESH_TEMPERATURE = 0.3


def fresh_request(request: JudgeRequest) -> JudgeRequest:
    """The original request, told to be brief, with half the token room (never below what a verdict needs)."""
    room = request.max_tokens or 1024
    floor = 2 * output_guess(request.schema)
    messages = (*request.messages, {"role": "user", "content": BRIEF})
    return dataclasses.replace(request, messages=messages, max_tokens=max(floor, room // 2),
                               temperature=request.temperature or FRESH_TEMPERATURE)


class Reasking(Wrapper):
    """Re-ask up to ``reasks`` times when the reply does not parse or validate, then give up with
    an errored Verdict that keeps the last raw reply (never a silent 0 or pass)."""

    def __init__(self, inner: Judge, *, reasks: int = 2, stats: JudgeStats | None = None) -> None:
        super().__init__(inner, stats=stats)
        if reasks < 0:
            raise ValueError(f"reasks must be >= 0, got {reasks!r}")
        self.reasks = reasks

    async def call(self, request: JudgeRequest) -> Verdict:
        verdict = await self.next(request)
        total, current = verdict, request
        for _ in range(self.reasks):
            if verdict.error is None or verdict.skipped:
                break
            if TRUNCATED in verdict.error:
                current = fresh_request(current)
            else:
                current = dataclasses.replace(current, messages=(
                    *current.messages, {"role": "assistant", "content": verdict.raw},
                    {"role": "user", "content": reask_message(verdict.error, request.schema)}))
            self.stats.reasks += 1
            verdict = await self.next(current)
            if verdict.skipped:  # the budget ran out mid-conversation: report the last real failure
                break
            total = combine(total, verdict)
        if total.error is not None and not total.skipped and total.attempts > 1:
            total = dataclasses.replace(total, error=f"{total.error} (after {total.attempts} attempts)")
        return total
