"""The breaker: a judge that stopped answering has its remaining calls skipped, quickly; one that
answers - even with errors about single requests, or after a short outage - is never cut off."""

from __future__ import annotations

import asyncio
import json
import re
import socket

import pytest
from judge_helpers import GOOD, request

from assay.errors import ProviderError
from assay.judge import Limited, Tripping, Verdict, errored, make_judge
from assay.judge._stats import NOT_ANSWERING, JudgeStats
from assay.cli._summary import judge_summary
from tests.support.judge_server import obj, status


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Scripted:
    """An inner layer whose outcome per attempt is set by the test: 'ok', 'down' or 'refused'."""

    model = "scripted:m"

    def __init__(self) -> None:
        self.outcome, self.attempts = "down", 0
        self.stats = JudgeStats()

    async def call(self, req):
        self.attempts += 1
        if self.outcome == "down":
            raise ProviderError("Connection error.", backend="scripted", model="m", retryable=True)
        if self.outcome == "refused":
            raise ProviderError("bad request", backend="scripted", model="m", status=400)
        return Verdict(parsed=GOOD, raw="{}", model=self.model)


def attempt(layer, n=1):
    async def go():
        out = []
        for i in range(n):
            try:
                out.append(await layer.call(request(i)))
            except ProviderError as exc:
                out.append(exc)
        return out
    return asyncio.run(go())


def test_opens_only_after_both_the_streak_and_the_grace_time():
    clock, inner = Clock(), Scripted()
    layer = Tripping(inner, trip_after=5, grace_s=30, clock=clock)
    assert all(isinstance(x, ProviderError) for x in attempt(layer, 50))  # 50 failures within 0 s: not yet
    assert not layer.is_open and inner.attempts == 50
    clock.now = 29.0
    attempt(layer)
    assert not layer.is_open  # the streak is long, but the judge has been silent only 29 s
    clock.now = 30.0
    attempt(layer)
    assert layer.is_open
    skipped = attempt(layer, 20)
    assert inner.attempts == 52  # nothing more reached the judge
    assert all(v.skipped and v.error.startswith("not called: the judge gave no answer for 30 s (52 attempts")
               for v in skipped)


def test_time_alone_does_not_open_it():
    clock, inner = Clock(), Scripted()
    layer = Tripping(inner, trip_after=5, grace_s=30, clock=clock)
    attempt(layer, 4)
    clock.now = 500.0
    attempt(layer)  # the fifth failure, long after the first: now both hold
    assert layer.is_open
    layer = Tripping(Scripted(), trip_after=5, grace_s=30, clock=clock)
    attempt(layer, 3)
    clock.now = 1000.0
    attempt(layer)
    assert not layer.is_open  # four failures, however slow, are not a dead judge


@pytest.mark.parametrize("between", ["ok", "refused"])
def test_any_answer_resets_the_streak(between):
    """A reply - even an HTTP 400 about one request - shows the judge is there."""
    clock, inner = Clock(), Scripted()
    layer = Tripping(inner, trip_after=5, grace_s=10, clock=clock)
    for step in range(20):
        clock.now = step * 10.0
        attempt(layer, 4)
        inner.outcome = between
        attempt(layer)
        inner.outcome = "down"
    assert not layer.is_open and inner.attempts == 100


def test_a_probe_per_grace_period_closes_it_when_the_judge_is_back():
    clock, inner = Clock(), Scripted()
    layer = Tripping(inner, trip_after=2, grace_s=10, clock=clock)
    attempt(layer, 2)
    clock.now = 10.0
    attempt(layer)
    assert layer.is_open and inner.attempts == 3
    clock.now = 15.0
    assert all(v.skipped for v in attempt(layer, 5)) and inner.attempts == 3
    clock.now = 20.0
    attempt(layer)  # the probe goes through and fails: still open, next probe in 10 s
    assert layer.is_open and inner.attempts == 4
    assert all(v.skipped for v in attempt(layer, 5)) and inner.attempts == 4
    clock.now = 30.0
    inner.outcome = "ok"
    probe, after = attempt(layer, 2)
    assert probe.error is None and not layer.is_open
    assert after.error is None and inner.attempts == 6


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="trip_after must be >= 1"):
        Tripping(Scripted(), trip_after=0)
    with pytest.raises(ValueError, match="grace_s must be >= 0"):
        Tripping(Scripted(), grace_s=-1)


def _dead_url() -> str:
    with socket.socket() as s:  # a port that was just free: nothing listens on it now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_a_dead_endpoint_stops_being_called(tmp_path):
    """Through the real stack and a real refused connection: after the breaker opens, the queued
    calls (here 200, 8 at a time) come back skipped instead of each spending its retries.

    The breaker's clock is the test's: the grace time has passed at the 8th failure and never again
    after, so the count holds at any speed (on the wall clock it was 24-238 at load 2)."""
    judge = make_judge(f"openai-compatible:m@{_dead_url()}", cache=False, base_delay=0.01, max_delay=0.02,
                       retries=2, concurrency=8, max_concurrency=8, trip_after=8, trip_grace_s=1.0, timeout=2.0)
    readings = iter([0.0] * 7)
    breaker = judge
    while not isinstance(breaker, Tripping):
        breaker = breaker.inner
    breaker._clock = lambda: next(readings, 100.0)  # failures 1-7 at 0 s, then 100 s from the 8th on

    async def batch():
        return await asyncio.gather(*(judge.judge(request(i)) for i in range(200)))
    verdicts = asyncio.run(batch())
    skipped = [v for v in verdicts if v.skipped]
    errored = [v for v in verdicts if v.error and not v.skipped]
    assert len(skipped) + len(errored) == 200
    # without the breaker: 200 calls x 3 attempts = 600 on the wire; with it, the 8 that opened it
    # and at most the 7 others in flight then (8 at a time): nothing starts once it is open
    assert 8 <= judge.stats.calls <= 15 and len(skipped) >= 200 - 15
    assert judge.stats.skipped_reasons == {NOT_ANSWERING: len(skipped)}
    line = judge_summary({"judge": judge.stats.as_dict() | {"model": judge.model}})
    assert f"judge not answering: {len(skipped)} calls skipped" in line


def test_a_server_that_answers_some_calls_is_never_cut_off(make, judge_server):
    """Half the calls get a 503 for good, the others answer: the streak never builds up."""
    judge_server.reply = lambda req: status(503) if re.search(r"question [13]:", json.dumps(req)) else obj(GOOD)
    judge = make(retries=0, trip_after=2, trip_grace_s=0.0, concurrency=1)

    async def batch():
        return [await judge.judge(request(i % 4)) for i in range(40)]
    verdicts = asyncio.run(batch())
    assert sum(v.error is None for v in verdicts) == 20 and not any(v.skipped for v in verdicts)


def test_disabled_with_zero(make, judge_server):
    judge_server.default = status(503)
    judge = make(retries=0, trip_after=0, concurrency=1)

    async def batch():
        return [await judge.judge(request(i)) for i in range(30)]
    assert not any(v.skipped for v in asyncio.run(batch())) and judge.stats.calls == 30


def test_skipped_calls_do_not_count_as_successes_for_the_concurrency_limit():
    """Calls the breaker (or the budget) skipped answer instantly; counted as successes they would
    grow the limit of a provider that has not answered anything."""
    class Skipping:
        model, stats = "scripted:m", JudgeStats()

        async def call(self, req):
            return errored(self.model, "not called: the judge gave no answer for 30 s", skipped=True, attempts=0)

    layer = Limited(Skipping(), concurrency=2, max_concurrency=64)

    async def batch():
        return await asyncio.gather(*(layer.call(request(i)) for i in range(200)))
    asyncio.run(batch())
    assert layer.limit == 2


def test_an_endless_429_ends_once_the_breaker_opens_and_progress_shows_no_eta(judge_server, make):
    """Stop means stop: calls waiting out a long Retry-After are skipped as soon as the breaker opens."""
    import time

    from assay.cli._progress import RunProgress

    seen: dict[str, int] = {}

    def endless(req):  # each call's first 429 asks for 0.2 s, every later one for 100 s
        key = json.dumps(req["messages"])
        seen[key] = seen.get(key, 0) + 1
        return status(429, "slow down", retry_after=0.2 if seen[key] == 1 else 100)
    judge_server.reply = endless
    judge = make(retries=5, trip_after=12, trip_grace_s=0.1, concurrency=8, max_concurrency=8)

    async def run():
        return await asyncio.gather(*(judge.judge(request(i)) for i in range(8)))
    started = time.monotonic()
    verdicts = asyncio.run(run())
    assert time.monotonic() - started < 60  # not 100 s, let alone 5 x 100 s (a bound far from both)
    assert all(v.error is not None for v in verdicts) and sum(v.skipped for v in verdicts) >= 6
    assert len(judge_server.requests) <= 17  # nothing retried once the breaker opened
    progress = RunProgress(stats=judge.stats, planned_calls=100)
    line = progress.describe()
    assert "ETA" not in line and "judge not answering" in line


def test_a_retry_after_longer_than_assay_waits_fails_the_call_at_once(judge_server, make):
    import time

    judge_server.push(status(429, "come back tomorrow", retry_after=86400), obj(GOOD))
    started = time.monotonic()
    verdict = asyncio.run(make(retries=5).judge(request()))
    assert time.monotonic() - started < 60 and len(judge_server.requests) == 1  # not 86400 s
    assert "asks to wait 86400 s, longer than the 120 s assay waits" in verdict.error
