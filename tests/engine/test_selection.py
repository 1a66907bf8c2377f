"""Selecting metrics: instance names, the after= dependency graph, the pinned default set."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from assay import ConfigError, Evaluation, MetricContext, evaluate, metric
from assay.metrics import DEFAULT_METRICS, DEFAULT_SET_VERSION, Registry
from assay.metrics._base import REGISTRY, parse_metric_arg

ROOT = Path(__file__).resolve().parents[2]
REFUND = {"id": "r1", "turns": [{"input": "my money?", "output": "Sorry for the delay: your refund is on its way."}]}
RUDE = {"id": "r2", "turns": [{"input": "my money?", "output": "Refund sent."}]}


def test_two_instances_of_one_metric_run_side_by_side():
    res = evaluate([REFUND, RUDE], ["contains@refund:values=refund", 'contains@apology:values=["sorry", "delay"]'])
    first, second = (t.metrics for t in res.traces)
    assert list(first) == ["contains@refund", "contains@apology"]
    assert (first["contains@refund"].score, first["contains@apology"].score) == (1.0, 1.0)
    assert (second["contains@refund"].score, second["contains@apology"].score) == (1.0, 0.0)
    assert second["contains@apology"].name == "contains@apology"
    assert second["contains@apology"].details["missing"] == ["sorry", "delay"]
    assert set(res.summary) == {"contains@refund", "contains@apology"}
    assert res.summary["contains@apology"].mean == 0.5
    by_name = {m["name"]: m for m in res.run["metrics"]}
    assert by_name["contains@apology"]["metric"] == "contains"
    assert by_name["contains@apology"]["params"]["values"] == ["sorry", "delay"]


def test_instances_from_mappings_and_python_objects():
    from assay.metrics.reference import Contains

    res = evaluate([REFUND], {"refund": Contains(values=["refund"]), "apology": "contains:values=sorry"})
    assert {k: r.score for k, r in res.traces[0].metrics.items()} == {"refund": 1.0, "apology": 1.0}
    res = evaluate([RUDE], [{"name": "contains@a", "values": ["refund"]}, {"name": "contains@b", "values": ["x"]}])
    assert {k: r.score for k, r in res.traces[0].metrics.items()} == {"contains@a": 1.0, "contains@b": 0.0}


def test_an_instance_name_clash_is_an_error_naming_both():
    with pytest.raises(ConfigError) as exc:
        evaluate([REFUND], ["contains:values=refund", "contains:values=sorry"])
    message = str(exc.value)
    assert "'contains' is selected twice" in message
    assert "'contains:values=refund'" in message and "'contains:values=sorry'" in message
    assert "NAME@LABEL" in message
    with pytest.raises(ConfigError, match="label in 'contains@bad label'"):
        evaluate([REFUND], ["contains@bad label:values=x"])


def test_parameters_keep_commas_inside_json_values():
    assert parse_metric_arg('contains@x:values=["a, b", "c"],case_sensitive=true') == (
        "contains@x", {"values": '["a, b", "c"]', "case_sensitive": "true"})


def _chain(registry: Registry, asynchronous: bool) -> None:
    """a <- b <- c: each adds 0.25 to what it depends on."""

    def define(name: str, after: tuple[str, ...], base: str | None):
        def read(ctx: MetricContext):
            prior = ctx.results[base].score if base else 0.0
            return ctx.result(prior + 0.25, reason=f"{base}={prior}")

        if asynchronous:
            async def score(ctx: MetricContext):
                await asyncio.sleep(0.01 if base is None else 0)  # the slow one must still come first
                return read(ctx)
        else:
            score = read
        score.__name__ = name
        metric(name, dimension="custom", after=after, registry=registry)(score)

    define("a", (), None)
    define("b", ("a",), "a")
    define("c", ("b",), "b")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_three_level_after_chain_runs_in_dependency_order(asynchronous):
    r = Registry()
    _chain(r, asynchronous)
    ev = Evaluation(["c", "b", "a"], registry=r)
    assert [[n for n, _ in phase] for phase in ev.plan.phases] == [["a"], ["b"], ["c"]]
    got = ev.run([REFUND]).traces[0].metrics
    assert {k: v.score for k, v in got.items()} == {"a": 0.25, "b": 0.5, "c": 0.75}
    assert got["c"].warning is None and got["c"].reason == "b=0.5"


def test_after_reaches_every_instance_of_the_metric_it_names():
    r = Registry()
    _chain(r, False)
    ev = Evaluation({"b": "b", "a@second": "a", "a": "a"}, registry=r)
    assert [[n for n, _ in phase] for phase in ev.plan.phases] == [["a@second", "a"], ["b"]]


def test_a_dependency_cycle_is_rejected_when_the_metrics_are_selected():
    r = Registry()
    for name, after in (("x", ("z",)), ("y", ("x",)), ("z", ("y",)), ("free", ())):
        metric(name, dimension="custom", after=after, registry=r)(lambda ctx: 1.0)
    with pytest.raises(ConfigError, match=r"cycle \(after=...\): (x -> z -> y -> x|y -> x -> z -> y|z -> y -> x -> z)"):
        Evaluation(["free", "x", "y", "z"], registry=r)
    Evaluation(["free", "x", "y"], registry=r)  # z not selected: no cycle, x runs without it


def test_the_default_set_is_pinned():
    """Changing the default set is deliberate: bump DEFAULT_SET_VERSION and say so in CHANGELOG.md."""
    assert DEFAULT_SET_VERSION == 1
    assert DEFAULT_METRICS == (
        "accuracy", "agent_tone", "agent_utilization", "answer_relevance", "bias_score",
        "chain_of_thought_coherence", "coherence", "completeness", "context_retention",
        "conversation_completeness", "coordination_efficiency", "cost_efficiency", "delegation_quality",
        "failure_rate", "fallacy_detection", "goal_achievement_rate", "hallucination_score",
        "holistic_llm_judge", "instruction_compliance", "latency_score", "logical_consistency",
        "mcp_compliance", "naturalness", "optimum_turns", "parameter_quality", "per_turn_agent_tone",
        "per_turn_naturalness", "per_turn_sentiment", "prompt_injection_detection",
        "reasoning_step_correctness", "role_adherence", "safety_score", "sentiment", "throughput",
        "token_efficiency", "tool_selection_accuracy", "tool_sequence_correctness", "toxicity_score",
        "turn_efficiency", "user_satisfaction", "workflow_completion",
    )
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"default metric set v{DEFAULT_SET_VERSION}\b", changelog, re.IGNORECASE), \
        "CHANGELOG.md must describe the current default metric set version"


def test_the_default_set_is_what_runs_and_what_assay_metrics_marks():
    flagged = {s.name for s in REGISTRY.specs() if s.default and REGISTRY.origins()[s.name] == "built-in"}
    assert flagged == set(DEFAULT_METRICS), "a built-in's default= flag must agree with DEFAULT_METRICS"
    ev = Evaluation(None, judge=object())
    assert list(ev.instances) == list(DEFAULT_METRICS)
    assert ev.run([REFUND]).run["default_set"] == DEFAULT_SET_VERSION


def test_a_registered_metric_does_not_join_the_default_set(registry_snapshot):
    @metric("always_one", dimension="custom")
    @dataclass(frozen=True, kw_only=True)
    class AlwaysOne:
        threshold: float = 0.5

        def score(self, ctx):
            return ctx.result(1.0)

    assert "always_one" in REGISTRY
    ev = Evaluation(None)
    assert "always_one" not in ev.instances
    assert "always_one" in Evaluation(["always_one"]).instances
