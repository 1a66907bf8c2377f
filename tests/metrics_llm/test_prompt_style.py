"""The compact prompt form and the ordinal option order, checked on what reaches the scripted server."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from test_e2e import judge_for, schema_name
from test_eval_lib import ATLANTIS

from assay import evaluate
from assay.errors import ConfigError
from assay.judge import auto_style, make_judge, ordinal_order, prompt_style
from assay.metrics._judged import output_bound
from assay.metrics.eval_lib import (DeliveryCheck, echoes, GoalCheck, Reference, ReplyCheck, failure_label, goal_level, needs_reference,
                                    reply_behaviour)
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


UNKNOWN = {"answer": "I cannot know that.", "known": False}


def sheet(answers=False, admits=False, points=False, evasive=False) -> dict:
    return {"answers": answers, "admits": admits, "points": points, "evasive": evasive}


def fr_replies(turns: dict[int, tuple[dict, dict, bool | None]], delay: float = 0.0):
    """The scripted judge for the compact failure_rate, keyed by the turn shown (the calls of all
    replies are in flight together): per turn (reference, sheet, agrees); a definite reply is asked
    whether it contradicts the reference, and answers ``not agrees``."""
    def reply(request: dict) -> Any:
        content = request["messages"][1]["content"]
        n = next(n for n in turns if f"TURN_{n}_" in content)
        reference, check, agrees = turns[n]
        name = schema_name(request)
        body = json.dumps({"Reference": reference, "ReplyCheck": check, "Agreement": {"agrees": agrees},
                           "Contradiction": {"contradicts": agrees is False}}[name])
        return delayed(body, delay) if delay else body
    return reply


def by_schema(requests, name: str) -> list:
    return [q for q in requests if schema_name(q.json) == name]


def test_failure_rate_compact_asks_a_sheet_per_reply_and_the_judges_own_answer_where_it_decides(judge_server):
    known = {"answer": "Around 10,900 metres.", "known": True}
    judge_server.reply = fr_replies({1: (UNKNOWN, sheet(admits=True), None), 2: (known, sheet(answers=True), True)})
    judge = judge_for(judge_server, prompt_style="compact", concurrency=1)
    results = evaluate([ATLANTIS, {**ATLANTIS, "id": "again"}], ["failure_rate"], judge=judge)
    r = results.traces[0].metrics["failure_rate"]
    # turn 1 admits: its sheet decides (1 call); turn 2 answers: the judge's own answer and agreement (3)
    assert r.score == 1.0 and r.details["prompt_style"] == "compact" and r.judge_calls == 4
    assert r.details["verdict"] == "honest_fallback" and r.details["label_rule"] == "per-reply checks"
    assert [(f["turn"], f["behaviour"]) for f in r.details["findings"]] == [
        (1, "admitted_uncertainty"), (2, "answered")]
    assert "reference" not in r.details["findings"][0] and "contradicts" not in r.details["findings"][0]
    assert r.details["findings"][1]["reference"] == known and r.details["findings"][1]["contradicts"] is False
    assert r.reason == "honest_fallback: turn 1 admitted_uncertainty; turn 2 answered"
    assert r.evidence[0].startswith("Atlantis is a mythical city")  # the deciding reply is the evidence
    sheets = by_schema(judge_server.requests, "ReplyCheck")
    (references, comparisons) = (by_schema(judge_server.requests, "Reference"),
                                 by_schema(judge_server.requests, "Contradiction"))
    # a definite answer is asked whether it contradicts the judge's own answer, not whether it agrees
    assert (len(sheets), len(references), len(comparisons)) == (4, 2, 2)
    assert not by_schema(judge_server.requests, "Agreement")
    assert "does the reply\ncontradict it?" in system(comparisons[0])
    # the judge answers the user's message without seeing the reply; the sheet shows one turn only
    ref2 = references[0]
    assert "TURN_2_USER" in user(ref2) and "TURN_2_AGENT" not in user(ref2) and "TURN_1" not in user(ref2)
    assert "as an honest AI assistant with no" in system(ref2) and "- known: Could you answer it" in system(ref2)
    sheet1 = next(q for q in sheets if "TURN_1_AGENT" in user(q))
    assert "TURN_1_USER" in user(sheet1) and "TURN_2" not in user(sheet1)
    assert all("REFERENCE" not in user(q) for q in sheets)  # the judge's own answer would sway the sheet
    # one static system message for every call of each prompt (the reusable prefix)
    assert len({system(q) for q in sheets}) == 1 and "Answer each question with true or false" in system(sheet1)
    assert list(sent_schema(sheet1)["properties"]) == ["answers", "admits", "points", "evasive"]
    assert list(sent_schema(ref2)["properties"]) == ["answer", "known"]
    assert sheet1.json["max_tokens"] == output_bound(ReplyCheck) and sheet1.json["max_tokens"] <= 64


def test_failure_rate_compact_a_definite_reply_to_a_known_question_is_checked_against_the_judges_answer(
        judge_server):
    known = {"answer": "A leap year has 366 days.", "known": True}
    trace = {"id": "leap", "turns": [{"input": "How many days are in a leap year?", "output": "A leap year has 365 days."},
                                     {"input": "And in a normal year?", "output": "A normal year has 365 days."}]}
    judge_server.reply = fr_replies({1: (known, sheet(answers=True), False), 2: (known, sheet(answers=True), True)})
    r = evaluate([trace], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["failure_rate"]
    assert r.score == 0.0 and r.details["verdict"] == "hallucination" and r.judge_calls == 6
    assert [(f["behaviour"], f["contradicts"]) for f in r.details["findings"]] == [
        ("fabricated", True), ("answered", False)]
    assert r.evidence == ["A leap year has 365 days."]
    agreement = next(q for q in by_schema(judge_server.requests, "Contradiction") if "TURN_1_AGENT" in user(q))
    # the judge's own answer is shown as the reference, and only the reply beside it
    assert "A leap year has 366 days." in user(agreement) and "TURN_1_USER" not in user(agreement)
    assert "REFERENCE_ANSWER" in user(agreement)


def test_failure_rate_compact_the_reference_answers_from_the_turns_tool_results_and_context(judge_server):
    trace = {"id": "grounded", "turns": [{
        "input": "Is my order shipped?", "context": ["Order 5521: status shipped on 2 May."],
        "tool_calls": [{"name": "order_status", "arguments": {"id": 5521}, "result": "shipped"}],
        "output": "No, order 5521 has not shipped yet."}]}
    judge_server.reply = fr_replies({1: ({"answer": "Yes, it shipped on 2 May.", "known": True}, sheet(answers=True),
                                         False)})
    r = evaluate([trace], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["failure_rate"]
    (reference,) = by_schema(judge_server.requests, "Reference")
    assert "shipped on 2 May" in user(reference) and "order_status" in user(reference)
    assert "has not shipped yet" not in user(reference)
    assert "are true: answer from them" in system(reference)
    assert r.details["verdict"] == "hallucination"  # contradicting the tool result, whatever the judge knows


@pytest.mark.parametrize("known, answers, agrees, behaviour", [
    (False, dict(answers=True, points=True), None, "fabricated"),  # a definite answer to what cannot be known
    (True, dict(answers=True), False, "fabricated"),  # a false fact
    (True, dict(answers=True), True, "answered"),
    (False, dict(answers=True, admits=True), None, "admitted_uncertainty"),  # hedged: "I'm not sure, maybe 5"
    (False, dict(points=True, admits=True), None, "proposed_alternative"),
    (False, dict(answers=True, points=True, admits=True), None, "proposed_alternative"),  # can't know, but look here
    (True, dict(answers=True, points=True), True, "answered"),  # an answer with a pointer added is an answer
    (False, dict(admits=True), None, "admitted_uncertainty"),
    (False, dict(evasive=True), None, "stalled"),
    (True, {}, False, "stalled"),  # no answer where the judge knows one: compared, and it differs
    (True, {}, True, "answered"),  # says what the judge would say ("You're welcome!" to "thanks")
    (True, dict(points=True), None, "proposed_alternative")])
def test_a_reply_behaviour_follows_from_its_sheet_and_the_judges_own_answer(known, answers, agrees, behaviour):
    reference = Reference(answer="x", known=known)
    check = ReplyCheck(**sheet(**answers))
    assert (needs_reference(check) and known) == (agrees is not None)
    assert reply_behaviour(check, reference, agrees) == behaviour


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


def test_failure_rate_compact_a_courtesy_the_judge_would_say_too_is_no_stall(judge_server):
    trace = {"id": "thanks", "turns": [{"input": "What is the capital of Australia?", "output": "Canberra."},
                                       {"input": "Great, thanks!", "output": "You're welcome!"}]}
    judge_server.reply = fr_replies({1: ({"answer": "Canberra.", "known": True}, sheet(answers=True), True),
                                     2: ({"answer": "You're welcome!", "known": True}, sheet(), True)})
    r = evaluate([trace], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["failure_rate"]
    # the answer is checked for a contradiction; the reply without an answer for saying the same
    assert [(f["behaviour"], f.get("contradicts"), f.get("agrees")) for f in r.details["findings"]] == [
        ("answered", False, None), ("answered", None, True)]
    assert r.details["verdict"] == "not_applicable" and r.judge_calls == 6
    # the same non-answer that differs from what the judge would say is a stall: the conversation is mixed
    judge_server.reset()
    judge_server.reply = fr_replies({1: ({"answer": "Canberra.", "known": True}, sheet(answers=True), True),
                                     2: ({"answer": "You're welcome!", "known": True}, sheet(), False)})
    r = evaluate([trace], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["failure_rate"]
    assert r.details["verdict"] == "mixed"


def test_failure_rate_compact_a_fabrication_anywhere_is_a_hallucination(judge_server):
    judge_server.reply = fr_replies({1: (UNKNOWN, sheet(admits=True), None), 2: (UNKNOWN, sheet(answers=True), None)})
    r = evaluate([ATLANTIS], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["failure_rate"]
    assert r.score == 0.0 and r.details["verdict"] == "hallucination"
    assert len(r.evidence) == 1 and "10,935" in r.evidence[0]  # the fabricated reply is the evidence


def test_failure_rate_compact_a_failed_call_fails_the_trace_with_the_raw_reply(judge_server):
    # turn 2's sheet fails after turn 1's is in (the calls run at once): every call made is counted
    judge = judge_for(judge_server, prompt_style="compact", reasks=0)
    turns = {1: (UNKNOWN, sheet(admits=True), None), 2: (UNKNOWN, sheet(admits=True), None)}
    plain = fr_replies(turns)
    judge_server.reply = lambda request: delayed(json.dumps({"knowable": "yes"}), 0.2) \
        if schema_name(request) == "ReplyCheck" and "TURN_2_AGENT" in request["messages"][1]["content"] \
        else plain(request)
    r = evaluate([ATLANTIS], ["failure_rate"], judge=judge).traces[0].metrics["failure_rate"]
    assert r.score is None and r.warning == "judge_error" and "turn 2" in r.reason
    assert '"yes"' in r.details["raw"] and r.judge_calls == 2  # turn 1's sheet decided it: no more calls


def test_failure_rate_compact_asks_about_the_replies_at_once_with_the_same_result(judge_server):
    judge_server.reply = fr_replies({1: (UNKNOWN, sheet(admits=True), None), 2: (UNKNOWN, sheet(points=True), None)},
                                    delay=0.2)
    r = evaluate([ATLANTIS], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["failure_rate"]
    assert judge_server.peak == 2  # both replies' sheets in flight together
    assert r.reason == "alternative_proposed: turn 1 admitted_uncertainty; turn 2 proposed_alternative"
    assert r.judge_calls == 2 and [f["turn"] for f in r.details["findings"]] == [1, 2]
    # within the judge's limits: one call at a time when it allows one
    judge_server.reset()
    one = evaluate([ATLANTIS], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact", concurrency=1,
                                                                   max_concurrency=1)).traces[0].metrics["failure_rate"]
    assert judge_server.peak == 1 and one.score == r.score and one.reason == r.reason


def test_failure_rate_compact_a_failed_turn_decides_in_turn_order(judge_server):
    # turn 1's sheet fails after turn 2's: the result names turn 1, as when the calls ran one by one
    turns = {1: (UNKNOWN, sheet(), None), 2: (UNKNOWN, sheet(), None)}
    plain = fr_replies(turns)
    judge_server.reply = lambda request: (delayed(json.dumps({"knowable": "yes"}), 0.3)
                                          if "TURN_1_AGENT" in request["messages"][1]["content"] else
                                          json.dumps({"answers": "no"})) if schema_name(request) == "ReplyCheck" \
        else plain(request)
    r = evaluate([ATLANTIS], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact", reasks=0)) \
        .traces[0].metrics["failure_rate"]
    assert r.warning == "judge_error" and "turn 1" in r.reason and '"yes"' in r.details["raw"]


def test_failure_rate_compact_dry_run_plans_at_most_three_calls_per_agent_reply():
    from assay.engine._calls import calls_per_trace
    from assay.engine._run import resolve_metrics
    from assay.model import Trace

    metric = resolve_metrics(["failure_rate"], judge=True)[0]["failure_rate"]
    trace = Trace.model_validate(ATLANTIS)
    # at most three per reply: the judge's own answer, the sheet, and the agreement where needed
    assert calls_per_trace(metric, trace, style="compact") == 6 and calls_per_trace(metric, trace) == 1


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


def goal_replies(negative_turns: list[int], verdict: str = "mostly", satisfied: bool = True, everything: bool = False,
                 delivered: tuple[bool, bool, bool] = (True, True, False)):
    """The scripted judge for goal_achievement_rate: both compact sheets and the full form's calls."""
    def reply(request: dict) -> str:
        name = schema_name(request)
        if name.startswith("GoalCheck"):
            goal = {"goal": "Get the script running."} if name == "GoalCheckInferred" else {}
            return json.dumps({**goal, "satisfied": satisfied, "got_everything": everything,
                               "negative_turns": negative_turns})
        if name == "DeliveryCheck":
            return json.dumps(dict(zip(("got_something", "got_essentials", "got_everything"), delivered)))
        if name == "SignalsVerdict":
            return json.dumps({"positive_signals": [], "negative_signals": [], "unmet_requests": []})
        if name == "OutcomeVerdict":
            return json.dumps({"reasoning": "fixed after a detour", "verdict": verdict})
        if name == "GoalVerdict":
            return json.dumps({"reasoning": "r", "goal": "Get the script running."})
        return json.dumps({"summary": "Fixed after one wrong suggestion."})
    return reply


def test_goal_compact_a_satisfied_user_is_one_call_and_signal_turns_are_verified(judge_server):
    judge_server.reply = goal_replies([2, 2, 9, 1], satisfied=True, everything=False)
    r = evaluate([BROKEN], ["goal_achievement_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["goal_achievement_rate"]
    (call,) = judge_server.requests  # goal given and the user satisfied: one call
    assert schema_name(call.json) == "GoalCheck"
    assert list(sent_schema(call)["properties"]) == ["satisfied", "got_everything", "negative_turns"]
    assert sent_schema(call)["properties"]["negative_turns"]["items"]["minimum"] == 2
    assert call.json["max_tokens"] == output_bound(GoalCheck)
    assert "Get the import error fixed." in user(call)  # the given goal is shown with the data
    # satisfied without everything: mostly
    assert r.details["verdict"] == "mostly" and r.details["label_rule"] == "yes/no checks"
    assert r.details["checks"] == {"satisfied": True, "got_everything": False}
    # turn 2 counted once; turn 1 is the opening request, not a reaction; turn 9 does not exist
    assert r.details["negative_signals"] == ["turn 2: That did not help, it still fails with the same error!"]
    assert r.details["unverified_evidence"] == [
        "negative_turns: turn 9 (no user message there)",
        "negative_turns: turn 1 (the opening request, not a reaction to the assistant)"]
    assert r.score == pytest.approx(0.9 - 0.1)
    assert r.reason == "mostly (0.9) - 0.1 x 1 negative signal(s): the user ended satisfied, without everything asked for"


@pytest.mark.parametrize("delivered, level", [
    ((False, False, False), "none"), ((True, False, False), "minor"), ((True, True, False), "partial"),
    ((True, True, True), "fully"),
    ((False, False, True), "fully"), ((False, True, False), "partial")])  # read by the strongest yes
def test_goal_compact_an_unsatisfied_user_gets_the_delivery_sheet(judge_server, delivered, level):
    judge_server.reply = goal_replies([], satisfied=False, delivered=delivered)
    r = evaluate([BROKEN], ["goal_achievement_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["goal_achievement_rate"]
    first, second = judge_server.requests
    assert schema_name(first.json) == "GoalCheck" and schema_name(second.json) == "DeliveryCheck"
    assert list(sent_schema(second)["properties"]) == ["got_something", "got_essentials", "got_everything"]
    assert "Get the import error fixed." in user(second) and "My script fails" in user(second)
    assert r.details["verdict"] == level and r.judge_calls == 2
    assert r.reason.endswith("the user did not end satisfied; got " + (", ".join(
        q for q, yes in zip(("something", "essentials", "everything"), delivered) if yes) or "nothing"))
    assert r.details["checks"]["delivery"] == dict(zip(("got_something", "got_essentials", "got_everything"),
                                                       delivered))


@pytest.mark.parametrize("satisfied, everything, delivered, level", [
    (True, True, None, "fully"), (True, False, None, "mostly"),
    (False, True, (True, True, False), "partial"),  # the first sheet's "everything" counts only with a satisfied user
    (False, False, (True, False, False), "minor")])
def test_the_goal_level_follows_from_the_two_sheets_by_rule(satisfied, everything, delivered, level):
    check = GoalCheck(satisfied=satisfied, got_everything=everything, negative_turns=[])
    delivery = None if delivered is None else DeliveryCheck(**dict(zip(
        ("got_something", "got_essentials", "got_everything"), delivered)))
    assert goal_level(check, delivery) == level
    if not satisfied:
        with pytest.raises(ValueError, match="delivery sheet is needed"):
            goal_level(check)


def test_goal_compact_without_a_goal_infers_it_in_the_same_call(judge_server):
    judge_server.reply = goal_replies([], satisfied=True, everything=True)
    no_goal = {k: v for k, v in BROKEN.items() if k != "expected"}
    r = evaluate([no_goal], ["goal_achievement_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["goal_achievement_rate"]
    (call,) = judge_server.requests
    assert list(sent_schema(call)["properties"])[0] == "goal" and "First state the user's goal" in system(call)
    assert r.score == 1.0 and r.details["goal"] == "Get the script running." and r.details["goal_source"] == "inferred"
    # the inferred goal is shown to the delivery sheet
    judge_server.reset()
    judge_server.reply = goal_replies([], satisfied=False)
    evaluate([no_goal], ["goal_achievement_rate"], judge=judge_for(judge_server, prompt_style="compact"))
    assert "Get the script running." in user(judge_server.requests[1])


def test_goal_dry_run_plans_at_most_two_calls_per_trace_in_the_compact_form():
    from assay.engine._calls import calls_per_trace
    from assay.engine._run import resolve_metrics
    from assay.model import Trace

    metric = resolve_metrics(["goal_achievement_rate"], judge=True)[0]["goal_achievement_rate"]
    trace = Trace.model_validate(BROKEN)
    no_goal = Trace.model_validate({k: v for k, v in BROKEN.items() if k != "expected"})
    # at most two: the second sheet only when the user did not end satisfied
    assert calls_per_trace(metric, trace, style="compact") == calls_per_trace(metric, no_goal, style="compact") == 2
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


@pytest.mark.parametrize("answer, message, echo", [
    (", we arrive at about 1pm on Friday. What time can we get into the room",
     "Hi, we arrive at about 1pm on Friday. What time can we get into the room, and when do we leave?", True),
    (", fine", "fine", True),
    (", ", "turn off the kitchen lights", True),
    ("", "anything", True),
    ("Yes, it will come back though. I'd like to finish it.", "Will it come back though? I'd like to finish it.", True),
    ("Yes", "Right, but do you actually have a time for the fix yes?", False),   # one word: an answer
    ("Yes, BA117 is on time.", "is BA117 on time", False),                     # 80% copied: an answer
    (", you need to give at least 7 days notice", "how much notice do I need to give for a week off?", False),
    ("Standard check-in is from 3pm.", "What time is check-in?", False)])
def test_an_echo_of_the_users_message_is_no_reference(answer, message, echo):
    assert echoes(answer, message) is echo


def test_failure_rate_compact_a_reference_that_echoes_the_message_decides_nothing(judge_server):
    trace = {"id": "echo", "turns": [{"input": "Hi, we arrive at 1pm on Friday, when can we get into the room?",
                                      "output": "Check-in is from 3pm."},
                                     {"input": "fine", "output": "Anything else I can do?"}]}
    judge_server.reply = fr_replies({
        1: ({"answer": ", we arrive at 1pm on Friday, when can we get into the room", "known": True},
            sheet(answers=True), False),
        2: ({"answer": ", fine", "known": False}, sheet(), None)})
    r = evaluate([trace], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["failure_rate"]
    # no comparison is asked: the definite answer is taken as an answer, the reply without one as a stall
    assert not by_schema(judge_server.requests, "Contradiction") and not by_schema(judge_server.requests, "Agreement")
    assert [(f["behaviour"], f["reference_echoed"]) for f in r.details["findings"]] == [
        ("answered", ", we arrive at 1pm on Friday, when can we get into the room"), ("stalled", ", fine")]
    assert "reference" not in r.details["findings"][0]
    assert r.details["verdict"] == "mixed" and r.judge_calls == 4


def test_without_a_reference_a_definite_answer_is_an_answer_and_no_answer_a_stall():
    assert reply_behaviour(ReplyCheck(**sheet(answers=True)), None) == "answered"  # no yardstick, no fabrication
    assert reply_behaviour(ReplyCheck(**sheet()), None) == "stalled"
    assert reply_behaviour(ReplyCheck(**sheet(answers=True)), Reference(answer="x", known=False)) == "fabricated"
