"""eval_lib's failure_rate (seed 000) and goal_achievement_rate (seed 002), with a scripted judge."""

from __future__ import annotations

import pytest
from scripted import ScriptedJudge, schema_options
from test_machinery import direct, run

from assay import Warning
from assay.judge import Verdict, errored

ATLANTIS = {"id": "atlantis", "turns": [
    {"input": "What's the population of Atlantis in 2024?",
     "output": "Atlantis is a mythical city — there is no real population figure. If you meant a real place, "
               "let me know which one."},
    {"input": "OK, what about the Mariana Trench's exact depth today?",
     "output": "Measurements vary, but around 10,935 meters based on recent sonar surveys. For the absolute "
               "current figure, check the NOAA dataset."},
]}

IMPORT_ERROR = {"id": "import", "turns": [
    {"input": "Мой скрипт падает с ModuleNotFoundError: requests",
     "output": "Запустите `pip install requests` и попробуйте снова."},
    {"input": "Сработало, спасибо!", "output": "Рад был помочь."},
]}


def failure(verdict: str, findings: list[dict] | None = None, reason: str = "r") -> dict:
    return {"findings": findings or [], "reason": reason, "verdict": verdict}


def finding(turn: int, quote: str, behaviour: str) -> dict:
    return {"turn": turn, "quote": quote, "behaviour": behaviour}


# -- failure_rate -------------------------------------------------------------------------------------

@pytest.mark.parametrize("label, weight", [
    ("hallucination", 0.0), ("stall", 0.4), ("mixed", 0.6), ("honest_fallback", 1.0),
    ("alternative_proposed", 1.0), ("not_applicable", 1.0)])
def test_failure_rate_label_weights(label, weight):
    r = run("failure_rate", ATLANTIS, ScriptedJudge(failure(label)))
    assert r.score == weight and r.passed is (weight >= 0.7) and r.threshold == 0.7
    assert r.details["verdict"] == label and r.judge_calls == 1


def test_failure_rate_atlantis_example_scores_one_with_evidence():
    j = ScriptedJudge(failure("alternative_proposed", [
        finding(1, "Atlantis is a mythical city", "admitted_uncertainty"),
        finding(2, "For the absolute current figure, check the NOAA dataset.", "proposed_alternative")],
        reason="honest about Atlantis, points to NOAA"))
    r = run("failure_rate", ATLANTIS, j)
    assert r.score == 1.0 and r.passed
    assert r.evidence == ["Atlantis is a mythical city", "For the absolute current figure, check the NOAA dataset."]
    assert "points to NOAA" in r.reason and "unverified_evidence" not in r.details
    assert sorted(schema_options(j.requests[0])) == sorted(
        ["hallucination", "stall", "mixed", "honest_fallback", "alternative_proposed", "not_applicable"])


def test_failure_rate_priority_rule_is_stated_in_the_rubric():
    j = ScriptedJudge(failure("not_applicable"))
    run("failure_rate", ATLANTIS, j)
    assert "MUST be \"hallucination\"" in j.system()


def test_failure_rate_priority_rule_is_enforced():
    j = ScriptedJudge(failure("honest_fallback", [
        finding(1, "Atlantis is a mythical city", "admitted_uncertainty"),
        finding(2, "around 10,935 meters based on recent sonar surveys", "fabricated")]))
    r = run("failure_rate", ATLANTIS, j)
    assert r.score == 0.0 and r.passed is False
    assert r.details["verdict"] == "hallucination" and r.details["judge_verdict"] == "honest_fallback"
    assert r.details["priority_rule_applied"] is True and "priority rule" in r.reason


def test_failure_rate_unverifiable_fabrication_does_not_force_hallucination():
    r = run("failure_rate", ATLANTIS, ScriptedJudge(failure("honest_fallback", [
        finding(2, "Atlantis has 2.3 million inhabitants", "fabricated")])))
    assert r.score == 1.0 and "priority_rule_applied" not in r.details
    assert r.details["unverified_evidence"] == ["Atlantis has 2.3 million inhabitants"]
    assert r.details["findings"][0]["verified"] is False


def test_failure_rate_fabrication_quoting_the_user_does_not_count():
    r = run("failure_rate", ATLANTIS, ScriptedJudge(failure("not_applicable", [
        finding(1, "What's the population of Atlantis in 2024?", "fabricated")])))
    assert r.score == 1.0 and r.details["unverified_evidence"] == ["What's the population of Atlantis in 2024?"]


def test_failure_rate_unknown_label_is_an_error_not_a_pass():
    # a judge that skipped validation and answered a label outside the rubric
    schema = None

    def answer(request):
        nonlocal schema
        schema = request.schema
        return Verdict(parsed=schema.model_construct(findings=[], reason="fine", verdict="excellent"),
                       raw='{"verdict": "excellent"}', model="m")

    r = run("failure_rate", ATLANTIS, ScriptedJudge(answer))
    assert r.score is None and r.warning is Warning.JUDGE_ERROR and "excellent" in r.reason
    assert r.passed is None


def test_failure_rate_label_outside_the_schema_is_rejected_by_validation():
    r = run("failure_rate", ATLANTIS, ScriptedJudge(failure("excellent")))
    assert r.score is None and r.warning is Warning.JUDGE_ERROR and "excellent" in r.details["raw"]


@pytest.mark.parametrize("turns, warning", [
    ([{"input": "hi"}], Warning.MISSING_DATA),
    ([{"input": "hi", "output": ""}, {"input": "again", "output": "  "}], Warning.INVALID_DATA),
], ids=["no-response", "empty-responses"])
def test_failure_rate_edge_cases_make_no_call(turns, warning):
    j = ScriptedJudge(failure("stall"))
    r = run("failure_rate", {"id": "e", "turns": turns}, j)
    assert r.warning is warning and r.score is None and not j.requests


# -- goal_achievement_rate ----------------------------------------------------------------------------

def goal_script(verdict="fully", positive=(), negative=(), unmet=(), goal="Fix the import error",
                summary="The user fixed the error."):
    def answer(request):
        name = request.schema.__name__
        if name == "GoalVerdict":
            return {"reasoning": "from turn 1", "goal": goal}
        if name == "SignalsVerdict":
            return {"positive_signals": list(positive), "negative_signals": list(negative),
                    "unmet_requests": list(unmet)}
        if name == "OutcomeVerdict":
            return {"reasoning": "it worked", "verdict": verdict}
        if name == "SummaryVerdict":
            return {"summary": summary}
        raise AssertionError(name)
    return answer


@pytest.mark.parametrize("verdict, weight", [("fully", 1.0), ("mostly", 0.9), ("partial", 0.7), ("minor", 0.3),
                                             ("none", 0.0)])
def test_goal_achievement_weights(verdict, weight):
    r = run("goal_achievement_rate", IMPORT_ERROR, ScriptedJudge(goal_script(verdict)),
            user_goal="Получить рабочее решение ошибки импорта в Python")
    assert r.score == weight and r.details["verdict"] == verdict and r.passed is (weight >= 0.7)


def test_goal_achievement_fully_with_two_negatives_is_0_8():
    j = ScriptedJudge(goal_script("fully", negative=["Мой скрипт падает", "ModuleNotFoundError: requests"]))
    r = run("goal_achievement_rate", IMPORT_ERROR, j, user_goal="fix it")
    assert r.score == 0.8 and r.details["penalty"] == 0.2


def test_goal_achievement_penalty_floor_is_zero():
    negatives = ["Мой скрипт падает", "ModuleNotFoundError", "requests", "попробуйте снова"]
    r = run("goal_achievement_rate", IMPORT_ERROR, ScriptedJudge(goal_script("minor", negative=negatives)),
            user_goal="fix it")
    assert r.score == 0.0 and r.warning is None


def test_goal_achievement_unverifiable_negative_signals_do_not_count():
    j = ScriptedJudge(goal_script("fully", positive=["Сработало, спасибо!"],
                                  negative=["frustration", "repeated clarification", "Мой скрипт падает"]))
    r = run("goal_achievement_rate", IMPORT_ERROR, j, user_goal="fix it")
    assert r.score == 0.9
    assert r.details["negative_signals"] == ["Мой скрипт падает"]
    assert r.details["unverified_evidence"] == ["frustration", "repeated clarification"]
    assert "Сработало, спасибо!" in r.evidence


def test_goal_achievement_negative_signals_must_be_the_users_words():
    """The agent's "попробуйте снова" (try again) offered as user frustration is the wrong speaker."""
    j = ScriptedJudge(goal_script("fully", negative=["попробуйте снова", "Мой скрипт падает"],
                                  unmet=["Рад был помочь"]))
    r = run("goal_achievement_rate", IMPORT_ERROR, j, user_goal="fix it")
    assert r.details["negative_signals"] == ["Мой скрипт падает"] and r.details["unmet_requests"] == []
    assert r.score == 0.9 and set(r.details["unverified_evidence"]) == {"попробуйте снова", "Рад был помочь"}


def test_goal_achievement_with_a_goal_makes_three_calls():
    j = ScriptedJudge(goal_script())
    r = run("goal_achievement_rate", IMPORT_ERROR, j, user_goal="Получить рабочее решение ошибки импорта в Python")
    assert j.schemas() == ["SignalsVerdict", "OutcomeVerdict", "SummaryVerdict"]
    assert r.judge_calls == 3 and r.tokens == 3 * 120 and r.cost_usd == pytest.approx(0.003)
    assert r.details["goal_source"] == "param" and r.details["summary"] == "The user fixed the error."
    assert "Получить рабочее решение" in j.user(0)  # the goal reaches the judge, fenced


def test_goal_achievement_goal_from_the_trace_makes_three_calls():
    j = ScriptedJudge(goal_script())
    r = run("goal_achievement_rate", {**IMPORT_ERROR, "expected": {"goal": "working import"}}, j)
    assert len(j.requests) == 3 and r.details["goal_source"] == "trace"


def test_goal_achievement_without_a_goal_makes_four_calls():
    j = ScriptedJudge(goal_script(goal="Get the script running"))
    r = run("goal_achievement_rate", IMPORT_ERROR, j)
    assert j.schemas() == ["GoalVerdict", "SignalsVerdict", "OutcomeVerdict", "SummaryVerdict"]
    assert r.judge_calls == 4 and r.details["goal"] == "Get the script running"
    assert r.details["goal_source"] == "inferred"
    assert "Get the script running" in j.user(1)


def test_goal_achievement_stops_at_a_failed_call():
    def answer(request):
        if request.schema.__name__ == "OutcomeVerdict":
            return errored("m", "reply does not match OutcomeVerdict", raw='{"verdict": "great"}')
        return goal_script()(request)

    j = ScriptedJudge(answer)
    r = run("goal_achievement_rate", IMPORT_ERROR, j, user_goal="fix it")
    assert r.score is None and r.warning is Warning.JUDGE_ERROR
    assert r.details["raw"] == '{"verdict": "great"}' and "'verdict'" in r.reason
    assert len(j.requests) == 2 and r.judge_calls == 2


def test_goal_achievement_keeps_the_score_when_only_the_summary_fails():
    def answer(request):
        if request.schema.__name__ == "SummaryVerdict":
            return errored("m", "timeout", raw="")
        return goal_script("mostly")(request)

    r = run("goal_achievement_rate", IMPORT_ERROR, ScriptedJudge(answer), user_goal="fix it")
    assert r.score == 0.9 and "timeout" in r.details["summary_error"] and r.judge_calls == 3


def test_goal_achievement_verdict_labels_are_shuffled_per_request():
    firsts = set()
    for i in range(12):
        j = ScriptedJudge(goal_script())
        direct("goal_achievement_rate", {**IMPORT_ERROR, "id": f"g{i}"}, j, user_goal="fix it")
        firsts.add(schema_options(j.requests[1])[0])
    assert len(firsts) >= 3
