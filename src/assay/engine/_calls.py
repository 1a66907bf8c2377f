"""The judge calls a run will make, per metric and trace, known before the run: what progress
counts down and what the dry run reports."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..metrics._base import data_meets


def calls_per_trace(metric: Any, trace: Any, repeats: int = 1, style: str = "full") -> int:
    """Judge calls ``metric`` is planned to make on ``trace`` (requests, before retries and re-asks).

    A metric may say exactly with ``planned_calls(trace)`` (given ``style=``, the judge's prompt
    form, when it takes that keyword); else its declared ``judge_calls``
    (the first number in it) per trace, per turn for turn-level metrics and for "per interaction".
    A trace that lacks the metric's data makes no call.
    """
    spec = metric.spec
    if not spec.needs_judge or not all(data_meets(r, trace) for r in spec.requires):
        return 0
    exact = getattr(metric, "planned_calls", None)
    if exact is not None:
        n = int(exact(trace, style=style) if _takes_style(type(metric)) else exact(trace))
    else:
        found = re.search(r"\d+", str(spec.judge_calls))
        n = int(found.group()) if found else 1
        if spec.level == "turn" or "per interaction" in str(spec.judge_calls) or "per turn" in str(spec.judge_calls):
            n *= len(trace.turns)
    return n * repeats


@functools.lru_cache(maxsize=256)
def _takes_style(cls: type) -> bool:
    """Whether a metric class's ``planned_calls`` takes ``style=`` (once per class, not per trace)."""
    method = getattr(cls, "planned_calls", None)
    return method is not None and "style" in inspect.signature(method).parameters


@dataclass(slots=True)
class CallPlan:
    """Planned judge calls per metric over a whole input (what progress and the dry run count)."""

    traces: dict[str, int] = field(default_factory=dict)
    """Metric -> traces it will make calls on."""
    calls: dict[str, int] = field(default_factory=dict)
    """Metric -> planned judge calls."""

    @property
    def total(self) -> int:
        return sum(self.calls.values())


def plan_calls(metrics: Any, traces: Iterable[Any], repeats: int = 1, style: str = "full") -> CallPlan:
    """Count the judge calls ``metrics`` will make on ``traces`` (Trace objects; others are skipped)."""
    plan = CallPlan({m.spec.name: 0 for m in metrics if m.spec.needs_judge},
                    {m.spec.name: 0 for m in metrics if m.spec.needs_judge})
    judged = [m for m in metrics if m.spec.needs_judge]
    for trace in traces:
        if not hasattr(trace, "turns"):
            continue
        for m in judged:
            n = calls_per_trace(m, trace, repeats, style)
            if n:
                plan.traces[m.spec.name] += 1
                plan.calls[m.spec.name] += n
    return plan


def plan_inputs(evaluation: Any, paths: list[str], input_format: str | None = None) -> CallPlan | None:
    """``plan_calls`` over input files read once beforehand (None for stdin: it cannot be read twice)."""
    if any(p == "-" for p in paths):
        return None
    from ..importers import read_traces

    traces = (item for _, item in read_traces(paths, input_format=input_format))
    from ..judge import prompt_style

    jurors = getattr(evaluation.judge, "jurors", None)  # a jury: every juror makes the calls
    return plan_calls(evaluation.metrics, traces, evaluation.plan.repeats * (len(jurors) if jurors else 1),
                      prompt_style(evaluation.judge))
