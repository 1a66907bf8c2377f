"""The compact prompt form and the ordinal option order, checked on what reaches the scripted server."""

from __future__ import annotations

import json
import re

import pytest
from test_e2e import judge_for, schema_name
from test_eval_lib import ATLANTIS

from assay import evaluate
from assay.errors import ConfigError
from assay.judge import auto_style, make_judge, ordinal_order, prompt_style
from assay.metrics._judged import output_bound
from assay.metrics.eval_lib import GoalCheck, ReplyCheck, failure_label, goal_level, reply_behaviour
from tests.support.judge_server import delayed

BROKEN = {"id": "broken", "expected": {"goal": "Get the import error fixed."}, "turns": [
    {"input": "My script fails with ModuleNotFoundError: requests", "output": "Reinstall Python."},
    {"input": "That did not help, it still fails with the same error!", "output": "Try pip install requests."},
    {"input": "OK that worked, thanks.", "output": "Glad it helped."},
]}


def system(request) -> str:
    return request.json["messages"][0]["content"]


def user(request) -> str:
    return request.json["messages"][1]["content"]


def sent_schema(request) -> dict:
    return request.json["response_format"]["json_schema"]["schema"]


@pytest.mark.parametrize("model, style", [
    ("local:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "compact"), ("local:judge.gguf", "compact"),
    ("ollama:qwen2.5:1.5b", "compact"), ("ollama:llama3.2:3b", "compact"), ("Qwen/Qwen2.5-7B-Instruct", "compact"),
    ("openai-compatible:HuggingFaceTB/SmolLM2-360M-Instruct", "compact"), ("openai:gpt-4o-mini", "full"),
    ("anthropic:claude-3-5-sonnet-latest", "full"), ("Qwen/Qwen2.5-72B-Instruct", "full"),
    ("openai-compatible:scripted", "full"), ("llama3.1:70b", "full")])
def test_auto_style_goes_by_the_model_name(model, style):
    assert auto_style(model) == style


def test_the_style_is_a_setting_of_the_judge_explicit_or_auto(judge_server):
    auto = judge_for(judge_server)
    assert prompt_style(auto) == "full" and ordinal_order(auto) == "shuffled"
    compact = judge_for(judge_server, prompt_style="compact")
    assert prompt_style(compact) == "compact" and ordinal_order(compact) == "natural"
    both = judge_for(judge_server, prompt_style="compact", ordinal_order="reversed")
    assert ordinal_order(both) == "reversed"
    assert prompt_style(None) == "full"
    with pytest.raises(ConfigError, match="unknown prompt style 'compakt'.*Did you mean 'compact'"):
        judge_for(judge_server, prompt_style="compakt")
    with pytest.raises(ConfigError, match="unknown ordinal order 'sorted'"):
        judge_for(judge_server, ordinal_order="sorted")


def test_dry_run_of_a_local_gguf_resolves_compact():
    assert prompt_style(make_judge("local:/nowhere/model.gguf", dry_run=True, cache=False)) == "compact"


def sheet(knowable=True, answers=False, admits=False, points=False, evasive=False) -> str:
    return json.dumps({"knowable": knowable, "answers": answers, "admits": admits, "points": points,
                       "evasive": evasive})


def test_failure_rate_compact_checks_each_reply_in_its_own_call_and_derives_the_label(judge_server):
    judge_server.reply = lambda request: sheet(knowable=False, admits=True) \
        if "TURN_1_AGENT" in request["messages"][1]["content"] else sheet(knowable=False, points=True)
    judge = judge_for(judge_server, prompt_style="compact", concurrency=1)
    results = evaluate([ATLANTIS, {**ATLANTIS, "id": "again"}], ["failure_rate"], judge=judge)
    r = results.traces[0].metrics["failure_rate"]
    assert r.score == 1.0 and r.details["prompt_style"] == "compact" and r.judge_calls == 2
    assert r.details["verdict"] == "alternative_proposed" and r.details["label_rule"] == "per-reply checks"
    assert [(f["turn"], f["behaviour"]) for f in r.details["findings"]] == [
        (1, "admitted_uncertainty"), (2, "proposed_alternative")]
    assert r.reason == "alternative_proposed: turn 1 admitted_uncertainty; turn 2 proposed_alternative"
    # the agent's reply of each classified turn is the evidence
    assert r.evidence[0].startswith("Atlantis is a mythical city") and "NOAA" in r.evidence[1]
    first, second, third, _ = judge_server.requests
    # each call shows one turn only: its user message and its reply
    assert "TURN_1_USER" in user(first) and "TURN_1_AGENT" in user(first) and "TURN_2" not in user(first)
    assert "TURN_2_AGENT" in user(second) and "TURN_1" not in user(second)
    # one static system message for every call of the metric (the reusable prefix)
    assert system(first) == system(second) == system(third) and "Answer each question with true or false" in system(first)
    assert "- knowable: Could the question be answered" in system(first)
    assert list(sent_schema(first)["properties"]) == ["knowable", "answers", "admits", "points", "evasive"]
    assert first.json["max_tokens"] == output_bound(ReplyCheck) and first.json["max_tokens"] <= 64


@pytest.mark.parametrize("behaviours, label", [
    (["answered"], "not_applicable"), (["answered", "answered"], "not_applicable"),
    (["admitted_uncertainty"], "honest_fallback"), (["admitted_uncertainty", "answered"], "honest_fallback"),
    (["proposed_alternative"], "alternative_proposed"),
    (["admitted_uncertainty", "proposed_alternative"], "alternative_proposed"),
    (["stalled"], "stall"), (["stalled", "stalled"], "stall"),
    (["admitted_uncertainty", "stalled"], "mixed"), (["answered", "stalled"], "mixed"),
    (["proposed_alternative", "stalled"], "mixed"),
    (["fabricated"], "hallucination"), (["answered", "admitted_uncertainty", "fabricated"], "hallucination"),
    (["stalled", "fabricated"], "hallucination")])
def test_the_compact_label_follows_from_the_behaviours_by_the_rubric_rules(behaviours, label):
    assert failure_label(behaviours) == label


@pytest.mark.parametrize("answers, behaviour", [
    (dict(knowable=False, answers=True, points=True), "fabricated"),  # a definite answer to the unknowable
    (dict(knowable=True, answers=True), "answered"),
    (dict(knowable=False, points=True, admits=True), "proposed_alternative"),
    (dict(knowable=False, admits=True), "admitted_uncertainty"),
    (dict(knowable=False, evasive=True), "stalled"), (dict(knowable=True), "stalled")])
def test_a_reply_behaviour_follows_from_its_question_sheet(answers, behaviour):
    assert reply_behaviour(ReplyCheck(**{"knowable": True, "answers": False, "admits": False, "points": False,
                                         "evasive": False, **answers})) == behaviour


def test_failure_rate_compact_a_fabrication_anywhere_is_a_hallucination(judge_server):
    # keyed by the turn shown, not by arrival: the per-reply calls are in flight together
    judge_server.reply = lambda request: sheet(knowable=False, answers=True) \
        if "TURN_2_AGENT" in request["messages"][1]["content"] else sheet(knowable=False, admits=True)
    r = evaluate([ATLANTIS], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["failure_rate"]
    assert r.score == 0.0 and r.details["verdict"] == "hallucination"
    assert len(r.evidence) == 1 and "10,935" in r.evidence[0]  # the fabricated reply is the evidence


def test_failure_rate_compact_a_failed_call_fails_the_trace_with_the_raw_reply(judge_server):
    # turn 2's reply fails after turn 1's is in (the calls run at once): both calls are counted
    judge_server.reply = lambda request: delayed(json.dumps({"knowable": "yes"}), 0.2) \
        if "TURN_2_AGENT" in request["messages"][1]["content"] else sheet(knowable=False, admits=True)
    r = evaluate([ATLANTIS], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact", reasks=0)) \
        .traces[0].metrics["failure_rate"]
    assert r.score is None and r.warning == "judge_error" and "turn 2" in r.reason
    assert '"yes"' in r.details["raw"] and r.judge_calls == 2


def test_failure_rate_compact_asks_about_the_replies_at_once_with_the_same_result(judge_server):
    judge_server.reply = lambda request: delayed(sheet(knowable=False, admits=True), 0.2) \
        if "TURN_1_AGENT" in request["messages"][1]["content"] else delayed(sheet(knowable=False, points=True), 0.2)
    r = evaluate([ATLANTIS], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["failure_rate"]
    assert judge_server.peak == 2  # both replies' calls in flight together
    assert r.reason == "alternative_proposed: turn 1 admitted_uncertainty; turn 2 proposed_alternative"
    assert r.judge_calls == 2 and [f["turn"] for f in r.details["findings"]] == [1, 2]
    # within the judge's limits: one call at a time when it allows one
    judge_server.reset()
    one = evaluate([ATLANTIS], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact", concurrency=1,
                                                                   max_concurrency=1)).traces[0].metrics["failure_rate"]
    assert judge_server.peak == 1 and one.score == r.score and one.reason == r.reason


def test_failure_rate_compact_a_failed_turn_decides_in_turn_order(judge_server):
    # turn 1's reply fails after turn 2's: the result names turn 1, as when the calls ran one by one
    judge_server.reply = lambda request: delayed(json.dumps({"knowable": "yes"}), 0.3) \
        if "TURN_1_AGENT" in request["messages"][1]["content"] else sheet(knowable="no")
    r = evaluate([ATLANTIS], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact", reasks=0)) \
        .traces[0].metrics["failure_rate"]
    assert r.warning == "judge_error" and "turn 1" in r.reason and '"yes"' in r.details["raw"]


def test_failure_rate_compact_dry_run_plans_one_call_per_agent_reply():
    from assay.engine._calls import calls_per_trace
    from assay.engine._run import resolve_metrics
    from assay.model import Trace

    metric = resolve_metrics(["failure_rate"], judge=True)[0]["failure_rate"]
    trace = Trace.model_validate(ATLANTIS)
    assert calls_per_trace(metric, trace, style="compact") == 2 and calls_per_trace(metric, trace) == 1


def test_failure_rate_full_form_keeps_quotes_and_sends_no_max_tokens(judge_server):
    judge_server.push(json.dumps({"findings": [], "reason": "r", "verdict": "not_applicable"}))
    evaluate([ATLANTIS], ["failure_rate"], judge=judge_for(judge_server))
    (req,) = judge_server.requests
    assert "Step 1, findings" in system(req) and "max_tokens" not in req.json
    assert "quote" in sent_schema(req)["$defs"]["TurnFinding"]["properties"]


def test_a_tighter_max_tokens_flag_wins_over_the_schema_bound(judge_server):
    judge_server.push(json.dumps({"findings": [], "reason": "r", "verdict": "not_applicable"}))
    evaluate([ATLANTIS], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact", max_tokens=33))
    assert judge_server.requests[0].json["max_tokens"] == 33


def goal_replies(negative_turns: list[int], verdict: str = "mostly", yes: int = 3):
    questions = ("got_something", "got_most", "got_essentials", "got_everything")

    def reply(request: dict) -> str:
        name = schema_name(request)
        if name.startswith("GoalCheck"):
            goal = {"goal": "Get the script running."} if name == "GoalCheckInferred" else {}
            return json.dumps({**goal, **{q: i < yes for i, q in enumerate(questions)},
                               "negative_turns": negative_turns})
        if name == "SignalsVerdict":
            return json.dumps({"positive_signals": [], "negative_signals": [], "unmet_requests": []})
        if name == "OutcomeVerdict":
            return json.dumps({"reasoning": "fixed after a detour", "verdict": verdict})
        if name == "GoalVerdict":
            return json.dumps({"reasoning": "r", "goal": "Get the script running."})
        return json.dumps({"summary": "Fixed after one wrong suggestion."})
    return reply


def test_goal_compact_is_one_call_of_yes_no_questions_and_verified_signal_turns(judge_server):
    judge_server.reply = goal_replies([2, 2, 9, 1], yes=3)
    r = evaluate([BROKEN], ["goal_achievement_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["goal_achievement_rate"]
    (call,) = judge_server.requests  # goal given: one call
    assert schema_name(call.json) == "GoalCheck"
    assert list(sent_schema(call)["properties"]) == ["got_something", "got_most", "got_essentials",
                                                     "got_everything", "negative_turns"]
    assert call.json["max_tokens"] == output_bound(GoalCheck)
    assert "Get the import error fixed." in user(call)  # the given goal is shown with the data
    # three yes answers: mostly
    assert r.details["verdict"] == "mostly" and r.details["label_rule"] == "yes/no checks"
    assert r.details["checks"] == {"got_something": True, "got_most": True, "got_essentials": True,
                                   "got_everything": False}
    # turn 2 counted once; turn 1 is the user's too; turn 9 does not exist
    assert r.details["negative_signals"] == ["turn 2: That did not help, it still fails with the same error!",
                                             "turn 1: My script fails with ModuleNotFoundError: requests"]
    assert r.details["unverified_evidence"] == ["negative_turns: turn 9 (no user message there)"]
    assert r.score == pytest.approx(0.9 - 0.2)
    assert r.reason == "mostly (0.9) - 0.1 x 2 negative signal(s): the user got something, most, essentials"


@pytest.mark.parametrize("yes, level", [(0, "none"), (1, "minor"), (2, "partial"), (3, "mostly"), (4, "fully")])
def test_the_goal_level_is_the_number_of_yes_answers(yes, level):
    questions = ("got_something", "got_most", "got_essentials", "got_everything")
    assert goal_level(GoalCheck(**{q: i < yes for i, q in enumerate(questions)}, negative_turns=[])) == level
    # an inconsistent sheet still lands between: everything but not most counts two
    assert goal_level(GoalCheck(got_something=True, got_most=False, got_essentials=False, got_everything=True,
                                negative_turns=[])) == "partial"


def test_goal_compact_without_a_goal_infers_it_in_the_same_call(judge_server):
    judge_server.reply = goal_replies([], yes=4)
    no_goal = {k: v for k, v in BROKEN.items() if k != "expected"}
    r = evaluate([no_goal], ["goal_achievement_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["goal_achievement_rate"]
    (call,) = judge_server.requests
    assert list(sent_schema(call)["properties"])[0] == "goal" and "First state the user's goal" in system(call)
    assert r.score == 1.0 and r.details["goal"] == "Get the script running." and r.details["goal_source"] == "inferred"


def test_goal_dry_run_plans_one_call_per_trace_in_the_compact_form():
    from assay.engine._calls import calls_per_trace
    from assay.engine._run import resolve_metrics
    from assay.model import Trace

    metric = resolve_metrics(["goal_achievement_rate"], judge=True)[0]["goal_achievement_rate"]
    trace = Trace.model_validate(BROKEN)
    no_goal = Trace.model_validate({k: v for k, v in BROKEN.items() if k != "expected"})
    assert calls_per_trace(metric, trace, style="compact") == calls_per_trace(metric, no_goal, style="compact") == 1
    assert calls_per_trace(metric, trace) == 3 and calls_per_trace(metric, no_goal) == 4


def outcome_order(request) -> list[str]:
    """The outcome labels in the order the prompt lists them (after the data when shuffled)."""
    text = user(request)
    listed = text.split("The verdict options:")[1] if "The verdict options:" in text else \
        system(request).split("Outcome labels:")[1].split("\n\n")[0]
    return [line[2:].split(":")[0] for line in listed.strip().splitlines() if line.startswith("- ")]


@pytest.mark.parametrize("order, expected", [
    ("natural", ["fully", "mostly", "partial", "minor", "none"]),
    ("reversed", ["none", "minor", "partial", "mostly", "fully"])])
def test_ordinal_labels_follow_the_fixed_order_in_both_directions(judge_server, order, expected):
    judge_server.reply = goal_replies([])
    r = evaluate([BROKEN], ["goal_achievement_rate"], judge=judge_for(judge_server, ordinal_order=order)) \
        .traces[0].metrics["goal_achievement_rate"]
    (verdict,) = [q for q in judge_server.requests if schema_name(q.json) == "OutcomeVerdict"]
    assert outcome_order(verdict) == expected
    assert "The verdict options:" not in user(verdict)  # a fixed order is part of the static prompt
    assert sent_schema(verdict)["properties"]["verdict"]["enum"] == expected
    assert r.details["option_order"]["verdict"] == expected


def test_shuffled_ordinal_labels_vary_per_request_and_follow_the_data(judge_server):
    judge_server.reply = goal_replies([])
    traces = [{**BROKEN, "id": f"t{i}"} for i in range(8)]
    evaluate(traces, ["goal_achievement_rate"], judge=judge_for(judge_server, ordinal_order="shuffled"))
    verdicts = [q for q in judge_server.requests if schema_name(q.json) == "OutcomeVerdict"]
    assert all("The verdict options:" in user(q) for q in verdicts)
    orders = {tuple(outcome_order(q)) for q in verdicts}
    assert len(orders) > 1 and all(sorted(o) == sorted(["fully", "mostly", "partial", "minor", "none"]) for o in orders)


RAIN = {"id": "rain", "turns": [{"input": "What causes rain?", "output": "Water vapour condenses into droplets."}]}


def scale_lines(request) -> list[str]:
    """The score options in the order the prompt lists them: after the data when their direction
    varies per request, else in the static system message."""
    text = user(request).split("The score options:")[1] if "The score options:" in user(request) else system(request)
    return re.findall(r"^- (\d+): ", text, re.MULTILINE)


def test_scale_metric_compact_bounds_evidence_and_rationale(judge_server):
    judge_server.reply = lambda request: json.dumps({"evidence": ["Water vapour condenses"], "reasoning": "On topic.",
                                                     "score": 5})
    r = evaluate([RAIN], ["answer_relevance"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["answer_relevance"]
    assert r.score == 1.0 and r.evidence == ["Water vapour condenses"]
    (req,) = judge_server.requests
    props = sent_schema(req)["properties"]
    assert props["evidence"]["maxItems"] == 2 and props["evidence"]["items"]["maxLength"] == 120
    assert props["reasoning"]["maxLength"] == 200 and "One short sentence" in system(req)
    assert scale_lines(req) == ["1", "2", "3", "4", "5"]  # natural order by default in the compact form
    assert 0 < req.json["max_tokens"] < 300


def test_scale_reversed_and_full_default_direction_per_request(judge_server):
    judge_server.reply = lambda request: json.dumps({"evidence": [], "reasoning": "ok", "score": 4})
    evaluate([RAIN], ["answer_relevance"], judge=judge_for(judge_server, ordinal_order="reversed"))
    assert scale_lines(judge_server.requests[0]) == ["5", "4", "3", "2", "1"]
    judge_server.reset()
    judge_server.reply = lambda request: json.dumps({"evidence": [], "reasoning": "ok", "score": 4})
    evaluate([{**RAIN, "id": f"r{i}"} for i in range(8)], ["answer_relevance"], judge=judge_for(judge_server))
    directions = {tuple(scale_lines(q)) for q in judge_server.requests}
    assert directions == {("1", "2", "3", "4", "5"), ("5", "4", "3", "2", "1")}
    assert all("max_tokens" not in q.json for q in judge_server.requests)
