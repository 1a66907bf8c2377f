"""The pytest plugin, exercised in throwaway pytest sessions (pytester)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy  # noqa: F401 - loaded before pytester's in-process runs, which cannot load it a second time
import pytest

pytest_plugins = ["pytester"]

EXAMPLES = Path(__file__).parents[2] / "examples"
INNER = ("-p", "no:cacheprovider", "-p", "no:randomly")  # the inner files' tests read in the order written


@pytest.fixture(autouse=True, scope="module")
def assay_imported_whole():
    """Every assay module imported before the in-process runs. Pytester takes out of ``sys.modules`` what an
    inner run imported first; a module imported again makes new classes while the metric registry keeps the
    old, and a later test in this worker that pickles one (a Dask run) failed: "Can't pickle <class
    'assay.metrics.reference.Contains'>: it's not the same object as assay.metrics.reference.Contains"."""
    import importlib
    import pkgutil

    import assay

    for mod in pkgutil.walk_packages(assay.__path__, "assay."):
        if mod.name.endswith("__main__"):  # `python -m assay`: importing it runs the CLI
            continue
        try:
            importlib.import_module(mod.name)
        except ImportError:  # an optional extra's module (its SDK not installed): nothing of it is registered
            pass

HEADER = '''
import json
from dataclasses import dataclass
import pytest
from assay import MetricContext, metric
from assay.judge import Verdict
from assay.pytest_plugin import assert_passes

def trace(i, tool="search"):
    return {"id": f"t{i}", "turns": [{"input": "q", "output": "the answer", "tool_calls": [{"name": tool}]}],
            "expected": {"tool_calls": [{"name": "search"}]}}
'''

JUDGE = '''
import pydantic

class Score(pydantic.BaseModel):
    score: float
    reason: str

class ScriptedJudge:
    """Answers every request with the same verdict; counts calls."""
    model = "scripted"
    def __init__(self, score, reason):
        self.score, self.reason, self.calls = score, reason, 0
    async def judge(self, request):
        self.calls += 1
        return Verdict(parsed=Score(score=self.score, reason=self.reason), raw="{}", model=self.model)

@metric("judged_helpfulness", dimension="response_quality", requires=("judge",), register=False)
@dataclass(frozen=True, kw_only=True)
class JudgedHelpfulness:
    threshold: float = 0.7
    async def score(self, ctx):
        from assay.judge import JudgeRequest
        v = await ctx.judge.judge(JudgeRequest(messages=({"role": "user", "content": "rate"},), schema=Score))
        return ctx.result(v.parsed.score, v.parsed.reason, evidence=["the answer"])
'''


def test_assay_evaluate_passes_and_fails_with_metric_score_threshold_and_reason(pytester):
    pytester.makepyfile(HEADER + '''
pytestmark = pytest.mark.assay(metrics=["tool_selection_accuracy"])

def test_good(assay_evaluate):
    result = assay_evaluate(trace(1))
    assert result.summary["tool_selection_accuracy"].n == 1

def test_list_with_one_bad(assay_evaluate):
    assay_evaluate([trace(1), trace(2, tool="weather")])

def test_metric_argument_overrides_marker(assay_evaluate):
    assay_evaluate(trace(2, tool="weather"), ["tool_selection_accuracy:threshold=0.0"],
                   thresholds={"tool_calling": 0.0})
''')
    r = pytester.runpytest(*INNER)
    r.assert_outcomes(passed=2, failed=1)
    r.stdout.fnmatch_lines([
        "*AssertionError: assay: 1 metric result failed",
        "*t2: tool_selection_accuracy scored 0.000 < threshold 0.70",
        "*reason: 0 matched of 1 expected and 1 called; missing ?'search'?; unexpected ?'weather'?",
    ])


def test_marker_judge_object_and_the_judges_reason_in_the_failure(pytester):
    pytester.makepyfile(HEADER + JUDGE + '''
STRICT = ScriptedJudge(0.2, "the answer ignores the refund question")

@pytest.mark.assay(judge=STRICT, metrics=[JudgedHelpfulness()])
def test_judged(assay_evaluate):
    assay_evaluate(trace(1))

@pytest.mark.assay(judge=ScriptedJudge(0.9, "fine"), metrics=[JudgedHelpfulness()])
def test_judged_ok(assay_evaluate):
    assay_evaluate(trace(1))
''')
    r = pytester.runpytest(*INNER)
    r.assert_outcomes(passed=1, failed=1)
    r.stdout.fnmatch_lines([
        "*t1: judged_helpfulness scored 0.200 < threshold 0.70",
        "*reason: the answer ignores the refund question",
        "*evidence: 'the answer'",
    ])


def test_session_judge_is_built_once_per_session(pytester):
    pytester.makeconftest('''
import pytest
BUILT = []

@pytest.fixture(scope="session", autouse=True)
def fake_build_judge():
    import assay.judge
    mp = pytest.MonkeyPatch()
    mp.setattr(assay.judge, "build_judge", lambda spec, options=None: BUILT.append(spec) or object())
    yield
    mp.undo()
''')
    pytester.makepyfile('''
import conftest

def test_a(assay_judge):
    assert assay_judge is not None

def test_b(assay_judge, assay_judges):
    assert assay_judges.get() is assay_judge and assay_judges.get("other:model") is not assay_judge

def test_c():
    assert conftest.BUILT == ["openai:some-model", "other:model"]
''')
    r = pytester.runpytest(*INNER, "--assay-judge", "openai:some-model")
    r.assert_outcomes(passed=3)


def test_ini_option_and_no_judge_by_default(pytester, monkeypatch):
    monkeypatch.delenv("ASSAY_JUDGE", raising=False)
    pytester.makepyfile('''
def test_no_judge(assay_judge, assay_judges):
    assert assay_judge is None and assay_judges.default_spec == "ini:model"
''')
    pytester.makeini("[pytest]\nassay_judge = ini:model\n")
    pytester.makeconftest('''
import pytest
@pytest.fixture(scope="session")
def assay_judge():
    return None
''')
    pytester.runpytest(*INNER).assert_outcomes(passed=1)


def test_unknown_marker_option_is_a_usage_error(pytester):
    pytester.makepyfile('''
import pytest

@pytest.mark.assay(metric=["typo"])
def test_x(assay_evaluate):
    pass
''')
    r = pytester.runpytest(*INNER)
    r.assert_outcomes(errors=1)
    r.stdout.fnmatch_lines(["*unknown option(s)*'metric'*valid: judge, metrics*"])


def test_errored_and_null_results(pytester):
    pytester.makepyfile(HEADER + '''
@metric("boom", dimension="custom", register=False)
@dataclass(frozen=True, kw_only=True)
class Boom:
    threshold: float = 0.5
    def score(self, ctx):
        raise RuntimeError("kaput")

def test_errored_fails():
    assert_passes(trace(1), [Boom()])

def test_null_passes_by_default():
    assert_passes({"id": "n", "turns": [{"input": "q", "output": "a", "latency_ms": 5}]},
                  ["tool_selection_accuracy", "latency_score"])

def test_nothing_scored_fails_as_the_cli_does():
    assert_passes({"id": "n", "turns": [{"input": "q", "output": "a"}]}, ["tool_selection_accuracy"])

def test_a_failed_dimension_fails_as_the_cli_does():
    assert_passes(trace(2, tool="weather"), ["tool_selection_accuracy:threshold=0.0"])

@pytest.mark.assay(allow_null=False)
def test_null_fails_when_required(assay_evaluate):
    assay_evaluate({"id": "n", "turns": [{"input": "q", "output": "a", "latency_ms": 5}]},
                   ["tool_selection_accuracy", "latency_score"])
''')
    r = pytester.runpytest(*INNER)
    r.assert_outcomes(passed=1, failed=4)
    r.stdout.fnmatch_lines(["*t1: boom errored (metric_error)*", "*reason: RuntimeError: kaput*",
                            "*could not evaluate: nothing was scored*",
                            "*t2: dimension tool_calling scored 0.000 < threshold 0.70*",
                            "*n: tool_selection_accuracy has no score (missing_data)*"])


def test_the_example_agent_tests_pass_serially_and_under_xdist(pytester):
    pytest.importorskip("xdist")
    shutil.copy(EXAMPLES / "test_agent_example.py", pytester.path / "test_agent_example.py")
    shutil.copy(EXAMPLES / "traces.jsonl", pytester.path / "traces.jsonl")
    pytester.runpytest(*INNER).assert_outcomes(passed=6)
    r = pytester.runpytest_subprocess(*INNER, "-n", "2")
    r.assert_outcomes(passed=6)
    r.stdout.fnmatch_lines(["*2 workers*"])


def test_xdist_workers_build_their_own_judges(pytester, monkeypatch, tmp_path):
    pytest.importorskip("xdist")
    monkeypatch.setenv("CALLS_DIR", str(tmp_path))
    pytester.makepyfile(HEADER + JUDGE + '''
import os
from pathlib import Path

JUDGE = ScriptedJudge(0.9, "fine")

@pytest.mark.parametrize("i", range(8))
@pytest.mark.assay(judge=JUDGE, metrics=[JudgedHelpfulness()])
def test_many(assay_evaluate, i):
    assay_evaluate(trace(i))
    Path(os.environ["CALLS_DIR"], f"{i}").write_text(f"{os.getpid()} {JUDGE.calls}")
''')
    r = pytester.runpytest_subprocess(*INNER, "-n", "2")
    r.assert_outcomes(passed=8)
    seen = [tuple(map(int, p.read_text().split())) for p in tmp_path.iterdir()]
    per_worker: dict[int, int] = {}
    for pid, calls in seen:
        per_worker[pid] = max(per_worker.get(pid, 0), calls)
    assert len(per_worker) == 2  # two processes, each with its own judge and its own count
    assert sum(per_worker.values()) == 8


def test_a_judge_metric_without_a_judge_is_one_flag_correct_line(pytester, monkeypatch):
    monkeypatch.delenv("ASSAY_JUDGE", raising=False)
    pytester.makepyfile(HEADER + '''
def test_needs_judge(assay_evaluate):
    assay_evaluate(trace(1), metrics=["answer_relevance"])
''')
    r = pytester.runpytest_subprocess(*INNER)
    r.assert_outcomes(failed=1)
    out = r.stdout.str()
    r.stdout.fnmatch_lines(["*assay: metric 'answer_relevance' needs a judge; no judge configured: pass --assay-judge "
                            "MODEL (or set assay_judge in the ini file, or ASSAY_JUDGE), or give "
                            "@pytest.mark.assay(judge=...)"])
    assert "pass --judge" not in out and "Traceback" not in out and "_run.py" not in out
    failure = out.split("_ test_needs_judge _", 1)[1].split("short test summary", 1)[0]
    assert len(failure.strip().splitlines()) < 6  # was a 60-line traceback through the engine


def test_session_summary_lists_metrics_pass_rates_and_judge_usage(pytester):
    pytester.makepyfile(HEADER + JUDGE + '''
@pytest.mark.assay(metrics=["tool_selection_accuracy"])
def test_tools(assay_evaluate):
    assay_evaluate([trace(1), trace(2)])

@pytest.mark.assay(metrics=["tool_selection_accuracy"])
def test_tools_bad(assay_evaluate):
    assay_evaluate(trace(3, tool="weather"))

@pytest.mark.assay(judge=ScriptedJudge(0.9, "fine"), metrics=[JudgedHelpfulness()])
def test_judged(assay_evaluate):
    assay_evaluate([trace(4), trace(5)])
''')
    r = pytester.runpytest_subprocess(*INNER)
    r.assert_outcomes(passed=2, failed=1)
    r.stdout.fnmatch_lines(["*= assay: 3 evaluation(s), 5 trace(s) =*",
                            "judged_helpfulness       100.0%  2/2 passed",
                            "tool_selection_accuracy   66.7%  2/3 passed",
                            "judge calls *, tokens *, cost *"])


def _report_session(pytester, *args):
    pytester.makepyfile(HEADER + '''
@pytest.mark.assay(metrics=["tool_selection_accuracy"])
@pytest.mark.parametrize("i", range(6))
def test_many(assay_evaluate, i):
    assay_evaluate(trace(i, tool="search" if i % 3 else "weather"))
''')
    report = pytester.path / "out" / "session.html"
    r = pytester.runpytest_subprocess(*INNER, f"--assay-report={report}", *args)
    r.assert_outcomes(passed=4, failed=2)
    r.stdout.fnmatch_lines([f"assay report: {report}"])
    page = report.read_text(encoding="utf-8")
    assert page.count('<details id="trace-') == 6  # every trace, with its conversation
    for i in range(6):
        assert f"test_many[{i}] [1] t{i}" in page
    assert 'id="failures"' in page and "Failures (2 of 6 traces)" in page
    assert page.count(">the answer<") >= 6  # each trace's conversation is in its view
    return page


def test_assay_report_writes_the_sessions_html_report(pytester):
    _report_session(pytester)


def test_assay_report_under_xdist_merges_the_workers(pytester):
    pytest.importorskip("xdist")
    _report_session(pytester, "-n", "2")


def test_assay_evaluate_scores_every_trace_of_a_generator(pytester):
    pytester.makepyfile(HEADER + '''
pytestmark = pytest.mark.assay(metrics=["tool_selection_accuracy"])

def test_generator_all_good(assay_evaluate):
    result = assay_evaluate(trace(i) for i in range(3))
    assert [t.id for t in result.traces] == ["t0", "t1", "t2"]

def test_generator_first_is_bad(assay_evaluate):
    assay_evaluate(trace(i, tool="weather" if i == 0 else "search") for i in range(3))
''')
    r = pytester.runpytest(*INNER)
    r.assert_outcomes(passed=1, failed=1)
    r.stdout.fnmatch_lines(["*t0: tool_selection_accuracy scored 0.000 < threshold 0.70*"])
