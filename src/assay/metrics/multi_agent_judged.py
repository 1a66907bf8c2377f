"""Multi-agent judge metrics (UAEF): delegation quality and workflow completion.

The judge sees the user's conversation with the system, each agent's role and work, and every
coordination event, each fenced on its own. Edge cases as in UAEF: a trace without agents and
handoffs is not multi-agent (not_applicable); handoffs without agent runs is missing_data;
delegation_quality without coordination events is not_applicable; workflow_completion needs a
goal, success criteria or expected output (missing_data) and halves the score of a failed workflow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model import MetricResult, Trace, Warning
from ._base import MetricContext, metric
from ._judged import ScaleJudged
from ._sections import Section, dialogue, tool_text
from .conversation import expected_outcome

FAILED_PENALTY = 0.5


def _agent_sections(trace: Trace) -> list[Section]:
    out = []
    for i, (name, run) in enumerate(trace.agents.items(), 1):
        lines = [f"agent: {name}"]
        if run.role:
            lines.append(f"role: {run.role}")
        for j, t in enumerate(run.turns or [], 1):
            if t.input is not None:
                lines.append(f"[{j}] received: {t.input}")
            lines += [f"[{j}] tool: {tool_text(c)}" for c in t.tool_calls]
            if t.output is not None:
                lines.append(f"[{j}] replied: {t.output}")
        out.append(Section(f"AGENT_{i}", "\n".join(lines), f"Agent {i} and its work:"))
    return out


def _handoff_sections(trace: Trace) -> list[Section]:
    return [Section(f"EVENT_{i}", f"{h.from_agent} -> {h.to_agent} ({h.kind})" + (f": {h.message}" if h.message else ""),
                    f"Coordination event {i}:") for i, h in enumerate(trace.handoffs, 1)]


def _multi_agent(ctx: MetricContext) -> MetricResult | None:
    t = ctx.trace
    if not t.agents and not t.handoffs:
        return ctx.null(Warning.NOT_APPLICABLE, "not a multi-agent trace (no agents, no handoffs)")
    if not t.agents:
        return ctx.null(Warning.MISSING_DATA, "no agent runs in the trace (only handoffs)")
    return None


@metric("delegation_quality", dimension="multi_agent", requires=("multi_agent", "judge"), judge_calls=1,
        summary="judge 1-5: task-agent fit, clarity of delegation messages, efficient handoffs")
@dataclass(frozen=True, kw_only=True)
class DelegationQuality(ScaleJudged):
    """Were tasks delegated to the right agents, with clear instructions and efficient handoffs?"""

    def sections(self, ctx: MetricContext) -> Sequence[Section] | MetricResult:
        bad = _multi_agent(ctx)
        if bad is not None:
            return bad
        if not ctx.trace.handoffs:
            return ctx.null(Warning.NOT_APPLICABLE, "no coordination events: nothing was delegated")
        return [*dialogue(ctx.trace, tools=False), *_agent_sections(ctx.trace), *_handoff_sections(ctx.trace)]


@metric("workflow_completion", dimension="multi_agent", requires=("multi_agent", "goal", "judge"),
        judge_calls=1, summary="judge 1-5: did the workflow meet its goal / criteria? x0.5 when status is failed")
@dataclass(frozen=True, kw_only=True)
class WorkflowCompletion(ScaleJudged):
    """Did the multi-agent workflow achieve its goal? A failed workflow's score is halved (UAEF)."""

    failed_penalty: float = FAILED_PENALTY

    def sections(self, ctx: MetricContext) -> Sequence[Section] | MetricResult:
        bad = _multi_agent(ctx)
        if bad is not None:
            return bad
        goal = expected_outcome(ctx.trace)
        if not goal:
            return ctx.null(Warning.MISSING_DATA, "no goal, success criteria or expected output for the workflow")
        status = [Section("WORKFLOW_STATUS", ctx.trace.status, "Reported workflow status:")] if ctx.trace.status else []
        return [*goal, *dialogue(ctx.trace), *_agent_sections(ctx.trace), *_handoff_sections(ctx.trace), *status]

    def adjust(self, ctx, score, session):  # type: ignore[no-untyped-def]
        if ctx.trace.status == "failed":
            session.details["failed_penalty"] = self.failed_penalty
            return score * self.failed_penalty, f"workflow failed: score x{self.failed_penalty:g}"
        return score, ""
