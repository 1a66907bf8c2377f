"""The UAEF judge catalog (seed 004): registry names, dimensions, edge cases, per-turn averaging."""

from __future__ import annotations

import pytest
from scripted import ScriptedJudge, label, scale
from test_machinery import direct, run

from assay import Warning, evaluate
from assay.metrics import Requirement
from assay.metrics._base import REGISTRY

SEED_004_BUILTIN = [
    "tool_selection_accuracy", "tool_sequence_correctness", "parameter_quality", "mcp_compliance",
    "answer_relevance", "completeness", "hallucination_score", "accuracy",
    "safety_score", "bias_score", "prompt_injection_detection", "toxicity_score",
    "latency_score", "token_efficiency", "cost_efficiency", "throughput",
    "context_retention", "coherence", "conversation_completeness", "turn_efficiency", "role_adherence",
    "holistic_llm_judge", "user_satisfaction", "sentiment", "agent_tone", "naturalness",
    "instruction_compliance", "optimum_turns",
    "agent_utilization", "delegation_quality", "workflow_completion", "coordination_efficiency",
    "chain_of_thought_coherence", "logical_consistency", "reasoning_step_correctness", "fallacy_detection",
]
SEED_004_VARIANTS = ["per_turn_sentiment", "per_turn_agent_tone", "per_turn_naturalness"]
SEED_004_USE_CASE = ["containment", "resolution"]

DIMENSIONS = {
    "response_quality": ["answer_relevance", "completeness", "hallucination_score", "accuracy"],
    "responsible_ai": ["safety_score", "bias_score", "toxicity_score"],
    "multi_turn": ["context_retention", "coherence", "conversation_completeness", "role_adherence",
                   "holistic_llm_judge", "user_satisfaction", "sentiment", "agent_tone", "naturalness",
                   "instruction_compliance", "optimum_turns", *SEED_004_VARIANTS],
    "multi_agent": ["delegation_quality", "workflow_completion"],
    "reasoning": ["chain_of_thought_coherence", "logical_consistency", "reasoning_step_correctness",
                  "fallacy_detection"],
    "use_case": SEED_004_USE_CASE,
}
TURN_LEVEL = {*DIMENSIONS["response_quality"], *DIMENSIONS["responsible_ai"], *SEED_004_VARIANTS}
JUDGED = [n for names in DIMENSIONS.values() for n in names]


def test_every_seed_004_registry_name_exists():
    assert len(SEED_004_BUILTIN) == 36
    names = SEED_004_BUILTIN + SEED_004_VARIANTS + SEED_004_USE_CASE
    missing = [n for n in names if n not in REGISTRY]
    assert not missing, f"missing from assay.metrics.REGISTRY: {missing}"


@pytest.mark.parametrize("name", JUDGED)
def test_dimension_level_and_requirements(name):
    spec = REGISTRY.get(name).spec
    assert spec.dimension == next(d for d, ns in DIMENSIONS.items() if name in ns)
    assert spec.level == ("turn" if name in TURN_LEVEL else "trace")
    assert Requirement.JUDGE in spec.requires and spec.judge_calls == "1"
    assert spec.default is (name not in SEED_004_USE_CASE)


# -- per-turn dispatch ---------------------------------------------------------------------------------

THREE = {"id": "three", "turns": [
    {"input": "q1", "output": "first answer", "expected": {"output": "r1"}},
    {"input": "q2", "output": "second answer"},
    {"input": "q3", "output": "third answer", "expected": {"output": "r3"}},
]}


def by_turn(scores: dict[str, int]):
    def answer(request):
        user = request.messages[1]["content"]
        return scale(next(v for k, v in scores.items() if k in user))
    return answer


def test_turn_level_metric_is_averaged_over_turns_by_the_engine():
    j = ScriptedJudge(by_turn({"first answer": 5, "second answer": 3, "third answer": 2}))
    r = run("answer_relevance", THREE, j)
    assert r.details["per_turn"] == [1.0, 0.5, 0.25]
    assert r.score == pytest.approx(1.75 / 3)
    assert r.judge_calls == 3 and r.tokens == 360 and r.cost_usd == pytest.approx(0.003)


def test_turn_level_metric_uses_each_turns_ground_truth():
    j = ScriptedJudge(by_turn({"first answer": 5, "third answer": 1}))
    r = run("accuracy", THREE, j)
    assert r.details["per_turn"] == [1.0, None, 0.0]
    assert r.details["per_turn_warnings"] == [None, "missing_data", None]
    assert r.score == 0.5 and r.details["turns_without_score"] == 1
    assert [("r1" in q.messages[1]["content"], "r3" in q.messages[1]["content"]) for q in j.requests] == [
        (True, False), (False, True)]


def test_trace_expected_output_stands_for_the_last_turn():
    trace = {"id": "one", "turns": [{"input": "q", "output": "a"}], "expected": {"output": "REFERENCE"}}
    j = ScriptedJudge(scale(4))
    assert run("completeness", trace, j).score == 0.75 and "REFERENCE" in j.user()


@pytest.mark.parametrize("name", ["per_turn_sentiment", "per_turn_agent_tone", "per_turn_naturalness"])
def test_per_turn_variants_judge_each_exchange(name):
    j = ScriptedJudge(by_turn({"first answer": 5, "second answer": 4, "third answer": 1}))
    r = run(name, THREE, j)
    assert len(j.requests) == 3 and r.details["per_turn"] == [1.0, 0.75, 0.0]
    assert all("second answer" not in q.messages[1]["content"] for q in (j.requests[0], j.requests[2]))


def test_default_set_with_a_judge_runs_no_opt_in_metric():
    result = evaluate([THREE], judge=ScriptedJudge(lambda r: {}))  # every verdict invalid: errors, not passes
    names = set(result.traces[0].metrics)
    assert not names & set(SEED_004_USE_CASE)
    assert "answer_relevance" in names and "workflow_completion" not in names
    assert all(m.passed is not True for n, m in result.traces[0].metrics.items() if n in JUDGED)


# -- edge cases (seed 004's table) ----------------------------------------------------------------------

NO_RESPONSE = {"id": "nr", "turns": [{"input": "hello?"}]}
EMPTY = {"id": "em", "turns": [{"input": "hello?", "output": ""}]}
TWO = {"id": "two", "turns": [{"input": "I'm Alice", "output": "Hi Alice"}, {"input": "My name?", "output": "Alice"}]}
MULTI = {"id": "ma", "turns": [{"input": "Plan a trip", "output": "Done: flight and hotel booked."}],
         "agents": {"flights": {"turns": [{"input": "book a flight", "output": "booked LH123"}], "role": "books flights"},
                    "hotels": {"turns": [{"input": "book a hotel", "output": "booked Hotel Adlon"}]}},
         "handoffs": [{"from": "planner", "to": "flights", "message": "book a flight"},
                      {"from": "planner", "to": "hotels", "message": "book a hotel"}],
         "expected": {"goal": "flight and hotel booked"}}
EDGE_CASES = [
    *[(n, NO_RESPONSE, Warning.MISSING_DATA) for n in JUDGED if n not in DIMENSIONS["multi_agent"]],
    *[(n, {**MULTI, "turns": [{"input": "Plan a trip"}]}, None) for n in DIMENSIONS["multi_agent"]],
    *[(n, EMPTY, Warning.INVALID_DATA) for n in DIMENSIONS["response_quality"] + DIMENSIONS["responsible_ai"]
      if n not in ("completeness", "accuracy", "hallucination_score")],
    ("completeness", {**TWO, "turns": TWO["turns"][:1]}, Warning.MISSING_DATA),
    ("accuracy", {**TWO, "turns": TWO["turns"][:1]}, Warning.MISSING_DATA),
    ("hallucination_score", TWO, Warning.MISSING_DATA),
    ("role_adherence", TWO, Warning.MISSING_DATA),
    ("instruction_compliance", TWO, Warning.MISSING_DATA),
    ("workflow_completion", {**MULTI, "expected": None}, Warning.MISSING_DATA),
    ("context_retention", {**TWO, "turns": TWO["turns"][:1]}, Warning.NOT_APPLICABLE),
    ("coherence", {**TWO, "turns": TWO["turns"][:1]}, Warning.NOT_APPLICABLE),
    ("coherence", {**TWO, "turns": [TWO["turns"][0], {"input": "My name?"}]}, Warning.NOT_APPLICABLE),
    ("delegation_quality", TWO, Warning.NOT_APPLICABLE),
    ("workflow_completion", TWO, Warning.NOT_APPLICABLE),
    ("delegation_quality", {**TWO, "handoffs": MULTI["handoffs"]}, Warning.MISSING_DATA),
    ("workflow_completion", {**MULTI, "agents": {}}, Warning.MISSING_DATA),
    ("delegation_quality", {**MULTI, "handoffs": []}, Warning.NOT_APPLICABLE),
]


@pytest.mark.parametrize("name, trace, warning", EDGE_CASES,
                         ids=[f"{n}-{t['id']}-{w}" for n, t, w in EDGE_CASES])
def test_edge_cases_are_null_with_the_seed_warning_and_no_call(name, trace, warning):
    j = ScriptedJudge(scale(5))
    r = run(name, trace, j)
    if warning is None:  # multi-agent metrics judge the agents' work even without a final reply
        assert r.score is not None
        return
    assert r.score is None and r.warning is warning and r.passed is None and r.reason
    assert not j.requests


def test_conversation_completeness_infers_intentions_without_ground_truth():
    j = ScriptedJudge(scale(4, intentions=["learn their name back"]))
    r = run("conversation_completeness", TWO, j)
    assert r.score == 0.75 and r.details["intentions"] == ["learn their name back"]
    assert r.details["criteria_source"] == "inferred" and "EXPECTED_OUTCOME" not in j.user()


def test_conversation_completeness_uses_expected_output_when_given():
    j = ScriptedJudge(scale(5, intentions=[]))
    r = run("conversation_completeness", {**TWO, "expected": {"output": "agent recalls Alice"}}, j)
    assert r.score == 1.0 and r.details["criteria_source"] == "expected" and "agent recalls Alice" in j.user()


def test_context_retention_can_be_judged_not_applicable():
    r = run("context_retention", TWO, ScriptedJudge(scale(1, applicable=False, reasoning="independent questions")))
    assert r.score is None and r.warning is Warning.NOT_APPLICABLE and "independent questions" in r.reason
    assert r.judge_calls == 1


def test_role_and_instructions_come_from_expected_else_system_prompt():
    j = ScriptedJudge(scale(5))
    run("role_adherence", {**TWO, "expected": {"role": "ROLE-TEXT"}}, j)
    assert "ROLE-TEXT" in j.user()
    j = ScriptedJudge(scale(5))
    run("instruction_compliance", {**TWO, "system": "SYSTEM-TEXT", "expected": {"output": "x"}}, j)
    assert "SYSTEM-TEXT" in j.user() and "SYSTEM-TEXT" not in j.system()


@pytest.mark.parametrize("status, expected", [("completed", 0.75), ("partial", 0.75), ("failed", 0.375), (None, 0.75)])
def test_workflow_completion_halves_a_failed_workflow(status, expected):
    r = run("workflow_completion", {**MULTI, "status": status}, ScriptedJudge(scale(4)))
    assert r.score == expected
    assert ("failed_penalty" in r.details) is (status == "failed")


def test_delegation_quality_sees_agents_and_every_handoff():
    j = ScriptedJudge(scale(4, ["book a hotel"]))
    r = run("delegation_quality", MULTI, j)
    assert r.score == 0.75 and r.evidence == ["book a hotel"]
    user = j.user()
    assert "planner -> flights (delegate): book a flight" in user and "books flights" in user


@pytest.mark.parametrize("name", DIMENSIONS["reasoning"])
def test_reasoning_metrics_use_reasoning_when_present_else_the_output(name):
    trace = {"id": "r", "turns": [{"input": "2+2?", "output": "4", "reasoning": "two plus two makes four"},
                                  {"input": "and 3+3?", "output": "six, since 3+3=6"}]}
    j = ScriptedJudge(scale(5))
    r = run(name, trace, j)
    assert r.score == 1.0 and r.details["judged_text"] == "reasoning"
    user = j.user()
    assert "two plus two makes four" in user and "six, since 3+3=6" in user
    assert "TURN_1_REASONING" in user and "TURN_1_AGENT" not in user


@pytest.mark.parametrize("name, verdict, score", [
    ("containment", "contained", 1.0), ("containment", "escalated", 0.0),
    ("resolution", "resolved", 1.0), ("resolution", "partially_resolved", 0.5), ("resolution", "unresolved", 0.0)])
def test_use_case_labels(name, verdict, score):
    r = run(name, TWO, ScriptedJudge(label(verdict, ["Hi Alice"])))
    assert r.score == score and r.details["verdict"] == verdict and r.evidence == ["Hi Alice"]


def test_a_turn_level_metric_called_on_a_whole_trace_judges_the_last_turn():
    j = ScriptedJudge(scale(5))
    r = direct("answer_relevance", THREE, j)
    assert r.score == 1.0 and "third answer" in j.user() and "first answer" not in j.user()
