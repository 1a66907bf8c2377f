"""Judging starts at once: each trace starts before the next one is read (not once a whole window is
read), and the plan of judge calls is counted as the input is read, equal to a plan made beforehand."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from assay import Evaluation, MetricContext
from assay.cli._progress import RunProgress
from assay.engine._calls import CallPlan, plan_calls, planner_for
from assay.judge import make_judge
from assay.judge._stats import JudgeStats
from assay.metrics import Registry, metric
from assay.model import Trace

ROOT = Path(__file__).resolve().parents[2]

def trace(i: int, turns: int = 1, **kw) -> dict:
    return {"id": f"t{i}", "turns": [{"input": f"q{i}.{t}", "output": f"a{i}.{t}"} for t in range(turns)], **kw}


def test_each_trace_starts_before_the_next_is_read():
    """The first trace's metric runs once a record or two have been read (its metrics start one loop step
    after the trace), not once the window (256) has."""
    reg = Registry()
    pulled = 0
    at_start: list[int] = []

    @metric("waits", dimension="response_quality", registry=reg)
    @dataclass(frozen=True, kw_only=True)
    class Waits:
        threshold: float = 0.5

        async def score(self, ctx: MetricContext):
            at_start.append(pulled)
            await asyncio.sleep(0)
            return ctx.result(1.0)

    def source():
        nonlocal pulled
        for i in range(600):
            pulled += 1
            yield trace(i)

    result = Evaluation(["waits"], registry=reg).run(source())
    assert result.run.n_traces == 600 and [t.id for t in result.traces] == [f"t{i}" for i in range(600)]
    assert at_start[0] <= 2  # (it was 256: every trace of the window was read before any started)
    assert all(n <= i + 2 for i, n in enumerate(at_start))  # no trace waited for more than the next one to be read


def test_the_plan_counted_while_reading_equals_the_plan_made_beforehand():
    """Per-turn, exact (planned_calls) and data-dependent metrics, repeats: the same counts as before the run."""
    traces = [trace(0, turns=3), trace(1, expected={"goal": "book a table"}), trace(2), trace(3, turns=2)]
    judge = make_judge("openai-compatible:m@http://127.0.0.1:9/v1", dry_run=True)  # sends nothing
    metrics = ["answer_relevance", "goal_achievement_rate", "holistic_llm_judge", "tool_selection_accuracy"]
    evaluation = Evaluation(metrics, judge=judge, repeats=2, window=2)
    evaluation.planner = planner_for(evaluation)
    seen: list[tuple[int, bool]] = []
    evaluation.run(traces, on_result=lambda _: seen.append((evaluation.planner.plan.total,
                                                               evaluation.planner.plan.complete)))
    before = plan_calls(evaluation.metrics, [Trace.model_validate(t) for t in traces], repeats=2)
    got = evaluation.planner.plan
    assert got.complete and (got.traces, got.calls) == (before.traces, before.calls)
    assert got.calls["answer_relevance"] == 2 * 7 and got.total > got.calls["answer_relevance"]  # 2 repeats x 7 turns
    # with a window of 2, the first results came before the input was read to its end: the plan grew as it was read
    assert seen[0][1] is False and seen[0][0] < got.total and seen[-1][0] == got.total


def test_an_interrupted_read_leaves_the_plan_incomplete():
    evaluation = Evaluation(["holistic_llm_judge"], judge=make_judge("openai-compatible:m@http://127.0.0.1:9/v1",
                                                                      dry_run=True), window=1)
    evaluation.planner = planner_for(evaluation)
    stream = evaluation.stream([trace(i) for i in range(10)])
    next(stream)
    stream.close()  # the caller stops reading after one result
    plan = evaluation.planner.plan
    assert not plan.complete and 1 <= plan.total < 10


def test_progress_estimates_the_total_until_the_input_is_read():
    stats = JudgeStats()
    stats.requests = 30
    plan = CallPlan({"m": 10}, {"m": 50}, complete=False)
    read = [250]
    progress = RunProgress(stats=stats, planned_calls=plan, read=(lambda: read[0], 1000))
    assert progress.counts() == ("judge calls", 30, 200)  # 50 planned in the first quarter of the input
    assert "judge calls 30/~200" in progress.describe()
    read[0] = 1000  # all of it in the reader's buffer, not all of it parsed: what is planned so far, at least
    assert progress.counts() == ("judge calls", 30, 50)
    assert "judge calls 30/50+ " in progress.describe() and "ETA" not in progress.describe()
    plan.calls["m"], plan.complete = 180, True
    assert progress.counts() == ("judge calls", 30, 180)
    assert "judge calls 30/180 " in progress.describe() + " " and "~" not in progress.describe()
    assert RunProgress(stats=stats, planned_calls=12).counts() == ("judge calls", 30, 12)  # a number, as before


def test_the_finish_imports_load_off_the_event_loop_thread():
    """numpy and assay.stats load while the first judge calls are in flight, in a thread: the loop's own
    thread goes on reading replies. A finder holds numpy's import until the caller has returned, so an
    import on the calling thread would show as the caller's name (after the finder's 10 s wait)."""
    code = (
        "import json, sys, threading\n"
        "gate, seen = threading.Event(), []\n"
        "class Hold:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'numpy':\n"
        "            seen.append(threading.current_thread().name); gate.wait(10)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Hold())\n"
        "from assay.engine import _run\n"
        "_run._load_finish(True); _run._load_finish(True)\n"  # the second call starts nothing more
        "returned_first = 'assay.stats' not in sys.modules\n"
        "gate.set()\n"
        "loaders = [t for t in threading.enumerate() if t.name == 'assay-load-finish']\n"
        "for t in loaders: t.join(30)\n"
        "print(json.dumps({'seen': seen, 'returned_first': returned_first, 'loaders': len(loaders),\n"
        "                  'stats': 'assay.stats' in sys.modules}))\n")
    out = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
    assert out == {"seen": ["assay-load-finish"], "returned_first": True, "loaders": 1, "stats": True}


def test_verdict_models_are_built_off_the_event_loop_thread_before_numpy():
    """The verdict models the first requests went out without are built in the same thread, first (the first
    replies need them; the run's end needs numpy); a run without intervals builds them all the same. A model
    asked for on the calling thread meanwhile waits for the thread's build and is the same class."""
    code = (
        "import json, sys, threading\n"
        "gate, seen = threading.Event(), []\n"
        "class Hold:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name in ('pydantic', 'numpy'):\n"
        "            seen.append((name, threading.current_thread().name))\n"
        "            if name == 'pydantic': gate.wait(10)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Hold())\n"
        "from assay.engine import _run\n"
        "from assay.metrics._judged import scale_schema\n"
        "schema = scale_schema(1, 5, compact=True)\n"
        "_run._load_finish(sys.argv[1] == 'intervals'); _run._load_finish(sys.argv[1] == 'intervals')\n"
        "returned_first = 'pydantic' not in sys.modules\n"
        "loaders = [t for t in threading.enumerate() if t.name == 'assay-load-finish']\n"
        "gate.set()\n"
        "model = schema.model\n"  # waits for the thread's build if it is still going
        "for t in loaders: t.join(30)\n"
        "print(json.dumps({'seen': seen, 'returned_first': returned_first, 'loaders': len(loaders),\n"
        "                  'same': model is schema.base.model, 'stats': 'assay.stats' in sys.modules}))\n")
    for mode, stats in (("intervals", True), ("none", False)):
        out = json.loads(subprocess.run([sys.executable, "-c", code, mode], check=True, capture_output=True,
                                        text=True).stdout)
        expected = [["pydantic", "assay-load-finish"]] + ([["numpy", "assay-load-finish"]] if stats else [])
        assert out == {"seen": expected, "returned_first": True, "loaders": 1, "same": True, "stats": stats}, mode


def test_no_finishing_thread_under_an_import_hook_that_parses_source():
    """Under pytest's assertion rewriting (which covers assay through its plugin) two threads importing at once
    can fail in either thread on CPython 3.11 ("AST constructor recursion depth mismatch"): the run's end imports
    on the main thread instead."""
    from assay.engine import _run

    assert _run._parsing_importer()  # this test runs under pytest's rewriting hook
    code = (
        "import json, sys, threading\n"
        "class Rewriter:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        return None\n"
        "Rewriter.__module__ = '_pytest.assertion.rewrite'\n"
        "sys.meta_path.insert(0, Rewriter())\n"
        "from assay.engine import _run\n"
        "_run._load_finish(True)\n"
        "print(json.dumps([t.name for t in threading.enumerate() if t.name == 'assay-load-finish']))\n")
    out = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
    assert out == []


def test_near_end_runs_once_in_a_thread_after_the_input_is_read_and_before_the_run_ends():
    """``Evaluation.near_end`` (the CLI imports its table's modules there) runs in its own thread once the
    input is read to its end and the traces left have their calls in flight: while the last replies come,
    not after them."""
    code = (
        "import json, threading, time\n"
        "from assay import Evaluation\n"
        "from assay.judge import make_judge\n"
        "from tests.support.judge_server import JudgeServer, delayed, obj\n"
        "read, done, seen = [0], [0], []\n"
        "def source():\n"
        "    for i in range(60):\n"
        "        read[0] += 1\n"
        "        yield {'id': f't{i}', 'turns': [{'input': f'q{i}?', 'output': f'a{i}'}]}\n"
        "fast, slow = (delayed(obj({'evidence': [], 'reasoning': 'r', 'score': 4}), s) for s in (0.02, 0.5))\n"
        "asked = []\n"
        "def reply(request):  # the last eight requests take long: the run waits on them with nothing left to send\n"
        "    asked.append(1)\n"
        "    return slow if len(asked) > 52 else fast\n"
        "with JudgeServer(reply) as server:\n"
        "    judge = make_judge(f'openai-compatible:scripted@{server.url}', cache=False, concurrency=8,\n"
        "                       max_concurrency=8)\n"
        "    evaluation = Evaluation(['answer_relevance'], judge=judge, cancel=threading.Event())\n"
        "    evaluation.near_end = lambda: seen.append((threading.current_thread().name, read[0], done[0]))\n"
        "    for result in evaluation.stream(source()):\n"
        "        done[0] += 1\n"
        "time.sleep(0.2)\n"
        "print(json.dumps({'seen': seen, 'scored': done[0]}))\n")
    out = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                                    cwd=ROOT).stdout)
    assert out["scored"] == 60 and len(out["seen"]) == 1
    thread, read, done = out["seen"][0]
    assert thread == "assay-load-end" and read == 60 and done < 60


def test_prepare_imports_everything_the_table_needs():
    """``_render.prepare`` (run while the last replies come) leaves nothing for ``table`` to import: with every
    further import refused, the table still renders."""
    code = (
        "import sys\n"
        "from assay import evaluate\n"
        "from assay.cli import _render\n"
        "result = evaluate([{'id': 'a', 'turns': [{'input': 'q', 'output': 'a', 'latency_ms': 5}]}])\n"
        "_render.prepare()\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        raise ImportError(f'{name} imported after prepare')\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "_render.table(result)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "assay results" in done.stdout
