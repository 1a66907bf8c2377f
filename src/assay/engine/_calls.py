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
    complete: bool = True
    """False while a run is still reading its input: the counts so far (:class:`Planner`)."""

    @property
    def total(self) -> int:
        return sum(self.calls.values())


class Planner:
    """Counts a :class:`CallPlan` trace by trace, as a run reads its input (``Evaluation.planner``).

    The plan then costs no read of its own: the first judge call leaves once the first trace is
    read, not once the whole input is read and planned; the plan is exact (``complete``) when the
    input has been read to its end.
    """

    __slots__ = ("judged", "repeats", "style", "plan")

    def __init__(self, metrics: Iterable[Any], repeats: int = 1, style: str = "full") -> None:
        self.judged = [m for m in metrics if m.spec.needs_judge]
        self.repeats, self.style = repeats, style
        self.plan = CallPlan({m.spec.name: 0 for m in self.judged}, {m.spec.name: 0 for m in self.judged},
                             complete=False)

    def add(self, trace: Any) -> None:
        """Count one Trace's planned calls."""
        plan = self.plan
        for m in self.judged:
            n = calls_per_trace(m, trace, self.repeats, self.style)
            if n:
                plan.traces[m.spec.name] += 1
                plan.calls[m.spec.name] += n

    def done(self) -> None:
        """The input has been read to its end: the plan is exact."""
        self.plan.complete = True


def plan_calls(metrics: Any, traces: Iterable[Any], repeats: int = 1, style: str = "full") -> CallPlan:
    """Count the judge calls ``metrics`` will make on ``traces`` (Trace objects; others are skipped)."""
    return _count_all(Planner(metrics, repeats, style), traces)


def _count_all(planner: Planner, traces: Iterable[Any]) -> CallPlan:
    for trace in traces:
        if hasattr(trace, "turns"):
            planner.add(trace)
    planner.done()
    return planner.plan


def planner_for(evaluation: Any) -> Planner:
    """A :class:`Planner` for ``evaluation``'s metrics, repeats, jurors and its judge's prompt form."""
    from ..judge import prompt_style  # here: the judge package is loaded only when a judge is in use

    jurors = getattr(evaluation.judge, "jurors", None)  # a jury: every juror makes the calls
    return Planner(evaluation.metrics, evaluation.plan.repeats * (len(jurors) if jurors else 1),
                   prompt_style(evaluation.judge))


def plan_inputs(evaluation: Any, paths: list[str], input_format: str | None = None) -> CallPlan | None:
    """``plan_calls`` over input files read once beforehand (None for stdin: it cannot be read twice).

    What a run that does not read its input in this process (Dask workers read their shards) plans
    with, and what completes an interrupted run's plan; a local run counts as it reads
    (:class:`Planner`)."""
    if any(p == "-" for p in paths):
        return None
    from ..importers import read_traces

    return _count_all(planner_for(evaluation), (item for _, item in read_traces(paths, input_format=input_format)))
