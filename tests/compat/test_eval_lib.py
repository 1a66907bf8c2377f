"""assay.compat.eval_lib: the seed 000 and 002 snippets, eval_lib's result shapes, and the bugs
we do not copy (sequential runs, printing with verbose=False, aborting on a bad reply)."""

from __future__ import annotations

import asyncio
import json
import urllib.request

import pytest

from assay.compat.eval_lib import (
    ConversationalEvalTestCase,
    ConversationalTestCaseResult,
    CustomLLMClient,
    EvalTestCase,
    FailureRateMetric,
    GoalAchievementRateMetric,
    MetricResult,
    as_dict,
    evaluate_conversations,
)
from assay.errors import ConfigError
from tests.compat.conftest import schema_name
from tests.support.judge_server import JudgeServer, obj, text

ATLANTIS_VERDICT = {
    "findings": [
        {"turn": 1, "quote": "Atlantis is a mythical city", "behaviour": "admitted_uncertainty"},
        {"turn": 2, "quote": "For the absolute current figure, check the NOAA dataset.",
         "behaviour": "proposed_alternative"}],
    "reason": "Honest about Atlantis; points to NOAA for the exact depth.",
    "verdict": "alternative_proposed"}

GOAL_REPLIES = {
    "GoalVerdict": {"reasoning": "turn 1", "goal": "Fix the ModuleNotFoundError"},
    "SignalsVerdict": {"positive_signals": ["Сработало, спасибо!"], "negative_signals": [], "unmet_requests": []},
    "OutcomeVerdict": {"reasoning": "pip install fixed it and the user confirmed", "verdict": "fully"},
    "SummaryVerdict": {"summary": "The user fixed the import error with pip install."},
}


def atlantis() -> ConversationalEvalTestCase:
    return ConversationalEvalTestCase(
        turns=[
            EvalTestCase(
                input="What's the population of Atlantis in 2024?",
                actual_output="Atlantis is a mythical city — there is no real population figure. If you meant a real "
                              "place, let me know which one.",
            ),
            EvalTestCase(
                input="OK, what about the Mariana Trench's exact depth today?",
                actual_output="Measurements vary, but around 10,935 meters based on recent sonar surveys. For the "
                              "absolute current figure, check the NOAA dataset.",
            ),
        ]
    )


def test_seed_000_snippet_runs_with_only_the_import_changed(openai_env: JudgeServer, capsys):
    openai_env.reply = lambda request: obj(ATLANTIS_VERDICT)

    # --- seed 000 "Usage", verbatim but for the import line -------------------------------
    metric = FailureRateMetric(model="gpt-4o", threshold=0.7)

    conversation = ConversationalEvalTestCase(
        turns=[
            EvalTestCase(
                input="What's the population of Atlantis in 2024?",
                actual_output="Atlantis is a mythical city — there is no real population figure. If you meant a real place, let me know which one.",
            ),
            EvalTestCase(
                input="OK, what about the Mariana Trench's exact depth today?",
                actual_output="Measurements vary, but around 10,935 meters based on recent sonar surveys. For the absolute current figure, check the NOAA dataset.",
            ),
        ]
    )

    results = asyncio.run(evaluate_conversations([conversation], [metric]))
    # both turns classify as honest_fallback or alternative_proposed → score = 1.0
    # ---------------------------------------------------------------------------------------

    assert capsys.readouterr().out == ""  # verbose=False prints nothing (eval_lib prints anyway)
    assert len(results) == 1
    meta, (conv,) = results[0]
    assert meta is None and isinstance(conv, ConversationalTestCaseResult)
    (m,) = conv.metrics_data
    assert isinstance(m, MetricResult)
    assert (m.name, m.score, m.success, m.threshold) == ("failureRateMetric", 1.0, True, 0.7)
    assert conv.success is True
    assert m.evaluation_model == "gpt-4o"
    assert m.evaluation_cost == 0.0  # a local server is free
    log = m.evaluation_log
    assert log["verdict"]["verdict"] == "alternative_proposed"
    assert "Atlantis is a mythical city" in log["evidence"]
    assert log["verdict"]["evidence"] == log["evidence"] and log["verdict"]["reason"] == m.reason
    assert log["number_of_turns"] == 2 and log["dialogue"].startswith("1. User: What's the population")
    assert log["final_score"] == 1.0 and log["success"] is True
    assert conv.dialogue[0] == {"role": "user", "content": "What's the population of Atlantis in 2024?"}
    assert len(conv.dialogue) == 4
    (request,) = openai_env.requests
    assert schema_name(request.json) == "FailureRateVerdict" and request.json["model"] == "gpt-4o"
    assert request.json["temperature"] == 0.0
    json.dumps(as_dict(conv))  # plain data, like eval_lib's asdict


def test_seed_002_snippet_with_a_user_goal_makes_three_calls(openai_env: JudgeServer):
    openai_env.reply = lambda request: obj(GOAL_REPLIES[schema_name(request)])

    # --- seed 002 "Использование", verbatim but for the import line ------------------------
    metric = GoalAchievementRateMetric(
        model="gpt-4o",
        threshold=0.7,
        user_goal="Получить рабочее решение ошибки импорта в Python",
    )

    conversation = ConversationalEvalTestCase(
        turns=[
            EvalTestCase(
                input="Мой скрипт падает с ModuleNotFoundError: requests",
                actual_output="Запустите `pip install requests` и попробуйте снова.",
            ),
            EvalTestCase(
                input="Сработало, спасибо!",
                actual_output="Рад был помочь.",
            ),
        ]
    )

    results = asyncio.run(evaluate_conversations([conversation], [metric]))
    # ---------------------------------------------------------------------------------------

    (_, (conv,)), = results
    (m,) = conv.metrics_data
    assert m.name == "goalAchievementRateMetric" and m.score == 1.0 and m.success is True
    assert [schema_name(r.json) for r in openai_env.requests] == ["SignalsVerdict", "OutcomeVerdict", "SummaryVerdict"]
    log = m.evaluation_log
    assert log["user_goal"] == "Получить рабочее решение ошибки импорта в Python"
    assert log["user_goal_source"] == "user_provided"
    assert log["signals"]["positive_signals"] == ["Сработало, спасибо!"]
    assert log["verdict"]["verdict"] == "fully" and log["base_weight"] == 1.0
    assert log["negative_signal_penalty"] == 0 and log["judge_calls"] == 3
    assert log["summary"] == "The user fixed the import error with pip install."


def test_goal_without_user_goal_infers_it_with_a_fourth_call(openai_env: JudgeServer):
    replies = dict(GOAL_REPLIES, SignalsVerdict={"positive_signals": [], "unmet_requests": [],
                                                 "negative_signals": ["падает с ModuleNotFoundError",
                                                                     "падает с ModuleNotFoundError"]},
                   OutcomeVerdict={"reasoning": "ok", "verdict": "fully"})
    openai_env.reply = lambda request: obj(replies[schema_name(request)])
    conv = ConversationalEvalTestCase(turns=[
        EvalTestCase(input="Мой скрипт падает с ModuleNotFoundError: requests", actual_output="pip install requests"),
        EvalTestCase(input="Сработало, спасибо!", actual_output="Рад был помочь.")])
    (_, (res,)), = asyncio.run(evaluate_conversations([conv], [GoalAchievementRateMetric("gpt-4o")]))
    m = res.metrics_data[0]
    assert len(openai_env.requests) == 4
    assert m.evaluation_log["user_goal_source"] == "llm_inferred"
    assert m.evaluation_log["user_goal"] == "Fix the ModuleNotFoundError"
    assert m.score == pytest.approx(0.9)  # identical negative quotes count once: 1.0 - 0.1


def test_conversations_run_concurrently_and_keep_input_order(openai_env: JudgeServer):
    def reply(request):
        user = request["messages"][-1]["content"]
        verdict = "stall" if "question 3?" in user else "not_applicable"
        return obj({"findings": [], "reason": verdict, "verdict": verdict})

    openai_env.reply = reply
    openai_env.latency = 0.2
    convs = [ConversationalEvalTestCase(name=f"c{i}", turns=[
        EvalTestCase(input=f"question {i}?", actual_output=f"answer {i}")]) for i in range(12)]
    results = asyncio.run(evaluate_conversations(convs, [FailureRateMetric("gpt-4o")]))
    assert openai_env.peak > 1  # measured at the server: calls overlapped (no wall-clock timing)
    assert [r[1][0].name for r in results] == [f"c{i}" for i in range(12)]
    scores = [r[1][0].metrics_data[0].score for r in results]
    assert scores == [1.0, 1.0, 1.0, 0.4] + [1.0] * 8
    assert results[3][1][0].success is False and results[0][1][0].success is True


def test_a_bad_reply_is_an_errored_result_not_an_aborted_run(openai_env: JudgeServer):
    def reply(request):
        if any("broken" in m["content"] for m in request["messages"]):  # re-asks too
            return obj({"findings": [], "reason": "great", "verdict": "excellent"})
        return obj({"findings": [], "reason": "fine", "verdict": "not_applicable"})

    openai_env.reply = reply
    convs = [ConversationalEvalTestCase(turns=[EvalTestCase(input=q, actual_output="a")]) for q in ("ok", "broken")]
    results = asyncio.run(evaluate_conversations(convs, [FailureRateMetric("gpt-4o")]))
    good, bad = (r[1][0].metrics_data[0] for r in results)
    assert good.score == 1.0 and good.success is True
    assert bad.score is None and bad.success is False  # eval_lib would score "excellent" as a pass
    assert bad.evaluation_log["warning"] == "judge_error"
    assert "excellent" in bad.evaluation_log["raw"] and bad.evaluation_log["error"] == bad.reason
    assert results[1][1][0].success is False


def test_verbose_prints_a_box_per_result(openai_env: JudgeServer, capsys):
    openai_env.reply = lambda request: obj(ATLANTIS_VERDICT)
    asyncio.run(evaluate_conversations([atlantis()], [FailureRateMetric("gpt-4o", verbose=True)]))
    out = capsys.readouterr().out
    assert "failureRateMetric" in out and "PASSED" in out and "1.00" in out and "Evaluation log" in out


def test_metric_evaluate_returns_eval_libs_dict(openai_env: JudgeServer, capsys):
    openai_env.reply = lambda request: obj(ATLANTIS_VERDICT)
    metric = FailureRateMetric("gpt-4o")
    out = asyncio.run(metric.evaluate(atlantis()))
    assert set(out) == {"name", "score", "success", "reason", "evaluation_cost", "evaluation_log"}
    assert out["score"] == 1.0 and out["success"] is True
    assert capsys.readouterr().out == ""


class ServerClient(CustomLLMClient):
    """A CustomLLMClient that posts to the scripted server (as a user's own client would)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.calls = 0

    async def chat_complete(self, messages, temperature):
        self.calls += 1
        body = json.dumps({"model": "my-model", "messages": messages, "temperature": temperature}).encode()

        def post():
            req = urllib.request.Request(f"{self.url}/chat/completions", body, {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.load(r)

        reply = await asyncio.to_thread(post)
        return reply["choices"][0]["message"]["content"], 0.002

    def get_model_name(self) -> str:
        return "my-model"


def test_custom_llm_client_is_the_judge(judge_server: JudgeServer):
    judge_server.reply = lambda request: text(json.dumps(ATLANTIS_VERDICT))
    client = ServerClient(judge_server.url)
    results = asyncio.run(evaluate_conversations([atlantis()], [FailureRateMetric(model=client)]))
    m = results[0][1][0].metrics_data[0]
    assert m.score == 1.0 and m.evaluation_model == "my-model" and m.evaluation_cost == pytest.approx(0.002)
    assert client.calls == 1
    sent = judge_server.requests[0].json["messages"]
    assert "JSON" in sent[-1]["content"]  # the client cannot enforce a schema: it is asked for in the prompt


def test_one_metric_object_serves_concurrent_runs(openai_env: JudgeServer):
    openai_env.reply = lambda request: obj({"findings": [], "reason": "r", "verdict": "not_applicable"})
    metric = FailureRateMetric("gpt-4o")
    convs = [ConversationalEvalTestCase(turns=[EvalTestCase(input=f"q{i}", actual_output="a")]) for i in range(3)]

    async def both():
        return await asyncio.gather(evaluate_conversations(convs[:2], [metric]),
                                    evaluate_conversations(convs[2:], [metric]))

    first, second = asyncio.run(both())
    assert len(first) == 2 and len(second) == 1
    with pytest.raises(AttributeError):
        metric.threshold = 0.1  # type: ignore[misc]  # configuration only, frozen


def test_two_metrics_with_their_own_models_and_goals(judge_server: JudgeServer):
    judge_server.reply = lambda request: obj({**GOAL_REPLIES, "FailureRateVerdict": ATLANTIS_VERDICT}[
        schema_name(request)])
    url = judge_server.url
    metrics = [FailureRateMetric(f"openai-compatible:a@{url}"),
               GoalAchievementRateMetric(f"openai-compatible:b@{url}", user_goal="one"),
               GoalAchievementRateMetric(f"openai-compatible:b@{url}", user_goal="two", threshold=0.95)]
    (_, (conv,)), = asyncio.run(evaluate_conversations([atlantis()], metrics))
    assert [m.name for m in conv.metrics_data] == ["failureRateMetric", "goalAchievementRateMetric",
                                                    "goalAchievementRateMetric"]
    assert [m.evaluation_log.get("user_goal") for m in conv.metrics_data] == [None, "one", "two"]
    assert {r.json["model"] for r in judge_server.requests} == {"a", "b"}


def test_bad_configuration_is_reported_up_front():
    with pytest.raises(ConfigError, match="threshold"):
        FailureRateMetric("gpt-4o", threshold=7)
    with pytest.raises(ConfigError, match="model is required"):
        FailureRateMetric("")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        asyncio.run(evaluate_conversations([atlantis()], [FailureRateMetric("gpt-4o")]))
    with pytest.raises(ConfigError, match="not an eval_lib"):
        asyncio.run(evaluate_conversations([atlantis()], ["failure_rate"]))  # type: ignore[list-item]


def test_no_conversations_is_an_empty_list():
    assert asyncio.run(evaluate_conversations([], [FailureRateMetric("gpt-4o")])) == []
