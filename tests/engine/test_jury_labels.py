"""Juries decide label metrics by the majority label (ties: the lowest-weight label), with every
juror's label kept: failure_rate, goal_achievement_rate and a [[criteria]] label set, against the
scripted judge server (jurors told apart by model name)."""

from __future__ import annotations

import pytest

from assay import Evaluation
from assay.engine._jury import Jury, majority_label
from assay.judge import make_judge
from assay.metrics import Registry
from assay.metrics.criteria import criteria_metric
from tests.support.judge_server import JudgeServer, obj

CONVERSATION = {"id": "c", "turns": [
    {"input": "What's the population of Atlantis in 2024?", "output": "Atlantis is a mythical city."},
    {"input": "Thanks, that fixed my confusion.", "output": "Glad to help."}]}


def schema_name(request: dict) -> str:
    return ((request.get("response_format") or {}).get("json_schema") or {}).get("name", "")


def jury_of(server: JudgeServer, n: int, weights=None) -> Jury:
    return Jury([make_judge(f"openai-compatible:j{i}@{server.url}", cache=False, retries=0, reasks=0, timeout=5.0)
                 for i in range(1, n + 1)], weights)


def score(metric, labels: tuple[str, ...], answer, weights=None):
    """The jury's result for one trace: juror i answers ``answer(labels[i], request)``."""
    def reply(request: dict):
        return obj(answer(labels[int(request["model"][1:]) - 1], request))
    with JudgeServer(reply) as server:
        result = Evaluation([metric], judge=jury_of(server, len(labels), weights)).run([CONVERSATION])
    return next(iter(result.traces[0].metrics.values()))


def failure(label: str, request: dict) -> dict:
    return {"findings": [], "reason": f"juror says {label}", "verdict": label}


@pytest.mark.parametrize("labels, verdict, expected", [
    (("hallucination", "honest_fallback", "honest_fallback"), "honest_fallback", 1.0),  # the mean said 0.667
    (("stall", "honest_fallback", "stall"), "stall", 0.4),  # the mean said 0.6, mixed's weight: no juror chose it
    (("stall", "honest_fallback"), "stall", 0.4),  # a tie goes to the lower-weight label
    (("honest_fallback", "hallucination"), "hallucination", 0.0),
], ids=["majority-passes", "majority-stall", "tie-stall", "tie-hallucination"])
def test_failure_rate_takes_the_majority_label(labels, verdict, expected):
    r = score("failure_rate", labels, failure)
    assert r.score == expected and r.details["verdict"] == verdict
    assert r.passed is (expected >= 0.7)
    jury = r.details["jury"]
    assert jury["aggregate"] == "majority" and jury["verdict"] == verdict
    assert jury["verdicts"] == list(labels)  # every juror's label kept
    assert ("tie" in jury) is (len(labels) == 2)
    assert r.judge_calls == len(labels)


def goal(level: str, request: dict) -> dict:
    name = schema_name(request)
    if name == "SignalsVerdict":
        return {"positive_signals": [], "negative_signals": [], "unmet_requests": []}
    if name == "OutcomeVerdict":
        return {"reasoning": f"juror says {level}", "verdict": level}
    if name == "SummaryVerdict":
        return {"summary": "summary"}
    raise AssertionError(name)


@pytest.mark.parametrize("levels, verdict, expected", [
    (("fully", "minor", "fully"), "fully", 1.0),  # the mean said 0.767
    (("partial", "none", "none"), "none", 0.0),
    (("mostly", "minor"), "minor", 0.3),  # tie: the lower weight
], ids=["fully", "none", "tie"])
def test_goal_achievement_rate_takes_the_majority_level(levels, verdict, expected):
    metric = {"name": "goal_achievement_rate", "user_goal": "Learn about Atlantis"}
    r = score(metric, levels, goal)
    assert r.score == pytest.approx(expected) and r.details["verdict"] == verdict
    assert r.details["jury"]["verdicts"] == list(levels)


def test_a_criteria_label_set_takes_the_majority_label():
    cls = criteria_metric("tone3", "Is the tone right?", labels={"good": 1.0, "ok": 0.5, "bad": 0.0},
                          threshold=0.5, registry=Registry())

    def label(verdict: str, request: dict) -> dict:
        return {"evidence": [], "reasoning": f"juror says {verdict}", "verdict": verdict}
    r = score(cls(), ("good", "bad", "bad"), label)  # the mean said 0.333
    assert r.score == 0.0 and r.details["verdict"] == "bad" and r.passed is False
    r = score(cls(), ("good", "ok", "good"), label)
    assert r.score == 1.0 and r.details["verdict"] == "good"
    # weights decide: j1 (weight 2) outvotes the other two together (1 + 0.5)
    r = score(cls(), ("ok", "good", "good"), label, weights=[2, 1, 0.5])
    assert r.score == 0.5 and r.details["verdict"] == "ok"


def test_majority_label_tie_rule():
    weights = {"hallucination": 0.0, "stall": 0.4, "mixed": 0.6, "honest_fallback": 1.0, "not_applicable": 1.0}
    assert majority_label({"honest_fallback": 1, "stall": 1}, weights) == "stall"
    assert majority_label({"not_applicable": 1, "honest_fallback": 1}, weights) == "honest_fallback"  # listed first
    assert majority_label({"mixed": 2, "hallucination": 1}, weights) == "mixed"
