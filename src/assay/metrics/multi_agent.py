"""Multi-agent metrics (UAEF): workload balance and coordination overhead.

Work of an agent = its messages (a turn's input and output count one each) + its tool calls,
from ``trace.agents``. A trace without agents and handoffs is not a multi-agent trace: null
(not_applicable), as in UAEF's edge-case table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ConfigError
from ..model import AgentRun, MetricResult, Trace, Warning
from ._base import MetricContext, metric


def agent_work(run: AgentRun) -> int:
    """Messages plus tool calls of one agent."""
    return sum((t.input is not None) + (t.output is not None) + len(t.tool_calls) for t in run.turns)


def work_by_agent(trace: Trace) -> dict[str, int]:
    return {name: agent_work(run) for name, run in trace.agents.items()}


def utilization(work: list[float]) -> float:
    """exp(-CV), CV = population standard deviation / mean; needs a positive total."""
    mean = sum(work) / len(work)
    std = math.sqrt(sum((w - mean) ** 2 for w in work) / len(work))
    return math.exp(-std / mean)


def coordination(handoffs: int, work: float, ideal_ratio: float = 0.10, decay: float = 5.0) -> float:
    """1.0 if handoffs / work <= ideal_ratio, else exp(-(ratio - ideal_ratio) x decay)."""
    ratio = handoffs / work
    return 1.0 if ratio <= ideal_ratio else math.exp(-(ratio - ideal_ratio) * decay)


@metric("agent_utilization", dimension="multi_agent", requires=("multi_agent",),
        summary="exp(-CV) of work per agent (messages + tool calls), CV = population std / mean")
@dataclass(frozen=True, kw_only=True)
class AgentUtilization:
    """Is the work spread across the agents? (UAEF). 1.0 = even, lower = some idle.

    Agents are the keys of ``trace.agents`` (an agent that only appears in handoffs is not
    counted: it may be an orchestrator that does nothing else). One agent scores 1.0.
    """

    threshold: float = 0.7

    def score(self, ctx: MetricContext) -> MetricResult:
        work = work_by_agent(ctx.trace)
        if not work:
            return ctx.null(Warning.NOT_APPLICABLE, "not a multi-agent trace (no agents)")
        total = sum(work.values())
        if total == 0:
            return ctx.null(Warning.MISSING_DATA, "no agent did any work (no messages or tool calls)")
        s = utilization(list(work.values()))
        idle = sorted(n for n, w in work.items() if w == 0)
        reason = f"work per agent {work}"
        if idle:
            reason += f"; idle: {idle}"
        return ctx.result(s, reason, details={"work": work})


@metric("coordination_efficiency", dimension="multi_agent", requires=("multi_agent",),
        summary="ratio = handoffs / work; 1.0 if ratio <= ideal_ratio else exp(-(ratio - ideal_ratio) x decay)")
@dataclass(frozen=True, kw_only=True)
class CoordinationEfficiency:
    """Is coordination overhead small next to the work done? (UAEF)."""

    threshold: float = 0.7
    ideal_ratio: float = 0.10
    """Handoffs per unit of work that cost nothing."""
    decay: float = 5.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.ideal_ratio) and self.ideal_ratio >= 0):
            raise ConfigError(f"metric 'coordination_efficiency': ideal_ratio must be >= 0, got {self.ideal_ratio!r}")
        if not (math.isfinite(self.decay) and self.decay > 0):
            raise ConfigError(f"metric 'coordination_efficiency': decay must be > 0, got {self.decay!r}")

    def score(self, ctx: MetricContext) -> MetricResult:
        trace = ctx.trace
        if not trace.agents and not trace.handoffs:
            return ctx.null(Warning.NOT_APPLICABLE, "not a multi-agent trace (no agents or handoffs)")
        work = sum(agent_work(run) for run in trace.agents.values())
        if work == 0:
            return ctx.null(Warning.MISSING_DATA, "no work performed by the agents")
        n = len(trace.handoffs)
        s = coordination(n, work, self.ideal_ratio, self.decay)
        return ctx.result(s, f"{n} handoffs for {work} units of work (ratio {n / work:.2f}, ideal "
                             f"<= {self.ideal_ratio:g})", details={"handoffs": n, "work": work, "ratio": n / work})
