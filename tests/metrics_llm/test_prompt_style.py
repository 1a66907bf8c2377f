"""The compact prompt form and the ordinal option order, checked on what reaches the scripted server."""

from __future__ import annotations

import json

import pytest
from test_e2e import judge_for, schema_name
from test_eval_lib import ATLANTIS

from assay import evaluate
from assay.errors import ConfigError
from assay.judge import auto_style, make_judge, ordinal_order, prompt_style
from assay.metrics._judged import output_bound
from assay.metrics.eval_lib import SignalTurns, failure_schema_compact

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


def test_failure_rate_compact_sends_the_short_rubric_turn_numbers_and_a_schema_bound(judge_server):
    judge_server.push(json.dumps({"findings": [{"turn": 1, "behaviour": "admitted_uncertainty"},
                                               {"turn": 2, "behaviour": "proposed_alternative"}],
                                  "reason": "Honest, then points to NOAA.", "verdict": "alternative_proposed"}))
    r = evaluate([ATLANTIS], ["failure_rate"], judge=judge_for(judge_server, prompt_style="compact")).traces[0] \
        .metrics["failure_rate"]
    assert r.score == 1.0 and r.details["prompt_style"] == "compact"
    (req,) = judge_server.requests
    sys_text = system(req)
    assert "Step 1, findings" not in sys_text and "First list the turn numbers" in sys_text
    assert len(sys_text) < 1500
    finding = sent_schema(req)["$defs"]["TurnFinding"]["properties"]
    assert set(finding) == {"turn", "behaviour"}  # no free-text quote to paraphrase
    labels = [lab for lab in json.loads(json.dumps(sent_schema(req)["properties"]["verdict"]))["enum"]]
    bound = output_bound(failure_schema_compact(
        tuple(sent_schema(req)["$defs"]["TurnFinding"]["properties"]["behaviour"]["enum"]), tuple(labels)))
    assert req.json["max_tokens"] == bound and 40 < bound < 400
    # the agent's reply of each named turn is the evidence
    assert r.evidence[0].startswith("Atlantis is a mythical city") and "NOAA" in r.evidence[1]
    assert [f["verified"] for f in r.details["findings"]] == [True, True]


def test_failure_rate_compact_checks_turn_numbers_and_keeps_the_priority_rule(judge_server):
    judge_server.push(json.dumps({"findings": [{"turn": 7, "behaviour": "fabricated"}],
                                  "reason": "r", "verdict": "honest_fallback"}),
                      json.dumps({"findings": [{"turn": 2, "behaviour": "fabricated"}],
                                  "reason": "r", "verdict": "honest_fallback"}))
    judge = judge_for(judge_server, prompt_style="compact")
    no_turn = evaluate([ATLANTIS], ["failure_rate"], judge=judge).traces[0].metrics["failure_rate"]
    assert no_turn.score == 1.0 and "priority_rule_applied" not in no_turn.details
    assert no_turn.details["unverified_evidence"] == ["turn 7 (no agent reply there)"]
    forced = evaluate([{**ATLANTIS, "id": "b"}], ["failure_rate"], judge=judge).traces[0].metrics["failure_rate"]
    assert forced.score == 0.0 and forced.details["priority_rule_applied"] is True


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


def goal_replies(signals: dict, verdict: str = "mostly"):
    def reply(request: dict) -> str:
        name = schema_name(request)
        if name == "SignalTurns":
            return json.dumps(signals)
        if name == "SignalsVerdict":
            return json.dumps({"positive_signals": [], "negative_signals": [], "unmet_requests": []})
        if name == "OutcomeVerdict":
            return json.dumps({"reasoning": "fixed after a detour", "verdict": verdict})
        return json.dumps({"summary": "Fixed after one wrong suggestion."})
    return reply


def test_goal_compact_signals_are_turn_numbers_verified_against_the_speaker(judge_server):
    judge_server.reply = goal_replies({"positive_turns": [3], "negative_turns": [2, 2, 9], "unmet_turns": []})
    r = evaluate([BROKEN], ["goal_achievement_rate"], judge=judge_for(judge_server, prompt_style="compact")) \
        .traces[0].metrics["goal_achievement_rate"]
    names = [schema_name(q.json) for q in judge_server.requests]
    assert names == ["SignalTurns", "OutcomeVerdict", "SummaryVerdictCompact"]
    signals = judge_server.requests[0]
    assert "Answer with turn numbers only" in system(signals)
    assert set(sent_schema(signals)["properties"]) == {"positive_turns", "negative_turns", "unmet_turns"}
    assert signals.json["max_tokens"] == output_bound(SignalTurns)
    # turn 2 counted once (the user's own words), turn 9 does not exist
    assert r.details["negative_signals"] == ["turn 2: That did not help, it still fails with the same error!"]
    assert r.details["positive_signals"] == ["turn 3: OK that worked, thanks."]
    assert r.details["unverified_evidence"] == ["negative_turns: turn 9 (no user message there)"]
    assert r.score == pytest.approx(0.9 - 0.1)
    # the verdict prompt shows the found signals after the data
    assert "turn 2: That did not help" in user(judge_server.requests[1])


def outcome_order(request) -> list[str]:
    """The outcome labels in the order the user message lists them."""
    listed = user(request).split("The verdict options:")[1]
    return [line[2:].split(":")[0] for line in listed.strip().splitlines() if line.startswith("- ")]


@pytest.mark.parametrize("order, expected", [
    ("natural", ["fully", "mostly", "partial", "minor", "none"]),
    ("reversed", ["none", "minor", "partial", "mostly", "fully"])])
def test_ordinal_labels_follow_the_fixed_order_in_both_directions(judge_server, order, expected):
    judge_server.reply = goal_replies({"positive_turns": [], "negative_turns": [], "unmet_turns": []})
    r = evaluate([BROKEN], ["goal_achievement_rate"],
                 judge=judge_for(judge_server, prompt_style="compact", ordinal_order=order)) \
        .traces[0].metrics["goal_achievement_rate"]
    verdict = judge_server.requests[1]
    assert outcome_order(verdict) == expected
    assert sent_schema(verdict)["properties"]["verdict"]["enum"] == expected
    assert r.details["option_order"]["verdict"] == expected


def test_shuffled_ordinal_labels_vary_per_request(judge_server):
    judge_server.reply = goal_replies({"positive_turns": [], "negative_turns": [], "unmet_turns": []})
    traces = [{**BROKEN, "id": f"t{i}"} for i in range(8)]
    evaluate(traces, ["goal_achievement_rate"], judge=judge_for(judge_server, ordinal_order="shuffled"))
    orders = {tuple(outcome_order(q)) for q in judge_server.requests if schema_name(q.json) == "OutcomeVerdict"}
    assert len(orders) > 1 and all(sorted(o) == sorted(["fully", "mostly", "partial", "minor", "none"]) for o in orders)


RAIN = {"id": "rain", "turns": [{"input": "What causes rain?", "output": "Water vapour condenses into droplets."}]}


def scale_lines(request) -> list[str]:
    listed = user(request).split("The score options:")[1]
    return [line[2:].split(":")[0] for line in listed.strip().splitlines() if line.startswith("- ")]


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
