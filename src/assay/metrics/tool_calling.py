"""Tool-calling metrics (seed 004, UAEF): deterministic, against expected tool calls."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..model import MetricResult, Warning
from ._base import MetricContext, metric


@metric("tool_selection_accuracy", dimension="tool_calling", requires=("expected_tools",),
        summary="multiset Jaccard of tool names: matched / (expected + actual - matched)")
@dataclass(frozen=True, kw_only=True)
class ToolSelectionAccuracy:
    """Were the right tools called? Names only; arguments are parameter_quality's job.

    Counts are multisets (calling ``search`` twice when once was expected is an extra call).
    No expected and no actual calls scores 1.0: nothing was needed and nothing was done.
    """

    threshold: float = 0.7

    def score(self, ctx: MetricContext) -> MetricResult:
        expected = ctx.trace.expected_tool_calls()
        if expected is None:
            return ctx.null(Warning.MISSING_DATA, "no expected tool calls in the trace")
        exp = Counter(c.name for c in expected)
        act = Counter(c.name for c in ctx.trace.all_tool_calls())
        e, a = sum(exp.values()), sum(act.values())
        if e == 0 and a == 0:
            return ctx.result(1.0, "no tools expected and none called")
        matched = sum((exp & act).values())
        missing = sorted((exp - act).elements())
        extra = sorted((act - exp).elements())
        reason = f"{matched} matched of {e} expected and {a} called"
        if missing:
            reason += f"; missing {missing}"
        if extra:
            reason += f"; unexpected {extra}"
        return ctx.result(matched / (e + a - matched), reason,
                          details={"matched": matched, "missing": missing, "unexpected": extra})
