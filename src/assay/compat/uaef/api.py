"""UAEF's ``evaluate`` / ``batch_evaluate`` (``uaef.api``), scored by assay's engine.

``evaluate(trace=trace, metrics=["answer_relevance", "safety_score", "latency_score"])`` runs
the named metrics (or, with ``metrics=None``, every metric of the default registry, each one
reporting a score or None with ``metadata['warning']``) and returns an :class:`EvaluationResult`.

The judge: ``judge=`` (or ``model=``) takes anything ``assay.judge.make_judge`` accepts (a model
string such as "openai:gpt-4o-mini" or "anthropic:...", a LangChain chat model, an
eval_lib-style client, a Judge); without one, ASSAY_JUDGE names it; without that, judge metrics
are left out of a default run (listed in ``warnings`` and ``metadata['skipped_metrics']``) and
naming one is a ConfigError. UAEF only knows Bedrock Claude.

Differences from UAEF, on purpose: dimension weights and thresholds apply (keys may be
"Tool Calling" or "tool_calling"), so ``passed`` can be False; an all-None dimension has no score
instead of 0.0 and does not drag the overall score down; judge metrics run concurrently with
retries and a cache; ``adapter=`` is not mirrored (use ``assay.load_traces(path,
input_format=...)`` to import a framework's traces).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...engine import DEFAULT_WEIGHTS, Evaluation
from ...errors import ConfigError
from ...judge import make_judge
from ...metrics._base import REGISTRY
from ...model import MetricResult, Trace, TraceResult
from ._convert import to_trace
from ._edges import uaef_score
from .metrics.registry import dimension_key, enabled_opt_in
from .models import DimensionResult, EvaluationResult, MetricScore

_UAEF_WARNING = {"judge_error": "api_error"}


def _judge(judge: Any, model: Any, options: Mapping[str, Any]) -> Any:
    if judge is not None and model is not None:
        raise ConfigError("give either judge= or model=, not both")
    spec = judge if judge is not None else model
    if spec is None:
        if not os.environ.get("ASSAY_JUDGE"):
            if options:
                raise ConfigError(f"judge options {sorted(options)!r} given without a judge (judge=... or ASSAY_JUDGE)")
            return None
        return make_judge(None, **options)
    if hasattr(spec, "judge") and not options:
        return spec
    return make_judge(spec, **options)


def _names(metrics: Iterable[Any] | None, metric_set: Mapping[str, Iterable[str]] | None,
           has_judge: bool) -> tuple[list[Any], dict[str, str]]:
    if metrics is not None and metric_set is not None:
        raise ConfigError("give either metrics= or metric_set=, not both")
    if metric_set is not None:
        return [n for names in metric_set.values() for n in names], {}
    if metrics is not None:
        if isinstance(metrics, str):
            raise ConfigError(f"metrics must be a list of names, got the string {metrics!r}")
        return list(metrics), {}
    chosen, skipped = [], {}
    opt_in = enabled_opt_in()
    for spec in REGISTRY.specs():
        if not spec.default and spec.name not in opt_in:
            continue
        if spec.needs_judge and not has_judge:
            skipped[spec.name] = "no judge configured: pass judge=... or set ASSAY_JUDGE"
        else:
            chosen.append(spec.name)
    return chosen, skipped


def _keyed(values: Mapping[str, float] | None) -> dict[str, float] | None:
    return None if values is None else {dimension_key(k): float(v) for k, v in values.items()}


def _evaluation(metrics: Any, metric_set: Any, dimension_weights: Any, thresholds: Any, judge: Any, model: Any,
                options: Mapping[str, Any]) -> tuple[Evaluation, dict[str, str]]:
    j = _judge(judge, model, options)
    names, skipped = _names(metrics, metric_set, j is not None)
    return Evaluation(names, judge=j, weights=_keyed(dimension_weights), thresholds=_keyed(thresholds)), skipped


def evaluate(trace: Any, ground_truth: Any = None, adapter: str | None = None,
             metrics: Sequence[Any] | None = None, metric_set: Mapping[str, Sequence[str]] | None = None,
             dimension_weights: Mapping[str, float] | None = None, thresholds: Mapping[str, float] | None = None,
             context: list[str] | None = None, *, judge: Any = None, model: Any = None,
             **judge_options: Any) -> EvaluationResult:
    """Evaluate one trace (AgentTrace, MultiAgentTrace, EvaluationInput, UAEF dict or assay Trace)."""
    if adapter is not None:
        raise ConfigError(f"adapter={adapter!r} is not mirrored: import the framework's traces with "
                          "assay.load_traces(path, input_format=...) and pass an assay Trace")
    t = to_trace(trace, ground_truth, context)
    evaluation, skipped = _evaluation(metrics, metric_set, dimension_weights, thresholds, judge, model, judge_options)
    (result,) = evaluation.run([t]).traces
    return to_evaluation_result(result, evaluation, skipped, t)


def batch_evaluate(traces: Iterable[Any], ground_truths: Sequence[Any] | None = None, adapter: str | None = None,
                   metrics: Sequence[Any] | None = None, metric_set: Mapping[str, Sequence[str]] | None = None,
                   dimension_weights: Mapping[str, float] | None = None,
                   thresholds: Mapping[str, float] | None = None, *, judge: Any = None, model: Any = None,
                   **judge_options: Any) -> list[EvaluationResult]:
    """Evaluate several traces concurrently through one engine run; results in input order."""
    if adapter is not None:
        raise ConfigError(f"adapter={adapter!r} is not mirrored: use assay.load_traces(path, input_format=...)")
    items = list(traces)
    if ground_truths is not None and len(ground_truths) != len(items):
        raise ConfigError(f"{len(items)} traces but {len(ground_truths)} ground truths")
    converted = [to_trace(t, None if ground_truths is None else ground_truths[i], default_id=f"trace-{i + 1}")
                 for i, t in enumerate(items)]
    evaluation, skipped = _evaluation(metrics, metric_set, dimension_weights, thresholds, judge, model, judge_options)
    return [to_evaluation_result(r, evaluation, skipped, t)
            for r, t in zip(evaluation.run(converted).traces, converted)]


def _score(name: str, r: MetricResult) -> MetricScore:
    meta: dict[str, Any] = dict(r.details)
    meta.update(threshold=r.threshold, passed=r.passed)
    if r.evidence:
        meta["evidence"] = list(r.evidence)
    if r.judge_calls:
        meta.update(judge_calls=r.judge_calls, tokens=r.tokens, cost_usd=r.cost_usd)
    if r.warning is not None:
        meta["warning"] = _UAEF_WARNING.get(str(r.warning), str(r.warning))
        meta["assay_warning"] = str(r.warning)
    return MetricScore(metric_name=name, score=r.score, reasoning=r.reason or None, metadata=meta)


def _order(dim: str) -> tuple[int, str]:
    keys = list(DEFAULT_WEIGHTS)
    return (keys.index(dim), "") if dim in keys else (len(keys), dim)


def to_evaluation_result(result: TraceResult, evaluation: Evaluation,
                         skipped: Mapping[str, str] | None = None, trace: Trace | None = None) -> EvaluationResult:
    """An engine TraceResult in UAEF's shape (dimension results, overall, passed, failures, warnings).

    Given the ``trace`` scored, a metric score on one of UAEF's documented edge cases is UAEF's
    value (``_edges``), with assay's own in ``metadata['assay_score']``; dimension and overall
    scores stay assay's.
    """
    by_dim: dict[str, list[MetricScore]] = {}
    failures, warnings = [], []
    for name, r in result.metrics.items():
        dim = evaluation.dimension_of.get(name, "custom")
        by_dim.setdefault(dim, []).append(uaef_score(_score(name, r), trace))
        if r.passed is False:
            failures.append(f"metric {name}: {r.score:.3f} is below its threshold {r.threshold:g}")
        if r.score is None:
            warnings.append(f"metric {name}: {r.warning}: {r.reason}")
    dims = []
    for dim in sorted(by_dim, key=_order):
        d = result.dimensions.get(dim)
        dims.append(DimensionResult(dimension_name=dim, metric_scores=by_dim[dim],
                                    aggregate_score=None if d is None else d.score,
                                    weight=evaluation.dims.weight(dim), threshold=evaluation.dims.threshold(dim),
                                    passed=None if d is None else d.passed))
        if d is not None and d.passed is False:
            failures.append(f"dimension {dim}: {d.score:.3f} is below its threshold {d.threshold:g}")
    for name, why in (skipped or {}).items():
        warnings.append(f"metric {name}: not run: {why}")
    judge = evaluation.judge
    meta: dict[str, Any] = {"evaluator": "assay", "trace_id": result.id,
                            "judge": None if judge is None else getattr(judge, "model", type(judge).__name__),
                            "dimension_weights": {d.dimension_name: d.weight for d in dims}}
    if skipped:
        meta["skipped_metrics"] = dict(skipped)
    return EvaluationResult(trace_id=result.id, dimension_results=dims, overall_score=result.overall,
                            passed=result.passed, failures=failures, warnings=warnings, metadata=meta)


def trace_of(value: Any) -> Trace:
    """The assay Trace that ``evaluate`` scores for a UAEF input (to inspect the mapping)."""
    return to_trace(value)


__all__ = ["batch_evaluate", "evaluate", "to_evaluation_result", "trace_of"]
