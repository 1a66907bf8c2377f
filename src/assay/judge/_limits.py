"""Concurrency and rate limits around a backend, adaptive to the provider's 429s.

The concurrency limit is AIMD (as Phoenix, promptfoo, MLflow and Inspect do): halve it when the
provider answers 429 (once per wave: calls that started before the last cut do not cut again) and
add one after a limit's worth of successes (back up to the starting ``concurrency``); past it, up to
``max_concurrency``, only while the window's mean latency stays within 1.5x of the best window
seen - it grows while the provider keeps up and stops once more calls in flight only queue. Requests- and tokens-per-minute
limits are token buckets holding ten seconds' worth, so a run starts without a long ramp.
"""

from __future__ import annotations

import asyncio
import collections
import math
import time

from assay.errors import ProviderError

from ._base import LoopLocal, Wrapper, call_inner
from ._parse import output_guess
from ._protocol import Judge, JudgeRequest, Verdict
from ._stats import JudgeStats

BACKOFF_STATUSES = frozenset({429, 503, 529})


def estimate_tokens(request: JudgeRequest) -> tuple[int, int]:
    """(input, output) token guesses: ~4 characters per token, plus a per-schema output guess."""
    chars = sum(len(m.get("content") or "") + 8 for m in request.messages)
    out = output_guess(request.schema)
    return chars // 4 + 1, min(out, request.max_tokens) if request.max_tokens else out


class TokenBucket:
    """``rate`` units per minute, holding at most ``burst`` seconds of them."""

    def __init__(self, per_minute: float, burst_s: float = 10.0) -> None:
        if per_minute <= 0:
            raise ValueError(f"a rate limit must be positive, got {per_minute!r}")
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.level, self.stamp = self.capacity, time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    async def take(self, amount: float) -> None:
        """Wait until *amount* is available; a request larger than the bucket waits for a full one."""
        need = min(amount, self.capacity)
        while True:
            self._refill()
            if self.level >= need:
                self.level -= amount
                return
            await asyncio.sleep((need - self.level) / self.rate)

    def give_back(self, amount: float) -> None:
        """Correct an estimate once the true usage is known (negative *amount* charges more)."""
        self._refill()
        self.level = min(self.capacity, self.level + amount)


class _Slots:
    """An asyncio semaphore whose size can change while calls are waiting."""

    def __init__(self, limit: int) -> None:
        self.limit, self.in_flight = limit, 0
        self.waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self) -> None:
        while self.in_flight >= self.limit:
            waiter = asyncio.get_running_loop().create_future()
            self.waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter in self.waiters:
                    self.waiters.remove(waiter)
                self.wake()
                raise
        self.in_flight += 1

    def release(self) -> None:
        self.in_flight -= 1
        self.wake()

    def wake(self) -> None:
        free = self.limit - self.in_flight
        while free > 0 and self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1


class Limited(Wrapper):
    """At most ``concurrency`` calls in flight, optional RPM/TPM limits, AIMD on 429/503.

    ``stats.peak_concurrency`` records the most calls in flight at once, which the tests check
    against the server's own count.
    """

    def __init__(self, inner: Judge, *, concurrency: int = 16, rpm: float | None = None,
                 tpm: float | None = None, adaptive: bool = True, max_concurrency: int | None = None,
                 stats: JudgeStats | None = None) -> None:
        super().__init__(inner, stats=stats)
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
        if max_concurrency is not None and max_concurrency < concurrency:
            raise ValueError(f"max_concurrency ({max_concurrency}) must be >= concurrency ({concurrency})")
        self.max_concurrency, self.adaptive = (max_concurrency or concurrency) if adaptive else concurrency, adaptive
        self.start, self._window, self._best = concurrency, 0.0, math.inf
        self.rpm, self.tpm = rpm, tpm
        # The adaptive limit outlives an event loop (the provider's limits do); the slots cannot.
        self.limit, self._wave, self._successes = concurrency, 0, 0
        self._state = LoopLocal(self._new_state)
        self.stats.concurrency_limit = concurrency

    def _new_state(self) -> dict:
        return {"slots": _Slots(self.limit),
                "rpm": TokenBucket(self.rpm) if self.rpm else None,
                "tpm": TokenBucket(self.tpm) if self.tpm else None}

    async def call(self, request: JudgeRequest) -> Verdict:
        state = self._state.get()
        slots: _Slots = state["slots"]
        tokens = sum(estimate_tokens(request)) if state["tpm"] else 0
        await slots.acquire()
        try:
            if state["rpm"]:
                await state["rpm"].take(1)
            if state["tpm"]:
                await state["tpm"].take(tokens)
            wave = self._wave
            self.stats.peak_concurrency = max(self.stats.peak_concurrency, slots.in_flight)
            started = time.perf_counter()
            try:
                verdict = await call_inner(self.inner, request)
            except ProviderError as exc:
                if exc.status in BACKOFF_STATUSES:
                    self._decrease(slots, wave)
                raise
            if state["tpm"]:
                state["tpm"].give_back(tokens - verdict.input_tokens - verdict.output_tokens)
            self._increase(slots, time.perf_counter() - started)
            return verdict
        finally:
            slots.release()

    def _decrease(self, slots: _Slots, wave: int) -> None:
        if not self.adaptive or wave != self._wave:
            return  # this call started before the last cut: the cut already accounts for it
        self._wave += 1
        self._successes, self._window = 0, 0.0
        self.limit = slots.limit = max(1, self.limit // 2)
        self.stats.concurrency_limit = self.limit

    def _increase(self, slots: _Slots, latency: float = 0.0) -> None:
        if self.limit >= self.max_concurrency:
            return
        self._successes += 1
        self._window += latency
        if self._successes >= self.limit:
            mean = self._window / self._successes
            self._successes, self._window = 0, 0.0
            self._best = min(self._best, mean)
            if self.limit >= self.start and mean > 1.5 * self._best:
                return  # above the start, latency grew with the limit: the provider is queueing, so hold
            self.limit = slots.limit = self.limit + 1
            self.stats.concurrency_limit = self.limit
            slots.wake()
