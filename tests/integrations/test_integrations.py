"""The ragas_* and deepeval_* metrics: always listed; without their extra a clear not_evaluated
result naming the pip command; with it, scored through assay's judge (run only where the extra
is importable, skipped elsewhere)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from assay import Warning, evaluate
from assay.errors import ConfigError
from assay.metrics._base import REGISTRY
from tests.integrations.agreeable import AgreeableJudge

RAGAS = ["ragas_faithfulness", "ragas_context_precision", "ragas_context_recall", "ragas_answer_precision",
         "ragas_answer_recall", "ragas_answer_correctness", "ragas_tool_call_accuracy"]
DEEPEVAL = ["deepeval_contextual_precision", "deepeval_contextual_recall", "deepeval_contextual_relevancy",
            "deepeval_hallucination", "deepeval_faithfulness", "deepeval_answer_relevancy",
            "deepeval_tool_correctness", "deepeval_geval"]
JUDGE_FREE = {"ragas_tool_call_accuracy", "deepeval_tool_correctness"}
HAS = {p: importlib.util.find_spec(p) is not None for p in ("ragas", "deepeval")}

RAIN = {"id": "rain", "turns": [
    {"input": "Hi", "output": "Hello! Ask me about the weather."},
    {"input": "What causes rain?", "output": "Rain forms when water vapour condenses into droplets.",
     "context": ["Rain is condensed water vapour falling from clouds."],
     "expected": {"output": "Condensation of water vapour."},
     "tool_calls": [{"name": "search", "arguments": {"q": "rain"}, "result": "..."}]}],
    "expected": {"tool_calls": [{"name": "search", "arguments": {"q": "rain"}}]}}


def params(name: str) -> object:
    return {"name": name, "criteria": "Does the reply answer the question correctly?"} \
        if name == "deepeval_geval" else name


@pytest.fixture(autouse=True)
def quiet_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    """No analytics from the libraries while testing (their documented opt-outs)."""
    monkeypatch.setenv("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")


def test_every_seed_004_integration_metric_is_listed_opt_in():
    names = set(REGISTRY.names())
    assert set(RAGAS + DEEPEVAL) <= names
    for name in RAGAS + DEEPEVAL:
        spec = REGISTRY.get(name).spec
        assert spec.default is False and spec.summary
        assert spec.needs_judge is (name not in JUDGE_FREE)
    assert REGISTRY.get("ragas_tool_call_accuracy").spec.dimension == "tool_calling"


def test_listing_them_imports_neither_library():
    code = ("import sys; from assay.metrics._base import REGISTRY; n = REGISTRY.names(); "
            "print(sorted(m for m in ('ragas', 'deepeval', 'langchain_core') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_default_runs_never_include_them():
    run = evaluate([RAIN], judge=AgreeableJudge())
    assert not any(n.startswith(("ragas_", "deepeval_")) for n in run.traces[0].metrics)


def test_geval_needs_criteria():
    with pytest.raises(ConfigError, match="criteria"):
        REGISTRY.create("deepeval_geval")
    assert REGISTRY.create("deepeval_geval", evaluation_steps=["Check the facts"]).evaluation_steps == (
        "Check the facts",)


@pytest.mark.parametrize("package, names", [("ragas", RAGAS), ("deepeval", DEEPEVAL)], ids=["ragas", "deepeval"])
def test_without_the_extra_each_result_names_the_pip_command(package, names):
    if HAS[package]:
        pytest.skip(f"{package} is installed here")
    judge = AgreeableJudge()
    run = evaluate([RAIN], [params(n) for n in names], judge=judge)
    for name in names:
        r = run.traces[0].metrics[name]
        assert r.score is None and r.warning is Warning.NOT_EVALUATED, name
        assert r.reason == f"{package} is not installed: pip install 'assay[{package}]'"
        assert r.details["missing_extra"] == package
    assert judge.requests == [] and run.summary[names[0]].warnings == {"not_evaluated": 1}


# -- with the extras ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", DEEPEVAL)
def test_deepeval_metrics_score_through_the_assay_judge(name):
    pytest.importorskip("deepeval")
    judge = AgreeableJudge()
    r = evaluate([RAIN], [params(name)], judge=judge).traces[0].metrics[name]
    assert r.warning is None and r.score is not None and 0.0 <= r.score <= 1.0, r.reason
    assert r.details["library"] == "deepeval" and r.judge_calls == len(judge.requests)
    if name in JUDGE_FREE:
        assert r.score == 1.0 and r.judge_calls == 0
    else:
        assert r.judge_calls >= 1 and r.details["judge_model"] == "agreeable"
        prompts = "\n".join(q.messages[0]["content"] for q in judge.requests)
        last = ("What causes rain?", "Rain forms when water vapour", "Condensation of water vapour.",
                "Rain is condensed water vapour")
        assert any(t in prompts for t in last) and "Hello! Ask me" not in prompts  # the last exchange is scored
        assert all(q.key.startswith(f"{name}@deepeval-") for q in judge.requests)


@pytest.mark.parametrize("name", RAGAS)
def test_ragas_metrics_score_through_the_assay_judge(name):
    pytest.importorskip("ragas")
    judge = AgreeableJudge()
    r = evaluate([RAIN], [name], judge=judge).traces[0].metrics[name]
    assert r.warning is None and r.score is not None and 0.0 <= r.score <= 1.0, r.reason
    assert r.details["library"] == "ragas" and r.judge_calls == len(judge.requests)
    if name in JUDGE_FREE:
        assert r.score == 1.0 and r.judge_calls == 0
    else:
        assert r.judge_calls >= 1
        assert all(q.key.startswith(f"{name}@ragas-") for q in judge.requests)


@pytest.mark.parametrize("package, name, schema", [
    ("deepeval", "deepeval_faithfulness", "Truths"),
    ("ragas", "ragas_faithfulness", "NLIStatementOutput"),
], ids=["deepeval", "ragas"])
def test_a_judge_failure_is_a_judge_error_with_the_raw_reply(package, name, schema):
    pytest.importorskip(package)
    r = evaluate([RAIN], [name], judge=AgreeableJudge(fail=schema)).traces[0].metrics[name]
    assert r.score is None and r.warning is Warning.JUDGE_ERROR
    assert r.details["raw"] == "not json at all" and "scripted failure" in r.reason


@pytest.mark.parametrize("package, name", [("deepeval", "deepeval_faithfulness"), ("ragas", "ragas_context_recall")],
                         ids=["deepeval", "ragas"])
def test_missing_inputs_are_missing_data_without_a_judge_call(package, name):
    pytest.importorskip(package)
    judge = AgreeableJudge()
    bare = {"id": "bare", "turns": [{"input": "q", "output": "a"}]}
    r = evaluate([bare], [name], judge=judge).traces[0].metrics[name]
    assert r.warning is Warning.MISSING_DATA and "needs" in r.reason and judge.requests == []


@pytest.mark.parametrize("name", ["deepeval_hallucination", "deepeval_geval"])
def test_deepeval_4_gets_no_deprecated_call(name, monkeypatch):
    """DeepEval 4 renamed LLMTestCaseParams (SingleTurnParams) and flipped HallucinationMetric's
    direction (assay handles it), warning about both; assay's calls raise neither warning."""
    import warnings

    pytest.importorskip("deepeval")
    notices = importlib.import_module("deepeval.metrics.utils.metrics") \
        if importlib.util.find_spec("deepeval.metrics.utils.metrics") else None
    if hasattr(notices, "_score_direction_warned"):  # DeepEval says it once per process: say it again
        monkeypatch.setattr(notices, "_score_direction_warned", set())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = evaluate([RAIN], [params(name)], judge=AgreeableJudge()).traces[0].metrics[name]
    assert r.warning is None, r.reason
    said = [str(w.message) for w in seen if issubclass(w.category, DeprecationWarning)]
    assert not [s for s in said if "LLMTestCaseParams" in s or "HallucinationMetric" in s], said


def test_ragas_analytics_are_what_the_module_says():
    """ragas starts its analytics thread on import even with RAGAS_DO_NOT_TRACK=true, and then sends nothing."""
    pytest.importorskip("ragas")
    from assay.metrics.integrations import _ragas

    code = ("import threading, ragas._analytics as a\n"
            "sent = []\n"
            "a.requests.post = lambda *args, **kw: sent.append(args)\n"
            "a.track(a.IsCompleteEvent(event_type='probe'))\n"
            "print(a._analytics_batcher._flush_thread.is_alive(), sent)\n")
    env = {**__import__("os").environ, "RAGAS_DO_NOT_TRACK": "true", "PYTHONPATH": ":".join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.split() == ["True", "[]"], out.stderr[-2000:]
    doc = " ".join(_ragas.__doc__.split())
    assert "starts ragas's analytics thread and exit hook whatever the environment says" in doc
    assert "RAGAS_DO_NOT_TRACK=true stops it sending anything" in doc
