"""Scoring one trace with a list of metrics: failures become data, never an aborted run.

Each selected metric has an instance name (its metric name unless the selection gave another)
that keys its result. ``after`` makes a dependency graph: a metric runs in a later phase than
every selected metric it names (by metric or instance name), to any depth, and a cycle is a
ConfigError when the plan is made. Turn-level metrics run once per turn and are averaged here, with the per-turn
scores kept in ``details['per_turn']``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from .._secrets import redact
from ..errors import ConfigError, ProviderError
from ..metrics import MetricContext
from ..metrics._base import data_meets, is_async_metric
from ..metrics._memo import TraceView
from ..model import MetricResult, Trace, Warning
from ._jury import Jury
from ._retest import repeat_verdicts


@dataclass(frozen=True, slots=True)
class Plan:
    """The selected metrics, split into dependency phases, plus whether any is async."""

    phases: tuple[tuple[tuple[str, Any], ...], ...]
    """(instance name, metric) pairs; a phase's metrics read only results of earlier phases."""
    is_async: bool
    only_applicable: bool
    """Default metric set: a metric whose data requirements a trace lacks is not run on it."""
    repeats: int = 1
    """Judge metrics are scored this many times (independent judge calls) and averaged."""
    steps: tuple[tuple[Any, str, tuple[Any, ...], bool, Any], ...] = ()
    """The phases flattened to (metric, instance name, requires, per_turn, threshold), looked up once, not per
    trace."""

    @classmethod
    def make(cls, metrics: Mapping[str, Any] | Sequence[Any], only_applicable: bool = False,
             repeats: int = 1) -> "Plan":
        named = dict(metrics) if isinstance(metrics, Mapping) else {m.spec.name: m for m in metrics}
        phases = _phases(named)
        steps = tuple((m, name, tuple(m.spec.requires), m.spec.level == "turn", m.threshold)
                      for p in phases for name, m in p)
        return cls(phases, any(is_async_metric(m) for m in named.values()), only_applicable, repeats, steps)


def _phases(named: dict[str, Any]) -> tuple[tuple[tuple[str, Any], ...], ...]:
    """Kahn's layering of the ``after`` graph over the selected instances; a cycle is a ConfigError."""
    by_metric: dict[str, list[str]] = {}
    for name, m in named.items():
        by_metric.setdefault(m.spec.name, []).append(name)
    deps: dict[str, set[str]] = {}
    for name, m in named.items():
        wanted = set()
        for target in m.spec.after:
            wanted.update(by_metric.get(target, ()))
            if target in named:
                wanted.add(target)
        wanted.discard(name)
        deps[name] = wanted
    phases: list[tuple[tuple[str, Any], ...]] = []
    done: set[str] = set()
    while len(done) < len(named):
        ready = [n for n in named if n not in done and deps[n] <= done]
        if not ready:
            raise ConfigError(f"metrics depend on each other in a cycle (after=...): {_cycle(deps, done)}")
        phases.append(tuple((n, named[n]) for n in ready))
        done.update(ready)
    return tuple(phases)


def _cycle(deps: dict[str, set[str]], done: set[str]) -> str:
    """One cycle among the instances not yet placed, as 'a -> b -> a'."""
    node = next(n for n in deps if n not in done)
    path: list[str] = []
    while node not in path:
        path.append(node)
        node = sorted(deps[node] - done)[0]
    loop = path[path.index(node):] + [node]
    return " -> ".join(loop)


def _applicable(m: Any, trace: Trace) -> bool:
    return all(data_meets(r, trace) for r in m.spec.requires)


def finish(m: Any, r: Any, name: str | None = None) -> MetricResult:
    """The result as published: named (by *name*, the instance name), with threshold and passed.

    A bad value becomes a metric error. Results made by ``ctx.result`` / ``ctx.null`` come
    complete and are returned as they are; others (plain numbers, results built without a
    context, an instance named apart from its metric) are completed in a copy.
    """
    name, threshold = name or m.spec.name, m.threshold
    if type(r) is not MetricResult and not isinstance(r, MetricResult):
        if isinstance(r, (int, float)) and not isinstance(r, bool):
            r = MetricResult(name, float(r), None, threshold)
        else:
            return MetricResult(name, None, None, threshold,
                                f"score() returned {type(r).__name__}, expected a MetricResult", [],
                                Warning.METRIC_ERROR, {})
    score = r.score
    if score is None:
        if r.name == name and r.threshold == threshold and r.passed is None:
            return r
        return msgspec.structs.replace(r, name=name, threshold=threshold, passed=None)
    if 0.0 <= score <= 1.0:  # False for NaN too
        passed = score >= threshold
        if r.details and "majority_passed" in r.details:  # repeats: the majority of their verdicts (_retest)
            passed = r.details["majority_passed"]
        if r.name == name and r.threshold == threshold and r.passed is passed:
            return r
        return msgspec.structs.replace(r, name=name, threshold=threshold, passed=passed)
    return msgspec.structs.replace(r, name=name, threshold=threshold, passed=None, score=None,
                                   warning=Warning.METRIC_ERROR, details={**r.details, "bad_score": score},
                                   reason=f"metric returned a score outside [0, 1]: {score!r}")


def _error(exc: BaseException) -> MetricResult:
    return MetricResult("", None, None, None, redact(f"{type(exc).__name__}: {exc}"), [], Warning.METRIC_ERROR, {})


def combine_turns(parts: list[MetricResult], unit: str = "turn") -> MetricResult:
    """Average per-turn (or per-repeat) results; keep each part's score, reason and evidence."""
    scored = [p for p in parts if p.score is not None]
    details: dict[str, Any] = {f"per_{unit}": [p.score for p in parts]}
    warnings = [str(p.warning) if p.warning else None for p in parts]
    if any(warnings):
        details[f"per_{unit}_warnings"] = warnings
    if any(p.details for p in parts):  # judge raw replies, unverified evidence, option order ...
        details[f"per_{unit}_details"] = [p.details for p in parts]
    calls = sum(p.judge_calls for p in parts)
    tokens = sum(p.tokens for p in parts)
    costs = [p.cost_usd for p in parts if p.cost_usd is not None]
    cost = sum(costs) if costs else None
    reason = " | ".join(f"{unit} {i + 1}: {p.reason}" for i, p in enumerate(parts) if p.reason)
    evidence = [e for p in parts for e in p.evidence]
    if not scored:
        first = next((p for p in parts if p.warning), None)
        warning = first.warning if first else Warning.MISSING_DATA
        if any(p.errored for p in parts):
            warning = Warning.JUDGE_ERROR if any(p.warning == Warning.JUDGE_ERROR for p in parts) else Warning.METRIC_ERROR
        return MetricResult(score=None, warning=warning, reason=reason or "no turn could be scored", details=details,
                            judge_calls=calls, tokens=tokens, cost_usd=cost)
    if len(scored) < len(parts):
        details[f"{unit}s_without_score"] = len(parts) - len(scored)
    return MetricResult(score=sum(p.score for p in scored) / len(scored), reason=reason,  # type: ignore[misc]
                        evidence=evidence, details=details, judge_calls=calls, tokens=tokens, cost_usd=cost)


def score_sync(trace: Trace, plan: Plan, ctx_judge: Any = None) -> dict[str, MetricResult]:
    """All metrics on one trace, for plans without async metrics (the fast path)."""
    results: dict[str, MetricResult] = {}
    ctx = MetricContext(trace, ctx_judge, results, memo=TraceView(trace))
    only_applicable = plan.only_applicable
    met: dict[Any, bool] = {}  # requirement -> whether this trace meets it (checked once per trace)
    steps = plan.steps
    for m, name, requires, per_turn, threshold in steps:
        if only_applicable and requires:
            ok = True
            for req in requires:
                v = met.get(req)
                if v is None:
                    v = met[req] = data_meets(req, trace)
                if not v:
                    ok = False
                    break
            if not ok:
                continue
        ctx.metric_name, ctx.metric_threshold = name, threshold  # one metric at a time: one context
        try:
            if per_turn:
                r = combine_turns([finish(m, m.score(ctx.for_turn(i)), name) for i in range(len(trace.turns))])
            else:
                r = m.score(ctx)
        except ProviderError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing metric is data
            r = _error(exc)
        if type(r) is MetricResult and r.name == name and r.threshold == threshold:  # finish's own fast path
            score = r.score
            if (r.passed is None) if score is None else (0.0 <= score <= 1.0 and r.passed is (score >= threshold)):
                results[name] = r
                continue
        results[name] = finish(m, r, name)
    return results


async def _one(m: Any, ctx: MetricContext) -> MetricResult:
    ctx = ctx.for_metric(m.spec.name, m.threshold)
    try:
        r = m.score(ctx)
        if asyncio.iscoroutine(r) or isinstance(r, asyncio.Future):
            r = await r
        return finish(m, r)
    except ProviderError:
        raise
    except Exception as exc:  # noqa: BLE001
        return finish(m, _error(exc))


async def _run_once(m: Any, ctx: MetricContext) -> MetricResult:
    if m.spec.level != "turn":
        return await _one(m, ctx)
    parts = await asyncio.gather(*(_one(m, ctx.for_turn(i)) for i in range(len(ctx.trace.turns))))
    return finish(m, combine_turns(list(parts)))


async def _run_metric(m: Any, ctx: MetricContext, repeats: int) -> MetricResult:
    if repeats <= 1 or not m.spec.needs_judge:
        return await _run_once(m, ctx)
    parts = await asyncio.gather(*(_run_once(m, MetricContext(ctx.trace, ctx.judge, ctx.results, None, r, memo=ctx.memo))
                                   for r in range(repeats)))
    return repeat_verdicts(combine_turns(list(parts), unit="repeat"), parts, m.threshold)


async def _run_judged(m: Any, ctx: MetricContext, repeats: int) -> MetricResult:
    """A judge metric under a jury: once per juror (each with its repeats), combined (``_jury``)."""
    jury = ctx.judge
    if type(jury) is not Jury or not m.spec.needs_judge:
        return await _run_metric(m, ctx, repeats)

    async def one(juror: Any) -> MetricResult:
        return finish(m, await _run_metric(m, MetricContext(ctx.trace, juror, ctx.results, None, ctx.repeat,
                                                            memo=ctx.memo), repeats))
    labels = getattr(m, "weights", None)  # a label metric's labels: the jury takes the majority label
    return await jury.score(one, labels if isinstance(labels, dict) and labels else None)


async def score_async(trace: Trace, plan: Plan, judge: Any = None, repeat: int = 0) -> dict[str, MetricResult]:
    """All metrics on one trace; metrics of a phase run concurrently."""
    results: dict[str, MetricResult] = {}
    ctx = MetricContext(trace, judge, results, None, repeat, memo=TraceView(trace))
    for phase in plan.phases:
        todo = [(n, m) for n, m in phase if not (plan.only_applicable and not _applicable(m, trace))]
        if len(todo) == 1:  # one metric: awaited in this task (no task of its own; its first call leaves a step sooner)
            done = [await _run_judged(todo[0][1], ctx, plan.repeats)]
        else:
            done = await asyncio.gather(*(_run_judged(m, ctx, plan.repeats) for _, m in todo))
        for (name, m), r in zip(todo, done):
            results[name] = finish(m, r, name)
    return results
