"""assay.compat.uaef: the seed 004 snippets (evaluate with a metric list, register_metric,
register_use_case_specific_metrics), UAEF's result shape, and UAEF's bugs we do not copy."""

from __future__ import annotations


import pytest

from assay import evaluate as assay_evaluate
from assay.compat.uaef import (
    AgentTrace,
    CoordinationEvent,
    EvaluationInput,
    EvaluationResult,
    GroundTruth,
    Message,
    MetricScore,
    MultiAgentTrace,
    ToolCall,
    batch_evaluate,
    evaluate,
)
from assay.compat.uaef.api import trace_of
from assay.compat.uaef.metrics import BaseMetric, register_metric
from assay.compat.uaef.metrics.registry import register_use_case_specific_metrics
from assay.errors import ConfigError
from tests.support.judge_server import JudgeServer, obj


@pytest.fixture(autouse=True)
def fresh_opt_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    """register_use_case_specific_metrics() changes the compat default set: undo it after each test."""
    from assay.compat.uaef.metrics import registry

    monkeypatch.setattr(registry, "_enabled", set())


def rain_trace(latency: float = 2.5) -> AgentTrace:
    return AgentTrace(
        messages=[Message(role="system", content="You are a weather assistant."),
                  Message(role="user", content="What causes rain?"),
                  Message(role="assistant", content="Rain forms when water vapor condenses in clouds into droplets.")],
        tool_calls=[ToolCall(name="search_docs", arguments={"q": "rain"}, result="...", execution_time=0.2)],
        input_tokens=120, output_tokens=40, latency=latency, cost=0.002)


def scripted(server: JudgeServer, score: int = 5, label: str | None = None) -> None:
    """Every 1-5 scale request gets *score*; every label request gets *label* (or its first option)."""

    def reply(request):
        schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
        props = schema.get("properties", {})
        if "verdict" in props:
            options = props["verdict"].get("enum") or [None]
            return obj({"evidence": [], "reasoning": "scripted", "verdict": label or options[0]})
        return obj({"evidence": [], "reasoning": "scripted", "score": score})

    server.reply = reply


@pytest.fixture()
def assay_judge(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    """ASSAY_JUDGE points at the scripted server, so the seed's judge-less calls have a judge."""
    monkeypatch.setenv("ASSAY_JUDGE", f"openai-compatible:scripted@{judge_server.url}")
    return judge_server


def test_seed_004_select_by_name_snippet(assay_judge: JudgeServer):
    scripted(assay_judge, score=5)
    trace = rain_trace()

    # --- seed 004 "Select a subset by name", verbatim ------------------------------------------
    result = evaluate(
        trace=trace,
        metrics=["answer_relevance", "safety_score", "latency_score"],
    )
    # -------------------------------------------------------------------------------------------

    assert isinstance(result, EvaluationResult)
    scores = {name: m.score for name, m in result.metric_scores.items()}
    assert scores == {"answer_relevance": 1.0, "safety_score": 1.0, "latency_score": 0.8}
    assert [d.dimension_name for d in result.dimension_results] == ["response_quality", "responsible_ai",
                                                                     "performance"]
    # weighted with UAEF's default weights, which UAEF itself never applies
    assert result.overall_score == pytest.approx((0.25 * 1.0 + 0.20 * 1.0 + 0.10 * 0.8) / 0.55)
    assert result.passed is True and result.failures == [] and result.warnings == []
    assert len(assay_judge.requests) == 2
    relevance = result.get_metric("answer_relevance")
    assert relevance.metadata["judge_calls"] == 1 and relevance.reasoning
    assert result.metadata["judge"].endswith("scripted")


def test_missing_judge_is_a_clear_error_for_named_judge_metrics():
    with pytest.raises(ConfigError, match="needs a judge"):
        evaluate(trace=rain_trace(), metrics=["answer_relevance"])
    r = evaluate(trace=rain_trace(), metrics=["latency_score"])
    assert r.get_metric("latency_score").score == 0.8


def test_default_run_without_a_judge_lists_what_it_skipped():
    r = evaluate(trace=rain_trace())
    assert "latency_score" in r.metric_scores and "answer_relevance" not in r.metric_scores
    assert "answer_relevance" in r.metadata["skipped_metrics"]
    assert any(w.startswith("metric answer_relevance: not run") for w in r.warnings)
    # every default metric reports: a score, or None with UAEF's metadata warning
    accuracy_like = r.get_metric("parameter_quality")
    assert accuracy_like.score is None and accuracy_like.metadata["warning"] == "missing_data"
    multi = r.get_metric("agent_utilization")
    assert multi.score is None and multi.metadata["warning"] == "not_applicable"


def test_all_none_dimension_has_no_score_and_does_not_drag_the_overall_down():
    r = evaluate(trace=rain_trace(), metrics=["latency_score", "agent_utilization"])
    multi = r.get_dimension("multi_agent")
    assert multi.aggregate_score is None and multi.passed is None  # UAEF: 0.0
    assert r.overall_score == pytest.approx(0.8)  # UAEF: dragged towards 0 by the empty dimension


def test_dimension_thresholds_apply_so_passed_can_be_false():
    slow = rain_trace(latency=10.0)
    r = evaluate(trace=slow, metrics=["latency_score"])
    assert r.get_metric("latency_score").score == pytest.approx(0.2)
    assert r.passed is False  # UAEF: always True, its weights and thresholds never apply
    assert any(f.startswith("dimension performance: 0.200") for f in r.failures)
    assert any(f.startswith("metric latency_score") for f in r.failures)
    # Title Case keys (UAEF's display names) are the same dimensions
    lenient = evaluate(trace=slow, metrics=["latency_score", "prompt_injection_detection"],
                       thresholds={"Performance": 0.1}, dimension_weights={"Responsible AI": 0.0})
    assert lenient.get_dimension("performance").threshold == 0.1
    assert lenient.get_dimension("responsible_ai").weight == 0.0
    assert lenient.overall_score == pytest.approx(0.2)


def test_ground_truth_and_context_reach_the_metrics(judge_server: JudgeServer):
    scripted(judge_server, score=4)
    gt = GroundTruth(expected_output="Condensation of water vapour.",
                     expected_tool_calls=[ToolCall(name="search_docs", arguments={"q": "rain"}),
                                          ToolCall(name="calculator")])
    r = evaluate(trace=rain_trace(), ground_truth=gt, context=["Rain is condensed water vapour."],
                 metrics=["tool_selection_accuracy", "parameter_quality", "accuracy", "hallucination_score"],
                 judge=f"openai-compatible:scripted@{judge_server.url}", cache=False)
    assert r.get_metric("tool_selection_accuracy").score == pytest.approx(0.5)
    assert r.get_metric("accuracy").score == 0.75 and r.get_metric("hallucination_score").score == 0.75
    sent = "\n".join(m["content"] for q in judge_server.requests for m in q.json["messages"])
    assert "Condensation of water vapour." in sent and "Rain is condensed water vapour." in sent
    # an EvaluationInput (or a UAEF dict of one) is accepted as the trace too
    ei = EvaluationInput(trace=rain_trace(), ground_truth=gt)
    assert evaluate(trace=ei.model_dump(mode="json"), metrics=["tool_selection_accuracy"]).get_metric(
        "tool_selection_accuracy").score == pytest.approx(0.5)


def test_multi_agent_trace():
    agent = AgentTrace(messages=[Message(role="user", content="plan"), Message(role="assistant", content="done")],
                       tool_calls=[ToolCall(name="search", arguments={})])
    mat = MultiAgentTrace(agent_traces={"planner": agent, "worker": agent},
                          coordination_events=[CoordinationEvent(from_agent="planner", to_agent="worker",
                                                                 message="please search")],
                          workflow_status="completed")
    r = evaluate(trace=mat, metrics=["agent_utilization", "coordination_efficiency"])
    assert r.get_metric("agent_utilization").score == pytest.approx(1.0)
    assert r.get_metric("coordination_efficiency").score is not None
    t = trace_of(mat)
    assert set(t.agents) == {"planner", "worker"} and t.handoffs[0].message == "please search"


def test_judge_failure_is_api_error_with_no_score(judge_server: JudgeServer):
    judge_server.reply = lambda request: obj({"nonsense": True})
    r = evaluate(trace=rain_trace(), metrics=["answer_relevance", "latency_score"],
                 judge=f"openai-compatible:scripted@{judge_server.url}", cache=False, reasks=0, retries=0)
    m = r.get_metric("answer_relevance")
    assert m.score is None and m.metadata["warning"] == "api_error" and m.metadata["assay_warning"] == "judge_error"
    assert r.get_dimension("response_quality").aggregate_score is None
    assert r.overall_score == pytest.approx(0.8)


def test_batch_evaluate_is_concurrent(judge_server: JudgeServer):
    scripted(judge_server, score=5)
    judge_server.latency = 0.2
    results = batch_evaluate([rain_trace() for _ in range(8)], metrics=["answer_relevance"],
                             judge=f"openai-compatible:scripted@{judge_server.url}", cache=False)
    assert judge_server.peak > 1  # measured at the server: calls overlapped (no wall-clock timing)
    assert [r.get_metric("answer_relevance").score for r in results] == [1.0] * 8


class MyCustomMetric(BaseMetric):
    def get_name(self): return "my_metric"
    def get_dimension(self): return "custom"
    def calculate(self, evaluation_input): ...


class AnswerLength(BaseMetric):
    """Share of a 100-character budget the last answer uses (a deterministic custom metric)."""

    def get_name(self):
        return "answer_length"

    def get_dimension(self):
        return "Response Quality"

    def calculate(self, evaluation_input):
        answers = [m.content for m in evaluation_input.trace.messages if m.role == "assistant" and m.content]
        if not answers:
            return MetricScore(metric_name=self.get_name(), score=None, metadata={"warning": "missing_data"})
        return MetricScore(metric_name=self.get_name(), score=min(1.0, len(answers[-1]) / 100),
                           reasoning=f"{len(answers[-1])} characters", metadata={"chars": len(answers[-1])})


class AsyncGoal(BaseMetric):
    def get_name(self):
        return "async_goal"

    def requires_ground_truth(self):
        return True

    def calculate(self, evaluation_input):
        raise AssertionError("the async variant is used")

    async def calculate_async(self, evaluation_input):
        gt = evaluation_input.ground_truth
        return 1.0 if gt is not None and gt.expected_output else 0.0


def test_seed_004_register_metric_snippet(registry_snapshot):
    # --- seed 004 "Registering a custom metric", verbatim but for the import line ---------------
    register_metric(MyCustomMetric)
    # -------------------------------------------------------------------------------------------
    register_metric(MyCustomMetric)  # again: a no-op
    r = evaluate(trace=rain_trace(), metrics=["my_metric"])
    m = r.get_metric("my_metric")  # its calculate returns None: an error, not a score
    assert m.score is None and m.metadata["warning"] == "metric_error" and "returned None" in m.reasoning
    assert r.get_dimension("custom") is not None


def test_custom_metrics_run_through_every_entry_point(registry_snapshot):
    register_metric(AnswerLength)
    register_metric(AsyncGoal)
    r = evaluate(trace=rain_trace(), ground_truth={"expected_output": "x"}, metrics=["answer_length", "async_goal"])
    length = r.get_metric("answer_length")
    assert length.score == pytest.approx(0.62) and length.metadata["chars"] == 62
    assert r.get_dimension("response_quality").metric_scores[0].metric_name == "answer_length"
    assert r.get_metric("async_goal").score == 1.0
    # a default run includes registered metrics, and assay's own evaluate sees them too
    assert "answer_length" in evaluate(trace=rain_trace()).metric_scores
    run = assay_evaluate([{"id": "t", "turns": [{"input": "q", "output": ""}]}], ["answer_length"])
    assert run.traces[0].metrics["answer_length"].warning == "missing_data"


def test_register_metric_refuses_clashes_and_non_metrics(registry_snapshot):
    class Clash(AnswerLength):
        def get_name(self):
            return "latency_score"

    with pytest.raises(ConfigError, match="already registered"):
        register_metric(Clash)
    with pytest.raises(ConfigError, match="BaseMetric"):
        register_metric(object)  # type: ignore[arg-type]


def test_seed_004_use_case_metrics_snippet(assay_judge: JudgeServer):
    scripted(assay_judge, label=None)
    trace = AgentTrace(messages=[Message(role="user", content="My order never arrived."),
                                 Message(role="assistant", content="I have re-sent it; tracking number 123.")])

    # --- seed 004 "Use-case-specific metrics", verbatim but for the import line -----------------
    register_use_case_specific_metrics()
    result = evaluate(trace, metrics=["containment", "resolution"])
    # -------------------------------------------------------------------------------------------

    for name in ("containment", "resolution"):
        m = result.get_metric(name)
        assert m.score is not None and m.metadata["verdict"] in m.metadata["label_weights"]  # UAEF: always crashes
    assert result.get_dimension("use_case") is not None
    assert "containment" in evaluate(trace).metric_scores  # now part of the default set too


def test_bad_inputs_are_config_errors():
    with pytest.raises(ConfigError, match="batch_evaluate"):
        evaluate(trace=[rain_trace()])
    with pytest.raises(ConfigError, match="adapter"):
        evaluate(trace=rain_trace(), adapter="langgraph")
    with pytest.raises(ConfigError, match="unknown metric"):
        evaluate(trace=rain_trace(), metrics=["answer_relevence"])
    with pytest.raises(ConfigError, match="either metrics= or metric_set="):
        evaluate(trace=rain_trace(), metrics=["latency_score"], metric_set={"Performance": ["latency_score"]})
    r = evaluate(trace=rain_trace(), metric_set={"Performance": ["latency_score"]})
    assert list(r.metric_scores) == ["latency_score"]


def test_seed_004_connectors_snippet():
    from assay.compat.uaef.integrations import DeepEvalConnector, RAGASConnector
    from assay.compat.uaef.models import EvaluationInput

    trace = rain_trace()
    gt = GroundTruth(expected_output="Condensation of water vapour.")
    judge = "openai-compatible:scripted@http://127.0.0.1:9/v1"  # never called: without the extras nothing is sent

    # --- seed 004 "Calling the connectors directly", but for the imports and the judge ----------
    evaluation_input = EvaluationInput(trace=trace, ground_truth=gt, context=["..."])

    ragas = RAGASConnector(judge=judge)
    scores = ragas.calculate_metrics(evaluation_input, [
        "faithfulness", "context_precision", "answer_correctness",
    ])

    deepeval = DeepEvalConnector(judge=judge)
    scores2 = deepeval.calculate_metrics(evaluation_input, [
        "hallucination", "contextual_recall", "tool_correctness",
    ])

    # G-Eval with custom criteria
    geval_score = deepeval.calculate_geval(
        evaluation_input,
        criteria="Does the response provide actionable next steps?",
    )
    # -------------------------------------------------------------------------------------------
    assert set(scores) == {"faithfulness", "context_precision", "answer_correctness"}
    assert set(scores2) == {"hallucination", "contextual_recall", "tool_correctness"}
    for connector, got in ((ragas, [*scores.values()]), (deepeval, [*scores2.values(), geval_score])):
        if connector.is_available():
            continue
        for s in got:
            assert s.score is None and s.metadata["warning"] == "not_evaluated"
            assert f"pip install 'assay[{connector.library}]'" in s.reasoning
    with pytest.raises(ConfigError, match="unknown ragas metric"):
        ragas.calculate_metrics(evaluation_input, ["faithfullness"])
