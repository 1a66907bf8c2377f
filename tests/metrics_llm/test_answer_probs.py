"""Yes/no answers decided by thresholds on the judge's P(yes) (compact form), against the scripted
judge server returning chosen log-probabilities; the greedy token decides without them."""

from __future__ import annotations

import json
import math

import pytest
from test_e2e import judge_for, schema_name

from assay import evaluate
from tests.support.judge_server import scored

ln = math.log

STALL_LIKE = {"id": "flag", "turns": [{
    "input": "Which release added the --frozen flag?",
    "output": "I'm not sure which release added that flag; the project's changelog lists it per version."}]}


def failure_replies(with_logprobs: bool = True):
    """The judge answers no to everything on the natural phrasing, but with P(admits) 0.30 and P(points) 0.45."""
    def reply(request: dict):
        name = schema_name(request)
        if name == "ReplyCheck":
            if not with_logprobs:
                return json.dumps({"answers": False, "admits": False, "points": False, "evasive": True})
            return scored('{"answers":false,"admits":', ("false", ln(0.7), {"true": ln(0.3)}),
                          ',"points":', ("false", ln(0.55), {"true": ln(0.45)}), ',"evasive":true}')
        if name == "Reference":
            return scored('{"answer":"I cannot know that.","known":false}') if with_logprobs \
                else json.dumps({"answer": "I cannot know that.", "known": False})
        raise AssertionError(f"unexpected call {name}")
    return reply


def score(judge_server, **options):
    judge = judge_for(judge_server, prompt_style="compact", **options)
    return evaluate([STALL_LIKE], ["failure_rate"], judge=judge).traces[0].metrics["failure_rate"]


def test_without_thresholds_the_greedy_answers_decide_and_the_probabilities_are_reported(judge_server):
    judge_server.reply = failure_replies()
    r = score(judge_server, logprobs=True)
    assert r.details["verdict"] == "stall" and r.score == pytest.approx(0.4)
    (finding,) = r.details["findings"]
    assert finding["p"]["admits"] == pytest.approx(0.3) and finding["p"]["points"] == pytest.approx(0.45)
    assert finding["p"]["answers"] == 0.0 and finding["p"]["known"] == 0.0
    assert r.details["p"]["turn 1"]["admits"] == pytest.approx(0.3)
    assert "threshold_flips" not in r.details


def test_a_threshold_flips_an_answer_the_greedy_token_would_not(judge_server):
    judge_server.reply = failure_replies()
    r = score(judge_server, logprobs=True, thresholds={"failure_rate.admits": 0.25, "failure_rate.points": 0.4})
    # admits and points now yes: an admission with a pointer is an alternative, decided by the sheet alone
    assert r.details["verdict"] == "alternative_proposed" and r.score == 1.0
    assert r.details["findings"][0]["behaviour"] == "proposed_alternative"
    assert r.details["findings"][0]["checks"]["admits"] is True
    assert r.details["threshold_flips"] == [
        "turn 1: admits no -> yes (P(yes) 0.300, threshold 0.25)",
        "turn 1: points no -> yes (P(yes) 0.450, threshold 0.4)"]
    assert [schema_name(q.json) for q in judge_server.requests] == ["ReplyCheck"]  # no reference needed now


def test_a_threshold_above_p_keeps_the_answer(judge_server):
    judge_server.reply = failure_replies()
    r = score(judge_server, logprobs=True, thresholds={"failure_rate.admits": 0.5})
    assert r.details["verdict"] == "stall" and "threshold_flips" not in r.details


def test_without_probabilities_thresholds_leave_the_greedy_answer(judge_server):
    judge_server.reply = failure_replies(with_logprobs=False)
    r = score(judge_server, logprobs=True, thresholds={"failure_rate.admits": 0.01})
    assert r.details["verdict"] == "stall" and "p" not in r.details and "p" not in r.details["findings"][0]
    assert "threshold_flips" not in r.details


BROKEN = {"id": "broken", "expected": {"goal": "Get the import error fixed."}, "turns": [
    {"input": "My script fails with ModuleNotFoundError: requests", "output": "Try pip install requests."},
    {"input": "OK that worked, thanks.", "output": "Glad it helped."},
]}


def test_goal_satisfied_decided_by_its_threshold(judge_server):
    def reply(request: dict):
        if schema_name(request) == "GoalCheck":
            return scored('{"satisfied":', ("false", ln(0.6), {"true": ln(0.4)}),
                          ',"got_everything":', ("true", ln(0.9), {"false": ln(0.1)}), ',"negative_turns":[]}')
        return json.dumps({"got_something": True, "got_essentials": True, "got_everything": False})
    judge_server.reply = reply
    judge = judge_for(judge_server, prompt_style="compact", logprobs=True)
    r = evaluate([BROKEN], ["goal_achievement_rate"], judge=judge).traces[0].metrics["goal_achievement_rate"]
    assert r.details["verdict"] == "partial" and r.details["p"]["verdict"]["satisfied"] == pytest.approx(0.4)
    judge = judge_for(judge_server, prompt_style="compact", logprobs=True,
                      thresholds={"goal_achievement_rate.satisfied": 0.35})
    r = evaluate([BROKEN], ["goal_achievement_rate"], judge=judge).traces[0].metrics["goal_achievement_rate"]
    assert r.details["verdict"] == "fully" and r.judge_calls == 1  # satisfied now: no delivery sheet


def test_the_delivery_sheet_decides_got_everything_by_its_own_threshold(judge_server):
    """got_everything is asked on both sheets; ``delivery.got_everything`` decides the delivery sheet's,
    the plain key the first sheet's (and the delivery sheet's when it has none of its own)."""
    def reply(request: dict):
        if schema_name(request) == "GoalCheck":
            return scored('{"satisfied":', ("false", ln(0.9), {"true": ln(0.1)}),
                          ',"got_everything":', ("false", ln(0.6), {"true": ln(0.4)}), ',"negative_turns":[]}')
        return scored('{"got_something":true,"got_essentials":true,"got_everything":',
                      ("false", ln(0.7), {"true": ln(0.3)}), '}')
    judge_server.reply = reply

    def verdict(thresholds: dict[str, float]) -> tuple[str, list[str]]:
        judge = judge_for(judge_server, prompt_style="compact", logprobs=True, thresholds=thresholds)
        r = evaluate([BROKEN], ["goal_achievement_rate"], judge=judge).traces[0].metrics["goal_achievement_rate"]
        return r.details["verdict"], r.details.get("threshold_flips", [])

    assert verdict({})[0] == "partial"
    level, flips = verdict({"goal_achievement_rate.got_everything": 0.25})  # both sheets: everything yes
    assert level == "fully" and [f.split(":")[0] for f in flips] == ["verdict", "delivery"]
    level, flips = verdict({"goal_achievement_rate.got_everything": 0.25,
                            "goal_achievement_rate.delivery.got_everything": 0.5})
    assert level == "partial" and flips == ["verdict: got_everything no -> yes (P(yes) 0.400, threshold 0.25)"]
    level, flips = verdict({"goal_achievement_rate.delivery.got_everything": 0.25})  # the first sheet's stays greedy
    assert level == "fully" and flips == ["delivery: got_everything no -> yes (P(yes) 0.300, threshold 0.25)"]


def test_a_threshold_names_a_question_the_metric_asks(judge_server):
    from assay import Evaluation
    from assay.errors import ConfigError

    ok = judge_for(judge_server, prompt_style="compact", logprobs=True,
                   thresholds={"goal_achievement_rate.delivery.got_everything": 0.5})
    Evaluation(["goal_achievement_rate"], judge=ok)
    bad = judge_for(judge_server, prompt_style="compact", logprobs=True,
                    thresholds={"goal_achievement_rate.delivery.satisfied": 0.5})
    with pytest.raises(ConfigError, match="no yes/no question 'delivery.satisfied'"):
        Evaluation(["goal_achievement_rate"], judge=bad)


def test_a_judge_card_records_the_thresholds_only_when_set(judge_server):
    from assay.analysis._calibrate import judge_identity

    assert "thresholds" not in judge_identity(judge_for(judge_server, logprobs=True))
    decided = judge_for(judge_server, logprobs=True, thresholds={"failure_rate.admits": 0.3})
    assert judge_identity(decided)["thresholds"] == {"failure_rate.admits": 0.3}
