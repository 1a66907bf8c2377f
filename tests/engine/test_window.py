"""The engine's window: traces in flight, and the results held so they are written in input order.

A slow judge call holds back the results after it (they come out in input order), not the scoring of the
traces after those: reading goes on while results wait behind it, up to ``HELD`` x the window.
"""

from __future__ import annotations

import threading

import pytest

from assay import Evaluation
from assay.engine._run import HELD
from assay.judge import make_judge
from tests.support.judge_server import obj

VERDICT = {"evidence": [], "reasoning": "fine", "score": 4}


def traces(n: int) -> list[dict]:
    return [{"id": f"t{i:03d}", "turns": [{"input": f"question {i:03d}?", "output": f"answer {i:03d}"}]}
            for i in range(n)]


def held_first(judge_server, others_before_release: int, timeout: float):
    """A server that holds the first trace's call until it has seen *others_before_release* other calls (or
    *timeout* passed); returns what it saw: {"others": calls seen while it held it, "released_by": why}."""
    seen = {"others": 0, "released_by": None}
    enough = threading.Event()
    lock = threading.Lock()

    def reply(request):
        if "question 000?" in str(request.get("messages")):
            seen["released_by"] = "others" if enough.wait(timeout) else "timeout"
            return obj(VERDICT)
        with lock:
            if not enough.is_set() and seen["released_by"] is None:
                seen["others"] += 1
                if seen["others"] >= others_before_release:
                    enough.set()
        return obj(VERDICT)
    judge_server.reply = reply
    return seen


@pytest.mark.parametrize("cancel", [None, threading.Event()], ids=["api", "cli"])
def test_traces_after_a_slow_call_are_scored_while_it_waits(judge_server, cancel):
    """With a window of 4, the first trace's call held: the other traces go on being scored (it was 3 of
    them, then the run waited for the held call: here a 10 s timeout), and results still come in order."""
    seen = held_first(judge_server, others_before_release=20, timeout=10)
    judge = make_judge(f"openai-compatible:m@{judge_server.url}", cache=False, concurrency=4, adaptive=False)
    result = Evaluation(["holistic_llm_judge"], judge=judge, window=4, cancel=cancel).run(traces(40))
    assert seen == {"others": 20, "released_by": "others"}
    assert [t.id for t in result.traces] == [f"t{i:03d}" for i in range(40)]
    assert all(t.metrics["holistic_llm_judge"].score is not None for t in result.traces)


@pytest.mark.parametrize("cancel", [None, threading.Event()], ids=["api", "cli"])
def test_results_held_behind_a_slow_call_are_bounded(judge_server, cancel):
    """Behind a call that does not end, reading stops once HELD x the window results wait for it: memory
    stays bounded however long the call takes."""
    seen = held_first(judge_server, others_before_release=10_000, timeout=2.0)  # released by the timeout
    judge = make_judge(f"openai-compatible:m@{judge_server.url}", cache=False, concurrency=2, adaptive=False)
    result = Evaluation(["holistic_llm_judge"], judge=judge, window=2, cancel=cancel).run(traces(HELD * 2 + 20))
    assert seen["released_by"] == "timeout"
    assert seen["others"] == HELD * 2 - 1  # the held trace and the 31 read after it: the most kept at once
    assert [t.id for t in result.traces] == [f"t{i:03d}" for i in range(HELD * 2 + 20)]
