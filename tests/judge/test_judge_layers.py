"""Concurrency, adaptive backoff, rate limits, budget, dry run, re-asks and accounting."""

from __future__ import annotations

import asyncio
import time

import pytest
from judge_helpers import GOOD, Score, request

from assay.errors import ConfigError
from assay.judge import DryRun, Limited, Metered, Reasking, make_judge
from tests.support.judge_server import delayed, malformed, obj, status, text


def gather(judge, n, **kw):
    async def batch():
        return await asyncio.gather(*(judge.judge(request(i, **kw)) for i in range(n)))
    return asyncio.run(batch())


@pytest.mark.parametrize("limit", [1, 4, 16])
def test_peak_concurrency_never_exceeds_the_limit(make, judge_server, limit):
    judge_server.default = delayed(obj(GOOD), 0.15)  # long enough that calls overlap on a loaded machine
    judge = make(concurrency=limit, max_concurrency=limit)  # pinned: no growth past the limit
    verdicts = gather(judge, 3 * limit + 2)
    assert all(v.error is None for v in verdicts)
    assert judge_server.peak <= limit == judge.stats.peak_concurrency  # never exceeded, as the server saw it
    assert judge_server.peak >= min(limit, limit // 2 + 1)  # and the limit is actually used


def test_default_concurrency_starts_at_16(make, judge_server):
    judge_server.default = delayed(obj(GOOD), 0.15)
    judge = make()
    gather(judge, 16)  # one round: the limit may grow only after a round of 16 successes
    assert judge.stats.peak_concurrency == 16 and 8 < judge_server.peak <= 16


def test_429_halves_concurrency_and_successes_restore_it(make, judge_server):
    seen = {"n": 0}

    def reply(req):
        seen["n"] += 1
        return status(429, retry_after=0.02) if seen["n"] <= 8 else delayed(obj(GOOD), 0.01)
    judge_server.reply = reply
    judge = make(concurrency=8, max_concurrency=8)
    verdicts = gather(judge, 8)
    assert all(v.error is None for v in verdicts)
    # the first wave of eight 429s cuts the limit once (to 4), not eight times
    assert judge.stats.concurrency_limit < 8
    gather(judge, 60)
    assert judge.stats.concurrency_limit == 8


def test_concurrency_grows_past_the_start_while_latency_holds(make, judge_server, monkeypatch):
    """Every call takes 50 ms on the limit layer's clock, however many are in flight: each call's
    task has its own clock that moves 50 ms between the call's start and its end, so a loaded
    machine (which stretches real latencies unevenly) cannot read as a queueing provider."""
    import contextvars
    import types

    from assay.judge import _limits

    clock = contextvars.ContextVar("clock", default=0.0)  # per task: gather gives each call its own context

    def per_call_clock() -> float:
        clock.set(clock.get() + 0.05)
        return clock.get()
    monkeypatch.setattr(_limits, "time", types.SimpleNamespace(perf_counter=per_call_clock, monotonic=time.monotonic))
    judge_server.default = delayed(obj(GOOD), 0.02)  # real overlap, so the server sees more than 2 at once
    judge = make(concurrency=2, max_concurrency=6)
    gather(judge, 120)
    assert judge.stats.concurrency_limit == 6 and judge_server.peak > 2


def test_concurrency_stops_growing_when_latency_only_queues(make, judge_server, monkeypatch):
    """A single-slot server: more calls in flight only wait longer. The limit layer's clock is the
    server's own: 25 ms pass per call it finishes, so a call's latency is the calls served while it
    waited (its place in the queue, not the machine's load) and the outcome holds at any speed."""
    import threading
    import types

    from assay.judge import _limits

    lock, served = threading.Lock(), [0]

    def one_at_a_time(req):  # the server is the bottleneck: calls in flight queue here, for real
        with lock:
            time.sleep(0.025)
            served[0] += 1
        return obj(GOOD)
    monkeypatch.setattr(_limits, "time", types.SimpleNamespace(perf_counter=lambda: served[0] * 0.025,
                                                               monotonic=time.monotonic))
    judge_server.reply = one_at_a_time
    judge = make(concurrency=2, max_concurrency=16)
    gather(judge, 100)
    assert judge.stats.concurrency_limit < 8  # latency ~ limit x 25 ms: growth stops within a few steps


def test_max_concurrency_below_concurrency_is_an_error(make):
    with pytest.raises(ConfigError, match="max-concurrency"):
        make(concurrency=8, max_concurrency=4)


class _BucketClock:
    """The rate buckets' clock, moved only by their own waits: ``asyncio.sleep`` inside the limit
    layer advances it by the time asked and records it, so how long the buckets made calls wait is
    exact whatever the machine's load."""

    def __init__(self, monkeypatch):
        import types

        from assay.judge import _limits
        self.now, self.waits = 1000.0, []

        async def sleep(seconds, *args, **kwargs):
            self.waits.append(seconds)
            self.now += seconds
            await asyncio.sleep(0)

        proxy = types.SimpleNamespace(**{name: getattr(asyncio, name) for name in dir(asyncio) if not name.startswith("__")})
        proxy.sleep = sleep
        monkeypatch.setattr(_limits, "asyncio", proxy)
        monkeypatch.setattr(_limits, "time", types.SimpleNamespace(monotonic=lambda: self.now,
                                                                   perf_counter=time.perf_counter))


def test_requests_per_minute_limit_spaces_calls(make, judge_server, monkeypatch):
    judge_server.default = obj(GOOD)
    clock = _BucketClock(monkeypatch)
    judge = make(rpm=600)  # 10 per second, bursts of up to ten seconds' worth (100)
    assert all(v.error is None for v in gather(judge, 20))
    assert clock.waits == []  # within the burst no call waits
    judge_server.reset()

    judge = make(rpm=240)  # 4 per second, a burst of 40
    assert all(v.error is None for v in gather(judge, 42))
    assert len(judge_server.requests) == 42
    assert sum(clock.waits) == pytest.approx(0.5, abs=0.01)  # two beyond the burst wait 0.25 s each
    assert len([w for w in clock.waits if w > 0]) >= 2


def test_tokens_per_minute_limit_waits(make, judge_server):
    judge_server.default = obj(GOOD, usage=(100, 20))
    judge = make(tpm=3000, concurrency=1)  # 50 tokens/s, a bucket of 500
    started = time.perf_counter()
    gather(judge, 5)  # 600 tokens: the last call waits for ~100 tokens to refill
    assert time.perf_counter() - started >= 0.5


def test_budget_in_tokens_stops_new_calls(make, judge_server):
    judge_server.default = obj(GOOD, usage=(100, 50))
    judge = make(budget_tokens=450, concurrency=1)
    verdicts = gather(judge, 6)
    assert len(judge_server.requests) == 3
    assert [v.skipped for v in verdicts] == [False] * 3 + [True] * 3
    assert all(v.error and v.error.startswith("budget exhausted") for v in verdicts[3:])
    assert judge.stats.calls == 3 and judge.stats.skipped == 3 and judge.stats.errors == 0


def test_budget_in_usd_holds_under_concurrency(make, judge_server):
    judge_server.default = delayed(obj(GOOD), 0.01)  # usage ~ chars / 4, as real servers report
    judge = make(budget_usd=0.5, prices={"scripted": (1000.0, 1000.0)}, concurrency=8)  # ~$0.05 a call
    verdicts = gather(judge, 40)
    done = [v for v in verdicts if not v.skipped]
    assert 1 <= len(done) == len(judge_server.requests) < 40
    assert sum(v.cost_usd for v in done) <= 0.5 + max(v.cost_usd for v in done)  # at most one call over
    assert judge.stats.cost_usd == pytest.approx(sum(v.cost_usd for v in done))
    assert all(v.error.startswith("budget exhausted: $") for v in verdicts if v.skipped)


def test_usd_budget_needs_a_known_price(judge_server):
    with pytest.raises(ConfigError, match="budget_usd needs a known price"):
        make_judge("openai-compatible:unknown-model@http://example.invalid/v1", budget_usd=1.0)


def test_dry_run_sends_nothing_and_estimates(judge_server):
    judge = make_judge("openai:gpt-4o-mini", dry_run=True, cache=False)
    verdicts = gather(judge, 5)
    assert all(v.skipped and v.parsed is None and "dry run" in v.error for v in verdicts)
    s = judge.stats
    assert s.calls == 0 and s.estimated_calls == 5 and s.skipped == 5
    assert s.estimated_input_tokens > 5 * 10 and s.estimated_output_tokens >= 5 * 16
    assert 0 < s.estimated_cost_usd < 0.01
    assert len(judge_server.requests) == 0


def test_dry_run_of_unknown_model_has_unknown_cost():
    judge = make_judge("openai-compatible:mystery@https://llm.example.com/v1", dry_run=True, cache=False)
    gather(judge, 2)
    assert judge.stats.estimated_cost_usd is None and isinstance(judge, DryRun)


def test_schema_violation_is_reasked_with_the_error(make, judge_server):
    judge_server.push(obj({"score": 3, "reason": "too high"}), obj(GOOD))
    judge = make()
    verdict = run_one(judge)
    assert verdict.parsed == Score(**GOOD) and verdict.attempts == 2 and judge.stats.reasks == 1
    second = judge_server.requests[1].messages
    assert second[-2] == {"role": "assistant", "content": '{"score": 3, "reason": "too high"}'}
    assert "score" in second[-1]["content"] and "less than or equal to 1" in second[-1]["content"]
    assert verdict.input_tokens > 0 and verdict.output_tokens > 0


def test_truncated_reply_is_asked_afresh_tighter_never_sent_back(make, judge_server):
    runaway = '{"reason": "' + "the answer is fine because " * 60
    judge_server.push(text(runaway, finish_reason="length"), obj(GOOD))
    judge = make()
    verdict = run_one(judge, max_tokens=400)
    assert verdict.parsed == Score(**GOOD) and judge.stats.reasks == 1
    first, second = (r.json for r in judge_server.requests)
    assert all(m["content"] != runaway for m in second["messages"])  # the runaway text never goes back
    assert second["messages"][:len(first["messages"])] == first["messages"]  # a fresh start of the same question
    assert "cut off" in second["messages"][-1]["content"]
    assert second["max_tokens"] == 200 and second["temperature"] > 0 == first["temperature"]


def test_persistent_violation_ends_as_an_errored_verdict_keeping_raw(make, judge_server):
    judge_server.default = malformed('{"score": "high"')
    judge = make(reasks=2)
    verdict = run_one(judge)
    assert verdict.parsed is None and verdict.raw == '{"score": "high"' and verdict.attempts == 3
    assert "after 3 attempts" in verdict.error and len(judge_server.requests) == 3
    assert judge.stats.errors == 1 and judge.stats.reasks == 2


def test_reasks_are_configurable(make, judge_server):
    judge_server.default = text("I refuse to answer in JSON")
    verdict = run_one(make(reasks=0))
    assert verdict.error is not None and len(judge_server.requests) == 1


def test_stats_account_for_tokens_and_cost(make, judge_server):
    judge_server.default = obj(GOOD, usage=(1000, 200))
    judge = make(prices={"scripted": (1.0, 5.0)})
    verdicts = gather(judge, 4)
    assert all(v.input_tokens == 1000 and v.output_tokens == 200 for v in verdicts)
    assert all(v.cost_usd == pytest.approx(0.002) for v in verdicts)
    s = judge.stats
    assert (s.requests, s.calls, s.input_tokens, s.output_tokens) == (4, 4, 4000, 800)
    assert s.cost_usd == pytest.approx(0.008) and s.unpriced_calls == 0
    assert "4 requests" in s.summary()


def test_local_server_costs_zero_and_remote_unknown_model_costs_none(make, judge_server):
    judge_server.default = obj(GOOD)
    assert run_one(make()).cost_usd == 0.0  # 127.0.0.1


def test_layers_compose_by_hand(judge_server, tmp_path):
    from assay.judge import Cached, OpenAICompatible, Retrying

    judge_server.default = obj(GOOD)
    backend = OpenAICompatible("scripted", base_url=judge_server.url, provider="openai-compatible")
    judge = Cached(Reasking(Retrying(Limited(Metered(backend), concurrency=2))), tmp_path / "c.sqlite3")
    assert run_one(judge).parsed == Score(**GOOD)
    assert judge.stats is judge.inner.stats and judge.stats.calls == 1


def run_one(judge, *args, **kw):
    return asyncio.run(judge.judge(request(*args, **kw)))


def test_a_large_request_under_a_token_limit_is_not_starved_by_smaller_ones_behind_it():
    """The bucket serves calls in turn: a call needing the whole bucket, queued first, goes before the
    small ones queued after it (they used to take every few tokens as they refilled, so it waited until
    none was left). Only the order is asserted: it does not depend on the machine's speed."""
    from assay.judge import TokenBucket

    async def scenario() -> list[str]:
        bucket = TokenBucket(60_000, burst_s=0.05)  # 1,000 tokens/s, a bucket of 50
        await bucket.take(50)  # empty
        done: list[str] = []

        async def take(name: str, amount: float) -> None:
            await bucket.take(amount)
            done.append(name)
        tasks = [asyncio.ensure_future(take("large", 50))]
        await asyncio.sleep(0)
        tasks += [asyncio.ensure_future(take(f"small {i}", 5)) for i in range(20)]
        await asyncio.gather(*tasks)
        return done
    done = asyncio.run(scenario())
    assert done[0] == "large" and done[1:] == [f"small {i}" for i in range(20)]
