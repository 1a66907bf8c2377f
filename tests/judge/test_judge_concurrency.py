"""Adaptive concurrency: the controller's rules driven with chosen latencies, then three real servers.

The controller has no clock, so its logic is tested exactly; the server tests assert only what
load cannot change (no call lost, where the limit ends relative to the server's capacity).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from judge_helpers import GOOD, request

from assay.judge import CallableJudge, Limited, make_judge
from assay.judge._anthropic import AnthropicJudge
from assay.judge._base import Backend
from assay.judge._factory import compose
from assay.judge._limits import GROWTH, Controller
from tests.support.judge_server import delayed, obj, status


def round_of(control: Controller, latency: float) -> None:
    """One round: a limit's worth of calls that all started under the current limit."""
    epoch = control.epoch
    for _ in range(control.limit):
        control.succeeded(epoch, latency)


def test_slow_start_doubles_while_latency_holds_then_stays_at_the_cap():
    control = Controller(4, 32)
    limits = []
    for _ in range(5):
        round_of(control, 0.1)
        limits.append(control.limit)
    assert limits == [8, 16, 32, 32, 32]


def test_slow_start_doubles_after_half_a_round_of_successes_at_the_best_latency():
    """The calls that started at a change answer together; the rest started as they answered, a
    whole latency later: slow start doubles on the first half, so each doubling costs one latency."""
    control = Controller(16, 64)
    epoch = control.epoch
    for _ in range(7):
        assert not control.succeeded(epoch, 0.1)
    assert control.limit == 16
    assert control.succeeded(epoch, 0.1) and control.limit == 32  # the 8th of 16
    epoch = control.epoch
    for _ in range(15):
        assert not control.succeeded(epoch, 0.1)
    assert control.succeeded(epoch, 0.1) and control.limit == 64  # the 16th of 32


def test_a_half_round_whose_latency_grew_takes_the_doubling_back_and_later_growth_needs_whole_rounds():
    control = Controller(4, 64)
    epoch = control.epoch
    control.succeeded(epoch, 0.1)
    control.succeeded(epoch, 0.1)
    assert control.limit == 8
    epoch = control.epoch
    for _ in range(3):
        assert not control.succeeded(epoch, 0.2)
    assert control.succeeded(epoch, 0.2) and control.limit == 4 and not control.slow_start  # 4 of 8, 2x slower
    epoch = control.epoch
    for _ in range(3):
        assert not control.succeeded(epoch, 0.1)  # additive growth: half a round is not enough
    assert control.succeeded(epoch, 0.1) and control.limit == 5


def test_recovery_after_a_cut_needs_whole_rounds():
    control = Controller(8, 64)
    control.backed_off(control.epoch)
    assert control.limit == 4
    epoch = control.epoch
    for _ in range(3):
        assert not control.succeeded(epoch, 0.1)
    assert control.succeeded(epoch, 0.1) and control.limit == 5


def test_latency_that_grows_with_the_limit_takes_the_doubling_back_and_growth_stops_near_the_start():
    control = Controller(4, 64)
    limits = []
    for _ in range(12):
        round_of(control, 0.01 * control.limit)  # a single-slot server: latency = calls in flight x service
        limits.append(control.limit)
    # 4 -> 8 (latency 2x: back to 4, slow start over) -> +1 while within 1.5x of the best round -> holds
    assert limits[:5] == [8, 4, 5, 6, 7] and set(limits[5:]) == {7}
    assert not control.slow_start


def test_growth_resumes_when_latency_comes_back_down():
    control = Controller(4, 64)
    round_of(control, 0.1)
    round_of(control, 0.3)  # 8: latency grew -> back to 4
    assert control.limit == 4
    round_of(control, 0.3)
    assert control.limit == 4  # holds while latency stays high
    round_of(control, 0.1)
    assert control.limit == 5  # additive now, not doubling


def test_a_429_halves_once_per_wave_ends_slow_start_and_recovery_adds_one_per_round():
    control = Controller(8, 64)
    round_of(control, 0.1)
    assert control.limit == 16
    wave = control.epoch
    assert control.backed_off(wave) and control.limit == 8
    assert not control.backed_off(wave) and control.limit == 8  # a call from the same wave cuts no more
    assert not control.slow_start
    limits = []
    for _ in range(3):
        round_of(control, 0.1)
        limits.append(control.limit)
    assert limits == [9, 10, 11]


def test_a_cut_below_the_start_recovers_one_per_round():
    control = Controller(8, 8)
    control.backed_off(control.epoch)
    control.backed_off(control.epoch)
    assert control.limit == 2
    limits = []
    for _ in range(8):
        round_of(control, 0.1)
        limits.append(control.limit)
    assert limits == [3, 4, 5, 6, 7, 8, 8, 8]


def test_calls_that_started_under_an_older_limit_do_not_complete_a_round():
    control = Controller(4, 32)
    old = control.epoch
    round_of(control, 0.1)
    assert control.limit == 8
    for _ in range(20):
        assert not control.succeeded(old, 5.0)  # stale: neither counted nor allowed to grow or hold
    round_of(control, 0.1)
    assert control.limit == 16


def test_without_adaptation_the_limit_never_moves_and_without_headroom_it_only_backs_off():
    fixed, pinned = Controller(4, 32, adaptive=False), Controller(4, 4)
    for control in (fixed, pinned):
        for _ in range(5):
            round_of(control, 0.1)
        assert control.limit == 4
    assert not fixed.backed_off(fixed.epoch) and fixed.limit == 4
    assert pinned.backed_off(pinned.epoch) and pinned.limit == 2


class Elastic(Backend):
    elastic = True


def limited(judge) -> Limited:
    layer = judge
    while not isinstance(layer, Limited):
        layer = layer.inner
    return layer


def test_elastic_backends_may_grow_to_four_times_the_start_by_default_others_not(judge_server):
    assert GROWTH == 4
    remote = make_judge(f"openai-compatible:m@{judge_server.url}", cache=False)
    assert (limited(remote).start, limited(remote).max_concurrency) == (16, 64)
    assert AnthropicJudge.elastic  # (building one would import its SDK, ~1 s)
    assert limited(compose(Elastic("m"), concurrency=5)).max_concurrency == 20
    for pinned in (make_judge(f"ollama:llama3@{judge_server.url}", cache=False),
                   make_judge(f"llamacpp:qwen@{judge_server.url}", cache=False),
                   compose(CallableJudge(lambda messages: "{}")), compose(Backend("in-process"))):
        assert limited(pinned).max_concurrency == limited(pinned).start == 16
    explicit = make_judge(f"openai-compatible:m@{judge_server.url}", cache=False, concurrency=4, max_concurrency=4)
    assert limited(explicit).max_concurrency == 4


def run_all(judge, n):
    async def batch():
        return await asyncio.gather(*(judge.judge(request(i)) for i in range(n)))
    return asyncio.run(batch())


def test_a_server_that_refuses_above_n_concurrent_calls_settles_the_limit_near_n_and_loses_no_call(make,
                                                                                                   judge_server):
    capacity = 10

    def reply(req):
        if judge_server.in_flight > capacity:  # this request included
            return status(429, retry_after=0.01)
        return delayed(obj(GOOD), 0.1)
    judge_server.reply = reply
    judge = make(concurrency=4, max_concurrency=64, retries=30)
    verdicts = run_all(judge, 120)
    assert all(v.error is None for v in verdicts)  # every call answered in the end
    answered = [r for r in judge_server.requests if r.status == 200]
    assert len(answered) == 120 and judge.stats.retries == len(judge_server.requests) - 120
    assert judge.stats.retries > 0  # the limit went past the capacity, and 429s brought it back
    assert capacity // 2 <= judge.stats.concurrency_limit <= capacity + 2


def test_a_single_slot_server_stops_growth_near_the_start(make, judge_server):
    lock = threading.Lock()

    def one_at_a_time(req):  # more calls in flight only wait longer
        with lock:
            time.sleep(0.05)  # long enough that queueing, not a loaded client's own overhead, sets the latency
        return obj(GOOD)
    judge_server.reply = one_at_a_time
    judge = make(concurrency=4, max_concurrency=64)
    run_all(judge, 48)
    # on a loaded client a doubling or two (4 -> 8 -> 16) may be taken before queueing shows in the
    # latency, and the last is taken back; growing on towards the cap (64) is the fault
    assert judge.stats.concurrency_limit <= 8 and judge.stats.peak_concurrency <= 16


@pytest.mark.parametrize("start", [4])
def test_a_server_that_keeps_answering_quickly_lets_the_default_limit_grow_to_its_cap(make, judge_server, start):
    judge_server.default = delayed(obj(GOOD), 0.2)  # 200 ms however many calls are in flight
    judge = make(concurrency=start)  # default cap: GROWTH x start
    run_all(judge, 100)
    assert judge.stats.concurrency_limit == GROWTH * start and judge_server.peak > 2 * start


def test_freed_slots_go_to_the_longest_waiting_calls_in_order():
    """Slots are handed over first come, first served. Two slots freed in one step woke three waiters
    (each release woke as many as were free, not counting those already woken); the third found no slot
    and went back to the end of the queue: in a run, traces then waited round after round behind later
    ones while the engine's window filled with finished traces and stopped reading (the in-flight
    calls fell from 64 to 20-40 several times a run)."""
    from assay.judge._limits import _Slots

    async def scenario() -> list[int]:
        slots = _Slots(3)
        for _ in range(3):
            await slots.acquire()
        order: list[int] = []

        async def call(i: int) -> None:
            await slots.acquire()
            order.append(i)
        calls = []
        for i in range(9):
            calls.append(asyncio.ensure_future(call(i)))
            await asyncio.sleep(0)  # queued in this order
        slots.release()
        slots.release()  # two replies handled in one step
        for _ in range(12):
            await asyncio.sleep(0)
            if slots.in_flight == slots.limit and len(order) < 9:
                slots.release()
        await asyncio.gather(*calls)
        return order
    assert asyncio.run(scenario()) == list(range(9))


def test_a_call_that_asks_again_right_after_its_release_waits_behind_the_queued_ones():
    """A metric's next call (or a retry) asking as soon as its last one ended must not take the slot it
    just handed to a waiting call."""
    from assay.judge._limits import _Slots

    async def scenario() -> list[str]:
        slots = _Slots(1)
        await slots.acquire()
        order: list[str] = []

        async def waiting() -> None:
            await slots.acquire()
            order.append("waiting")
            slots.release()
        queued = asyncio.ensure_future(waiting())
        await asyncio.sleep(0)
        slots.release()
        await slots.acquire()  # the same caller again, before the waiter has run
        order.append("again")
        slots.release()
        await queued
        return order
    assert asyncio.run(scenario()) == ["waiting", "again"]


def test_a_call_cancelled_after_it_was_handed_a_slot_passes_the_slot_on():
    from assay.judge._limits import _Slots

    async def scenario() -> tuple[bool, int]:
        slots = _Slots(1)
        await slots.acquire()
        cancelled = asyncio.ensure_future(slots.acquire())
        waiting = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0)
        slots.release()        # handed to `cancelled` ...
        cancelled.cancel()     # ... which is cancelled before it runs
        await asyncio.wait_for(waiting, 1)  # the slot reached the next waiter
        return cancelled.cancelled(), slots.in_flight
    was_cancelled, in_flight = asyncio.run(scenario())
    assert was_cancelled and in_flight == 1


def test_judge_calls_leave_in_the_order_the_traces_were_read(judge_server):
    """A run's traces reach the server in input order when each waits for a slot, so the oldest trace in
    the engine's window is never held back behind later ones."""
    from assay import Evaluation

    judge_server.default = delayed(obj({"evidence": [], "reasoning": "fine", "score": 4}), 0.1)  # (a server thread
    judge = make_judge(f"openai-compatible:m@{judge_server.url}", cache=False, concurrency=4,  # late to record its
                       adaptive=False)                                                         # request by 0.1 s: no)
    traces = [{"id": f"t{i:02d}", "turns": [{"input": f"question {i:02d}", "output": "an answer"}]} for i in range(24)]
    result = Evaluation(["holistic_llm_judge"], judge=judge).run(traces)
    assert result.run.n_traces == 24 and judge_server.peak <= 4
    asked = [int(json.dumps(r.json).split("question ")[1][:2]) for r in judge_server.requests]
    # up to four requests leave together and the server's threads may record them in any order among
    # themselves; a call that lost its place went behind every call waiting then (the unit tests above are exact)
    assert sorted(asked) == list(range(24)) and max(abs(at - i) for at, i in enumerate(asked)) < 4, asked
