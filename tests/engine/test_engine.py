"""The engine: selection, failures as data, null handling, dimensions, ordering, event loops."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

import pytest

from assay import ConfigError, Evaluation, Metric, MetricContext, Warning, evaluate
from assay.engine import Dimensions
from assay.metrics import Registry, metric


def trace(i: int, **kw) -> dict:
    return {"id": f"t{i}", "turns": [{"input": f"q{i}", "output": f"a{i}"}], **kw}


@pytest.fixture()
def reg() -> Registry:
    r = Registry()

    @metric("const", dimension="response_quality", registry=r)
    @dataclass(frozen=True, kw_only=True)
    class Const:
        value: float = 1.0
        threshold: float = 0.5

        def score(self, ctx: MetricContext):
            return ctx.result(self.value, reason="constant")

    @metric("by_meta", dimension="tool_calling", registry=r)
    def by_meta(ctx: MetricContext):
        v = ctx.trace.metadata.get("v")
        return ctx.null(Warning.MISSING_DATA, "no v") if v is None else float(v)

    @metric("boom", dimension="custom", registry=r)
    def boom(ctx: MetricContext):
        raise RuntimeError("kaput")

    @metric("too_big", dimension="custom", registry=r)
    def too_big(ctx: MetricContext):
        return 1.5

    @metric("slow_async", dimension="reasoning", registry=r)
    async def slow_async(ctx: MetricContext):
        await asyncio.sleep(random.random() / 200)
        return int(ctx.trace.id[1:]) % 2

    @metric("per_turn", dimension="multi_turn", level="turn", registry=r)
    def per_turn(ctx: MetricContext):
        out = ctx.turn.output
        return ctx.null(Warning.MISSING_DATA, "no output") if out is None else float(len(out) % 2)

    @metric("needs_judge", dimension="response_quality", requires=("judge",), registry=r)
    async def needs_judge(ctx: MetricContext):
        return 1.0

    return r


def run(reg, metrics, traces, **kw):
    return Evaluation(metrics, registry=reg, **kw).run(traces)


def test_null_is_excluded_from_means_and_counted(reg):
    res = run(reg, ["by_meta"], [trace(1, metadata={"v": 0.2}), trace(2), trace(3, metadata={"v": 0.6})])
    s = res.summary["by_meta"]
    assert (s.n, s.n_null, s.n_errored) == (2, 1, 0)
    assert s.mean == pytest.approx(0.4)
    assert s.warnings == {"missing_data": 1}
    assert res.traces[1].metrics["by_meta"].passed is None


def test_metric_exception_and_bad_score_become_errored_results(reg):
    res = run(reg, ["boom", "too_big", "const"], [trace(1)])
    m = res.traces[0].metrics
    assert m["boom"].warning == Warning.METRIC_ERROR and "kaput" in m["boom"].reason
    assert m["too_big"].score is None and m["too_big"].details["bad_score"] == 1.5
    assert m["const"].score == 1.0
    assert res.summary["boom"].n_errored == 1


def test_parameters_from_strings_are_coerced_and_checked(reg):
    res = run(reg, ["const:value=0.25,threshold=0.3"], [trace(1)])
    r = res.traces[0].metrics["const"]
    assert (r.score, r.threshold, r.passed) == (0.25, 0.3, False)
    with pytest.raises(ConfigError, match="parameter of metric 'const'.*'valu'.*Did you mean 'value'"):
        run(reg, ["const:valu=1"], [trace(1)])
    with pytest.raises(ConfigError, match="cannot read 'abc' as float"):
        run(reg, ["const:value=abc"], [trace(1)])
    with pytest.raises(ConfigError, match="unknown metric 'cnst'.*Did you mean 'const'"):
        run(reg, ["cnst"], [trace(1)])


def test_a_metric_annotated_with_names_only_its_function_sees_still_takes_parameters():
    """``from __future__ import annotations`` + a type imported inside the defining function: the
    annotation cannot be resolved globally; the plain fields are still coerced, the other passed on."""
    r = Registry()

    def define():
        from typing import Any

        @metric("local_kind", dimension="custom", registry=r)
        @dataclass(frozen=True, kw_only=True)
        class LocalKind:
            value: float = 1.0
            extra: Any = None
            threshold: float = 0.5

            def score(self, ctx: MetricContext):
                return ctx.result(self.value, reason=repr(self.extra))

    define()
    res = run(r, ["local_kind:value=0.25,extra=[1, 2]"], [trace(1)])
    m = res.traces[0].metrics["local_kind"]
    assert (m.score, m.reason) == (0.25, "'[1, 2]'")
    with pytest.raises(ConfigError, match="cannot read 'abc' as float"):
        run(r, ["local_kind:value=abc"], [trace(1)])


def test_dimensions_weighted_overall_and_all_null_dimension_absent(reg):
    dims = Dimensions.make({"response_quality": 0.75, "tool_calling": 0.25})
    res = Evaluation(["const:value=0.8", "by_meta"], registry=reg, weights=dims.weights).run(
        [trace(1, metadata={"v": 0.4}), trace(2)])
    t1, t2 = res.traces
    assert t1.overall == pytest.approx(0.75 * 0.8 + 0.25 * 0.4)
    assert t1.dimensions["tool_calling"].passed is False and t1.passed is False
    assert "tool_calling" not in t2.dimensions  # all-null dimension is absent, not 0.0
    assert t2.overall == pytest.approx(0.8) and t2.passed is True


def test_async_results_keep_input_order_and_run_inside_a_running_loop(reg):
    traces = [trace(i) for i in range(200)]

    res = run(reg, ["slow_async"], traces)
    assert [t.id for t in res.traces] == [f"t{i}" for i in range(200)]
    assert [t.metrics["slow_async"].score for t in res.traces] == [i % 2 for i in range(200)]

    async def inside_loop():  # Jupyter-style: the sync API called while a loop runs
        return run(reg, ["slow_async"], traces[:20])

    res2 = asyncio.run(inside_loop())
    assert [t.id for t in res2.traces] == [f"t{i}" for i in range(20)]


def test_turn_level_metrics_are_averaged_with_per_turn_scores_kept(reg):
    t = {"id": "x", "turns": [{"input": "a", "output": "odd"}, {"input": "b", "output": "even"}, {"input": "c"}]}
    r = run(reg, ["per_turn"], [t]).traces[0].metrics["per_turn"]
    assert r.score == pytest.approx(0.5)
    assert r.details["per_turn"] == [1.0, 0.0, None]
    assert r.details["turns_without_score"] == 1


def test_judge_metrics_need_a_judge(reg):
    with pytest.raises(ConfigError, match="needs a judge"):
        run(reg, ["needs_judge"], [trace(1)])
    ev = Evaluation(None, registry=reg)
    assert "needs_judge" in ev.skipped and "ASSAY_JUDGE" in ev.skipped["needs_judge"]
    assert "needs_judge" not in {m.spec.name for m in ev.metrics}


def test_metric_base_class_form():
    r = Registry()

    class Shouty(Metric, name="shouty", dimension="custom", registry=r):
        threshold: float = 0.5

        def score(self, ctx):
            return ctx.result(1.0 if (ctx.trace.turns[0].output or "").isupper() else 0.0)

    res = Evaluation(["shouty"], registry=r).run([trace(1), {"id": "y", "turns": [{"output": "HEY"}]}])
    assert [t.metrics["shouty"].score for t in res.traces] == [0.0, 1.0]


def test_bad_dicts_are_reported_not_dropped(reg):
    res = run(reg, ["const"], [trace(1), {"id": "bad", "turns": [{"tool_calls": [{"name": "x", "arguments": []}]}]}])
    assert len(res.traces) == 1
    (issue,) = res.input_issues
    assert str(issue) == "<input>:1: turns[0].tool_calls[0].arguments: expected an object, got array"


def test_builtin_registry_through_public_evaluate():
    t = {"id": "w", "turns": [{"input": "weather?", "output": "sunny",
                               "tool_calls": [{"name": "search"}, {"name": "weather"}]}],
         "expected": {"tool_calls": [{"name": "search"}, {"name": "calculator"}]}}
    r = evaluate([t], ["tool_selection_accuracy"]).traces[0].metrics["tool_selection_accuracy"]
    assert r.score == pytest.approx(1 / 3)
    assert r.details["missing"] == ["calculator"] and r.details["unexpected"] == ["weather"]


def test_repeats_score_judge_metrics_independently_and_average():
    r = Registry()

    @metric("judged", dimension="response_quality", requires=("judge",), registry=r)
    async def judged(ctx: MetricContext):
        return ctx.result(ctx.repeat / 2, reason=f"repeat {ctx.repeat}")

    @metric("plain", dimension="tool_calling", registry=r)
    def plain(ctx: MetricContext):
        return 1.0

    class FakeJudge:
        model = "fake"

        async def judge(self, request):  # pragma: no cover - the metric above never calls it
            raise AssertionError

    res = Evaluation(["judged", "plain"], judge=FakeJudge(), registry=r, repeats=3).run([trace(1)])
    m = res.traces[0].metrics["judged"]
    assert m.score == pytest.approx(0.5) and m.details["per_repeat"] == [0.0, 0.5, 1.0]
    assert "repeat 3: repeat 2" in m.reason
    assert "per_repeat" not in res.traces[0].metrics["plain"].details
    assert res.run["repeats"] == 3
    with pytest.raises(ConfigError, match="repeats must be at least 1"):
        Evaluation(["plain"], registry=r, repeats=0)


def test_judge_options_without_a_judge_are_refused():
    with pytest.raises(ConfigError, match=r"judge options \['concurrency'\] given without a judge"):
        evaluate([trace(1)], ["tool_selection_accuracy"], concurrency=4)
