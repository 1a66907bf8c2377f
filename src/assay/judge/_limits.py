"""Concurrency and rate limits around a backend, adaptive to the provider's 429s and latency.

The concurrency limit is AIMD (as Phoenix, promptfoo, MLflow and Inspect do) with a slow start
above it (as TCP's): past the starting ``concurrency``, up to ``max_concurrency``, the limit
doubles after each half round (half a limit's worth of successes) while that half round's mean
latency stays within 1.5x of the best round seen; the first round whose latency grew takes the last doubling
back and ends the slow start, after which it grows by one per round while latency holds. A 429
(or 503/529) halves it, once per wave (calls that started before the last change do not count
again), ends the slow start, and successes add one per round back up to the start. Latency is
measured only on calls that started under the current limit, so a round never mixes two limits.
The logic is :class:`Controller` (no clock, no I/O: the tests drive it with chosen latencies);
:class:`Limited` feeds it the calls' latencies and statuses.

So a provider that keeps answering quickly is not pinned at the start, and one that only queues
(a single-slot server: latency grows with the calls in flight) stops within 1.5x of it.
Requests- and tokens-per-minute limits are token buckets holding ten seconds' worth, so a run
starts without a long ramp.
"""

from __future__ import annotations

import asyncio
import collections
import math
import time

from assay.errors import ProviderError
from assay.model._options import CONCURRENCY
from assay.model._options import GROWTH as GROWTH  # the tests and older imports read it here

from ._base import LoopLocal, Wrapper
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
        self._turn: asyncio.Lock | None = None

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    async def take(self, amount: float) -> None:
        """Wait until *amount* is available; a request larger than the bucket waits for a full one.

        In turn: a call waits behind those that came before it (an asyncio lock is first come, first
        served). Each used to wait on its own, so small requests took every few tokens as they came
        and a large one (a long conversation under a tokens-per-minute limit) waited, holding its
        concurrency slot, until no small one was left."""
        need = min(amount, self.capacity)
        turn = self._turn
        if turn is None:
            turn = self._turn = asyncio.Lock()  # made here, on the loop that uses it (one bucket per loop)
        async with turn:
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
    """An asyncio semaphore whose size can change while calls are waiting, first come, first served.

    A freed slot is handed to the longest-waiting call (counted as taken when it is woken), so a call
    asking later never takes it first. Before, every release woke as many waiters as there were free
    slots without counting those already woken: a burst of replies woke several per slot, and those
    left without one went back to the end of the queue. The oldest traces then waited rounds behind
    later ones while the engine's in-order window filled with finished traces and stopped reading, so
    the calls in flight fell from 64 to 20-40 a few times per 1,000-call run."""

    def __init__(self, limit: int) -> None:
        self.limit, self.in_flight = limit, 0
        self.waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self) -> None:
        if self.in_flight < self.limit and not self.waiters:
            self.in_flight += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            await waiter  # wake() counted the slot as this call's before waking it
        except asyncio.CancelledError:
            if waiter in self.waiters:
                self.waiters.remove(waiter)
            elif waiter.done() and not waiter.cancelled():
                self.release()  # handed a slot, then cancelled before taking it: the next waiter gets it
            raise

    def release(self) -> None:
        self.in_flight -= 1
        self.wake()

    def wake(self) -> None:
        while self.in_flight < self.limit and self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                self.in_flight += 1


LATENCY_HOLDS = 1.5
"""A round's mean latency above this multiple of the best round's means the provider is queueing."""


class Controller:
    """The adaptive limit, without a clock: ``succeeded(epoch, latency)`` and ``backed_off(epoch)``.

    ``epoch`` is the value of :attr:`epoch` when the call started; it changes with every limit
    change, so calls that started under an older limit neither complete a round nor cut twice.
    """

    def __init__(self, start: int, cap: int, *, adaptive: bool = True) -> None:
        self.start, self.cap = start, cap if adaptive else start
        self.adaptive = adaptive
        self.limit, self.epoch = start, 0
        self.slow_start = self.cap > start  # doubling until latency grows or a 429 arrives
        self._previous = start
        self._successes, self._window, self._best = 0, 0.0, math.inf

    def _set(self, limit: int) -> None:
        self._previous, self.limit = self.limit, limit
        self.epoch += 1
        self._successes, self._window = 0, 0.0

    def backed_off(self, epoch: int) -> bool:
        """A 429/503/529: halve the limit (once per wave). Returns whether it changed."""
        if not self.adaptive or epoch != self.epoch:
            return False  # this call started before the last change: that change already accounts for it
        self.slow_start = False
        self._set(max(1, self.limit // 2))
        return True

    def succeeded(self, epoch: int, latency: float) -> bool:
        """A call that started at *epoch* answered after *latency* seconds. Returns whether the limit changed."""
        if not self.adaptive or epoch != self.epoch or (self.limit >= self.cap and not self.slow_start):
            return False
        self._successes += 1
        self._window += latency
        if self._successes < self.limit:
            # Slow start needs only the first half of a round: the calls that started at the change
            # answer together, so waiting for the rest (which started as these answered) costs a
            # whole extra latency per doubling. Half a round is still a limit's worth of evidence
            # against queueing (its latency is compared with the best as a full round's is).
            if not (self.slow_start and self.limit >= self.start and self._successes * 2 >= self.limit):
                return False
        mean = self._window / self._successes
        self._successes, self._window = 0, 0.0
        self._best = min(self._best, mean)
        if self.limit < self.start:  # recovering from a cut: one more per round, back to the start
            self._set(self.limit + 1)
            return True
        if mean > LATENCY_HOLDS * self._best:  # latency grew with the limit: the provider is queueing
            if self.slow_start:
                self.slow_start = False
                self._set(max(self.start, self._previous))  # take the last doubling back
                return True
            return False  # hold; growth resumes if latency comes back down
        if self.limit >= self.cap:
            self.slow_start = False
            return False
        self._set(min(self.cap, self.limit * 2 if self.slow_start else self.limit + 1))
        return True


class Limited(Wrapper):
    """At most ``concurrency`` calls in flight (adaptive up to ``max_concurrency``), optional RPM/TPM limits.

    ``max_concurrency=None`` means ``concurrency`` (no growth); :func:`assay.judge.compose` passes
    ``GROWTH x concurrency`` for elastic backends. ``stats.peak_concurrency`` records the most calls
    in flight at once, which the tests check against the server's own count.
    """

    def __init__(self, inner: Judge, *, concurrency: int = CONCURRENCY, rpm: float | None = None,
                 tpm: float | None = None, adaptive: bool = True, max_concurrency: int | None = None,
                 stats: JudgeStats | None = None) -> None:
        super().__init__(inner, stats=stats)
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
        if max_concurrency is not None and max_concurrency < concurrency:
            raise ValueError(f"max_concurrency ({max_concurrency}) must be >= concurrency ({concurrency})")
        # The adaptive limit outlives an event loop (the provider's limits do); the slots cannot.
        self.control = Controller(concurrency, max_concurrency or concurrency, adaptive=adaptive)
        self.max_concurrency, self.adaptive, self.start = self.control.cap, adaptive, concurrency
        self.rpm, self.tpm = rpm, tpm
        self._state = LoopLocal(self._new_state)
        self.stats.concurrency_limit = concurrency

    @property
    def limit(self) -> int:
        return self.control.limit

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
            epoch = self.control.epoch
            self.stats.peak_concurrency = max(self.stats.peak_concurrency, slots.in_flight)
            started = time.perf_counter()
            try:
                verdict = await self.next(request)
            except ProviderError as exc:
                if exc.status in BACKOFF_STATUSES and self.control.backed_off(epoch):
                    self._apply(slots)
                raise
            if state["tpm"]:
                state["tpm"].give_back(tokens - verdict.input_tokens - verdict.output_tokens)
            # A skipped call (budget spent, breaker open) never reached the provider: it says nothing of its capacity.
            if not verdict.skipped and self.control.succeeded(epoch, time.perf_counter() - started):
                self._apply(slots)
            return verdict
        finally:
            slots.release()

    def _apply(self, slots: _Slots) -> None:
        slots.limit = self.stats.concurrency_limit = self.control.limit
        slots.wake()
