"""Stop calling a judge that has stopped answering.

A dead endpoint (wrong port, server down, a proxy that hangs) fails every call only after its
retries, so a large run would spend minutes to hours learning what its first calls already
showed. ``Tripping`` sits on the transport, below the retries and the concurrency limit, and
watches attempts: once ``trip_after`` attempts in a row failed for transport reasons (no reply,
a timeout, a 5xx or 429 - not a 4xx, which is an answer about that one request) *and* the judge
has not answered for ``grace_s`` seconds, the breaker opens and every further attempt comes back
at once as a skipped Verdict (the run counts it as not evaluated, so its exit status says so).
Both conditions are needed: a short outage that retries ride out, or a burst of errors from a
server that keeps answering other calls, never trips it. While open, one attempt per ``grace_s``
goes through as a probe; an answer closes the breaker again.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from assay.errors import ProviderError

from ._base import Wrapper
from ._protocol import Judge, JudgeRequest, Verdict, errored
from ._stats import JudgeStats


def transport_failure(exc: ProviderError) -> bool:
    """No usable reply from the server at all (as opposed to an answer that refuses this request)."""
    return exc.retryable or exc.status is None


class Tripping(Wrapper):
    """Skip the calls of a judge that has failed ``trip_after`` attempts in a row for ``grace_s``."""

    def __init__(self, inner: Judge, *, trip_after: int = 32, grace_s: float = 30.0,
                 stats: JudgeStats | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(inner, stats=stats)
        if trip_after < 1:
            raise ValueError(f"trip_after must be >= 1, got {trip_after!r}")
        if grace_s < 0:
            raise ValueError(f"grace_s must be >= 0, got {grace_s!r}")
        self.trip_after, self.grace_s, self._clock = trip_after, grace_s, clock
        self._streak, self._since = 0, 0.0
        self._open: str | None = None
        self._probe_at = 0.0

    @property
    def is_open(self) -> bool:
        return self._open is not None

    @property
    def reason(self) -> str | None:
        """Why calls are skipped while the breaker is open (None while closed)."""
        return self._open

    async def call(self, request: JudgeRequest) -> Verdict:
        if self._open is not None:
            now = self._clock()
            if now < self._probe_at:
                return errored(self.model, self._open, skipped=True, attempts=0)
            self._probe_at = now + self.grace_s  # this attempt is the probe; the others keep skipping
        try:
            verdict = await self.next(request)
        except ProviderError as exc:
            if transport_failure(exc):
                self._failed(exc)
            else:
                self._answered()
            raise
        if not verdict.skipped:
            self._answered()
        return verdict

    def _answered(self) -> None:
        self._streak, self._open = 0, None

    def _failed(self, exc: ProviderError) -> None:
        now = self._clock()
        if self._streak == 0:
            self._since = now
        self._streak += 1
        if self._open is None and self._streak >= self.trip_after and now - self._since >= self.grace_s:
            self._open = (f"not called: the judge gave no answer for {now - self._since:.0f} s ({self._streak} "
                          f"attempts failed in a row, the last: {exc}); its remaining calls in this run are "
                          "skipped (answered calls are cached: rerun once the judge is back)")
            self._probe_at = now + self.grace_s
