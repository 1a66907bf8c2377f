"""Test-retest with --repeats against a scripted server that answers differently per repeat."""

from __future__ import annotations

import collections
import threading

import pytest

from assay import Evaluation
from assay.judge import make_judge
from tests.support.judge_server import JudgeServer, obj

# what the judge says on each trace, in the order its repeats arrive (repeats run concurrently,
# so which repeat gets which answer varies; the multiset per trace does not)
ANSWERS = {
    "01": ["resolved", "resolved", "resolved"],
    "02": ["resolved", "resolved", "unresolved"],           # one flip; majority pass though the mean (.67) fails
    "03": ["unresolved", "unresolved", "unresolved"],
    "04": ["partially_resolved", "unresolved", "unresolved"],  # labels differ, pass/fail does not
}


def trace(case: str) -> dict:
    return {"id": f"t{case}", "turns": [{"input": f"Where is case-{case} ?", "output": f"Checking case-{case} now."}]}


def judge_for(server: JudgeServer):
    return make_judge(f"openai-compatible:scripted@{server.url}", cache=False, retries=0, reasks=0, timeout=5.0)


def per_repeat_server() -> JudgeServer:
    seen: collections.Counter = collections.Counter()
    lock = threading.Lock()

    def reply(request: dict):
        user = request["messages"][-1]["content"]
        case = next(c for c in ANSWERS if f"case-{c} " in user)
        with lock:
            i = seen[case]
            seen[case] += 1
        return obj({"evidence": [], "reasoning": f"repeat {i}", "verdict": ANSWERS[case][i]})

    return JudgeServer(reply)


def test_flip_counts_majority_verdict_and_self_agreement():
    with per_repeat_server() as server:
        res = Evaluation(["resolution"], judge=judge_for(server), repeats=3).run([trace(c) for c in ANSWERS])
        assert len(server.requests) == 12
    by_id = {t.id: t.metrics["resolution"] for t in res.traces}
    assert [by_id[f"t{c}"].details["flips"] for c in ANSWERS] == [0, 1, 0, 0]
    assert [by_id[f"t{c}"].details["unstable"] for c in ANSWERS] == [False, True, False, False]
    two = by_id["t02"]
    assert two.score == pytest.approx(2 / 3) and two.passed is True  # the majority, not the mean (< .7)
    assert sorted(two.details["repeat_passed"]) == [False, True, True]
    assert [by_id[f"t{c}"].passed for c in ANSWERS] == [True, True, False, False]
    assert res.summary["resolution"].n_passed == 2
    rt = res.statistics["test_retest"]["resolution"]
    assert (rt["n"], rt["unstable"], rt["flips"]) == (4, 1, 1) and rt["unstable_share"] == 0.25
    # nominal alpha over the labels: D_o = (0 + 4/2 + 0 + 4/2) / 12 = 1/3; pooled resolved 5, unresolved 6,
    # partially_resolved 1: D_e = 2 (30 + 5 + 6) / (12 x 11) = 82/132; alpha = 1 - (1/3) / (82/132) = 19/41
    assert rt["alpha_level"] == "nominal" and rt["self_alpha"] == pytest.approx(19 / 41)


def test_a_judge_that_picks_the_first_listed_option_has_low_position_agreement():
    def first_listed(request: dict):
        user = request["messages"][-1]["content"]
        block = user.split("The verdict options:", 1)[1]
        first = next(line for line in block.splitlines() if ":" in line)
        return obj({"evidence": [], "reasoning": "first", "verdict": first.lstrip("-* ").split(":")[0].strip()})

    with JudgeServer(first_listed) as server:
        res = Evaluation(["resolution"], judge=judge_for(server), repeats=4).run([trace(c) for c in ANSWERS])
    rt = res.statistics["test_retest"]["resolution"]
    agree = pairs = 0
    for t in res.traces:
        per = t.metrics["resolution"].details["per_repeat_details"]
        for i in range(len(per)):
            for j in range(i + 1, len(per)):
                oi, oj = per[i]["option_order"]["verdict"], per[j]["option_order"]["verdict"]
                if oi != oj:
                    pairs += 1
                    agree += oi[0] == oj[0]  # the judge's answer is the first option shown
                assert per[i]["verdict"] == oi[0]
    assert pairs > 0 and rt["position_pairs"] == pairs
    assert rt["position_agreement"] == pytest.approx(agree / pairs) and rt["position_agreement"] < 0.7


def test_one_repeat_reports_no_test_retest(judge_server):
    judge_server.reply = lambda r: obj({"evidence": [], "reasoning": "ok", "verdict": "resolved"})
    res = Evaluation(["resolution"], judge=judge_for(judge_server)).run([trace("01")])
    assert "test_retest" not in res.statistics and "flips" not in res.traces[0].metrics["resolution"].details
