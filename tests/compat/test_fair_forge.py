"""assay.compat.fair_forge: the seed 001 snippets (frequentist, Bayesian, custom tool weights, the
standalone pass@k loop), the seed's numbers, and judge errors that are never a silent 0.0."""

from __future__ import annotations

import asyncio
import json

import pytest

from assay.compat.fair_forge import Agentic as TopLevelAgentic
from assay.compat.fair_forge import (
    AgenticJudgeError,
    AgenticMetric,
    Dataset,
    ToolCorrectnessScore,
)
from assay.compat.fair_forge.metrics.agentic import Agentic, pass_at_k, pass_pow_k
from assay.compat.fair_forge.statistical import BayesianMode, FrequentistMode
from assay.errors import ConfigError
from tests.compat.fakes import ChatGroq, ScriptedChatModel
from tests.compat.your_retriever import AgenticRetriever, SevenOfTen
from tests.support.judge_server import JudgeServer, text


def grade(content: str) -> float:
    """The correctness the scripted judge gives an answer quoted in its request."""
    return 0.2 if "wrong-" in content else 0.9


def verdict_for(messages) -> dict:
    content = "\n".join(m["content"] for m in messages)
    return {"evidence": [], "reasoning": "compared with the reference", "correctness": grade(content)}


def serve_verdicts(server: JudgeServer) -> None:
    server.reply = lambda request: text(json.dumps(verdict_for(request["messages"])))


def test_seed_001_frequentist_snippet(chat_url: JudgeServer, capsys):
    serve_verdicts(chat_url)

    # --- seed 001 "Frequentist (default)", verbatim but for the import lines ----------------
    judge_model = ChatGroq(model="llama-3.3-70b-versatile", api_key="your-api-key", temperature=0.0)

    metrics = Agentic.run(
        AgenticRetriever,
        model=judge_model,
        k=3,
        threshold=0.7,
    )

    for metric in metrics:
        print(f"{metric.session_id}:")
        print(f"  pass@{metric.k} = {metric.pass_at_k:.3f}")
        print(f"  pass^{metric.k} = {metric.pass_pow_k:.3f}")
        # metric.pass_at_k_ci_low / ci_high are None in frequentist mode
    # -----------------------------------------------------------------------------------------

    assert capsys.readouterr().out == "conversation_001:\n  pass@3 = 1.000\n  pass^3 = 1.000\n"
    (m,) = metrics
    assert isinstance(m, AgenticMetric)
    assert (m.session_id, m.assistant_id, m.total_interactions, m.correct_interactions) == (
        "conversation_001", "agent_v1", 2, 2)
    assert m.is_fully_correct and m.threshold == 0.7 and m.correct_indices == [0, 1]
    assert m.correctness_scores == [0.9, 0.9]
    assert m.pass_at_k_ci_low is None and m.pass_pow_k_ci_high is None
    tool, none = m.tool_correctness_scores
    assert isinstance(tool, ToolCorrectnessScore) and none is None
    assert (tool.tool_selection_correct, tool.parameter_accuracy, tool.sequence_correct, tool.result_utilization,
            tool.overall_correctness, tool.is_correct) == (1.0, 1.0, 1.0, 1.0, 1.0, True)
    assert len(chat_url.requests) == 2 and {r.json["model"] for r in chat_url.requests} == {"llama-3.3-70b-versatile"}
    # the reference answer reaches the judge (it does not in some Fair Forge metrics)
    assert any("25" in msg["content"] and "100 divided by 4 is 25." in msg["content"]
               for r in chat_url.requests for msg in r.json["messages"])


def test_seed_001_numbers_seven_of_ten_frequentist():
    judge = ScriptedChatModel(verdict_for)
    (m,) = Agentic.run(SevenOfTen, model=judge, k=3, threshold=0.7)
    assert (m.total_interactions, m.correct_interactions, m.is_fully_correct) == (10, 7, False)
    assert m.correct_indices == list(range(7))
    assert round(m.pass_at_k, 3) == 0.973 and round(m.pass_pow_k, 3) == 0.343
    assert m.pass_at_k == pytest.approx(1 - 0.3 ** 3) and m.pass_pow_k == pytest.approx(0.7 ** 3)
    assert m.tool_correctness_scores == [None] * 10
    assert judge.structured_calls == 10  # with_structured_output is used when the model has it


def test_seed_001_bayesian_snippet_gives_the_exact_values(chat_url: JudgeServer, capsys):
    serve_verdicts(chat_url)
    AgenticRetriever = SevenOfTen

    # --- seed 001 "Bayesian", verbatim but for the import lines -------------------------------
    judge_model = ChatGroq(model="llama-3.3-70b-versatile", api_key="your-api-key", temperature=0.0)

    metrics = Agentic.run(
        AgenticRetriever,
        model=judge_model,
        k=3,
        threshold=0.7,
        statistical_mode=BayesianMode(mc_samples=5000, ci_level=0.95),
    )

    for metric in metrics:
        print(f"{metric.session_id}:")
        print(f"  pass@{metric.k} = {metric.pass_at_k:.3f}  [{metric.pass_at_k_ci_low:.3f}, {metric.pass_at_k_ci_high:.3f}]")
        print(f"  pass^{metric.k} = {metric.pass_pow_k:.3f}  [{metric.pass_pow_k_ci_low:.3f}, {metric.pass_pow_k_ci_high:.3f}]")
    # -----------------------------------------------------------------------------------------

    out = capsys.readouterr().out
    # PEERS.md: the exact posterior values, not the seed's printed 0.960 [0.820, 0.998] / 0.330 [0.126, 0.570]
    assert out == ("seven_of_ten:\n  pass@3 = 0.945  [0.773, 0.999]\n  pass^3 = 0.330  [0.059, 0.707]\n")
    (m,) = metrics
    assert round(m.pass_at_k, 4) == 0.9451 and round(m.pass_pow_k, 4) == 0.3297
    assert (round(m.pass_at_k_ci_low, 4), round(m.pass_at_k_ci_high, 4)) == (0.7733, 0.9987)
    assert (round(m.pass_pow_k_ci_low, 4), round(m.pass_pow_k_ci_high, 4)) == (0.0594, 0.7067)


def test_bayesian_tab_snippet_with_explicit_priors():
    AgenticRetriever = SevenOfTen
    judge_model = ScriptedChatModel(verdict_for)
    metrics = Agentic.run(
        AgenticRetriever,
        model=judge_model,
        k=3,
        statistical_mode=BayesianMode(
            mc_samples=5000,
            ci_level=0.95,
            beta_prior_a=1.0,
            beta_prior_b=1.0,
        ),
    )
    lines = []
    for metric in metrics:
        lines.append(f"pass@3 = {metric.pass_at_k:.3f}  [{metric.pass_at_k_ci_low:.3f}, {metric.pass_at_k_ci_high:.3f}]")
        lines.append(f"pass^3 = {metric.pass_pow_k:.3f}  [{metric.pass_pow_k_ci_low:.3f}, {metric.pass_pow_k_ci_high:.3f}]")
    assert lines == ["pass@3 = 0.945  [0.773, 0.999]", "pass^3 = 0.330  [0.059, 0.707]"]
    mc = Agentic.run(SevenOfTen, model=ScriptedChatModel(verdict_for), k=3,
                     statistical_mode=BayesianMode(method="monte_carlo"))[0]
    assert mc.pass_at_k == pytest.approx(0.9451, abs=0.01) and mc.pass_pow_k == pytest.approx(0.3297, abs=0.01)


def test_custom_tool_weights_snippet():
    judge_model = ScriptedChatModel(verdict_for)

    class Retriever(AgenticRetriever):  # the seed's data, with the answer ignoring the tool result
        def load_dataset(self):
            (d,) = super().load_dataset()
            d.conversation[0].agentic["final_answer_uses_tools"] = False
            return [d]

    AgenticRetriever_ = Retriever
    # --- seed 001 "Custom Tool Weights", verbatim but for the data source's name ---------------
    metrics = Agentic.run(
        AgenticRetriever_,
        model=judge_model,
        k=3,
        tool_weights={
            "selection": 0.4,
            "parameters": 0.2,
            "sequence": 0.1,
            "utilization": 0.3,
        },
    )
    # -------------------------------------------------------------------------------------------
    tool = metrics[0].tool_correctness_scores[0]
    assert tool.result_utilization == 0.0
    assert tool.overall_correctness == pytest.approx(0.7) and tool.is_correct is False
    lenient = Agentic.run(Retriever, model=ScriptedChatModel(verdict_for), k=3, tool_threshold=0.7)
    assert lenient[0].tool_correctness_scores[0].overall_correctness == pytest.approx(0.75)
    assert lenient[0].tool_correctness_scores[0].is_correct is True


def test_standalone_pass_at_k_loop_snippet(capsys):
    metrics = Agentic.run(SevenOfTen, model=ScriptedChatModel(verdict_for), k=3)

    # --- seed 001 "Aggregation Functions", verbatim ---------------------------------------------
    for metric in metrics:
        for k in [1, 3, 5, 10]:
            pak = pass_at_k(metric.total_interactions, metric.correct_interactions, k)
            ppk = pass_pow_k(metric.total_interactions, metric.correct_interactions, k)
            print(f"  K={k}: pass@K={pak:.3f}  pass^K={ppk:.3f}")
    # ---------------------------------------------------------------------------------------------

    assert capsys.readouterr().out.splitlines() == [
        "  K=1: pass@K=0.700  pass^K=0.700",
        "  K=3: pass@K=0.973  pass^K=0.343",
        "  K=5: pass@K=0.998  pass^K=0.168",
        "  K=10: pass@K=1.000  pass^K=0.028",
    ]


def test_troubleshooting_snippet_over_tool_scores():
    (metric,) = Agentic.run(AgenticRetriever, model=ScriptedChatModel(verdict_for), k=3)
    valid = [tc for tc in metric.tool_correctness_scores if tc is not None]
    avg = sum(tc.overall_correctness for tc in valid) / len(valid)
    assert avg == 1.0


def test_judge_errors_are_raised_not_silent_zeros():
    def answer(messages):
        content = "\n".join(m["content"] for m in messages)
        if "wrong-9" in content:
            return "I'd rather not grade this."  # never valid, also when re-asked
        return verdict_for(messages)

    class Two(SevenOfTen):
        def load_dataset(self):
            (d,) = super().load_dataset()
            ok = d.model_copy(update={"session_id": "fine", "conversation": d.conversation[:9]})
            return [ok, d]

    with pytest.raises(AgenticJudgeError) as info:
        Agentic.run(Two, model=ScriptedChatModel(answer, structured=False), k=3)
    err = info.value
    assert list(err.failures) == ["seven_of_ten"] and "judge_error" in err.failures["seven_of_ten"]
    assert err.raw["seven_of_ten"] == "I'd rather not grade this."
    assert [m.session_id for m in err.results] == ["fine"] and err.results[0].correct_interactions == 7
    assert "1 of 2 conversation(s)" in str(err)


def test_plain_json_with_custom_clauses_is_unwrapped():
    judge = ScriptedChatModel(verdict_for, structured=False, wrap=("<json>", "</json>"))
    (m,) = Agentic.run(SevenOfTen, model=judge, k=3, use_structured_output=False,
                       bos_json_clause="<json>", eos_json_clause="</json>")
    assert m.correct_interactions == 7 and judge.structured_calls == 0
    # the default ```json fence parses too
    fenced = ScriptedChatModel(verdict_for, wrap=("```json", "```"))
    assert Agentic.run(SevenOfTen, model=fenced, k=3, use_structured_output=False)[0].correct_interactions == 7
    assert fenced.structured_calls == 0


def test_interactions_are_judged_concurrently(chat_url: JudgeServer):
    serve_verdicts(chat_url)
    chat_url.latency = 0.1
    Agentic.run(SevenOfTen, model=ChatGroq(model="m"), k=3)
    assert len(chat_url.requests) == 10 and chat_url.peak > 1


def test_verbose_prints_a_table_and_quiet_prints_nothing(capsys):
    Agentic.run(SevenOfTen, model=ScriptedChatModel(verdict_for), k=3)
    assert capsys.readouterr().out == ""
    Agentic.run(SevenOfTen, model=ScriptedChatModel(verdict_for), k=3, verbose=True)
    out = capsys.readouterr().out
    assert "seven_of_ten" in out and "7/10" in out and "0.973" in out


def test_retriever_instances_lists_and_kwargs():
    class Configured(SevenOfTen):
        def load_dataset(self):
            (d,) = super().load_dataset()
            return [d.model_copy(update={"session_id": self.kwargs["name"]})]

    judge = ScriptedChatModel(verdict_for)
    assert Agentic.run(Configured, model=judge, k=1, name="x")[0].session_id == "x"
    assert Agentic.run(Configured(name="y"), model=judge, k=1)[0].session_id == "y"
    data = SevenOfTen().load_dataset()
    assert Agentic.run([d.model_dump() for d in data], model=judge, k=1)[0].correct_interactions == 7
    assert TopLevelAgentic is Agentic and isinstance(data[0], Dataset)


def test_arun_on_the_callers_loop():
    (m,) = asyncio.run(Agentic.arun(SevenOfTen, model=ScriptedChatModel(verdict_for), k=3))
    assert m.correct_interactions == 7


@pytest.mark.parametrize("kwargs, match", [
    ({"k": 0}, "k must be"),
    ({"k": 3, "threshold": 1.5}, "answer_threshold"),
    ({"k": 3, "tool_weights": {"speed": 1.0}}, "unknown aspect"),
    ({"k": 3, "statistical_mode": "sometimes"}, "statistical mode"),
    ({}, "k is required"),
], ids=["k0", "threshold", "weights", "mode", "no-k"])
def test_bad_arguments_are_config_errors(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        Agentic.run(SevenOfTen, model=ScriptedChatModel(verdict_for), **kwargs)


def test_frequentist_mode_is_the_default_and_importable():
    (m,) = Agentic.run(SevenOfTen, model=ScriptedChatModel(verdict_for), k=3, statistical_mode=FrequentistMode())
    assert m.pass_at_k_ci_low is None
