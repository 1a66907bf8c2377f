"""UAEF inputs to assay traces (through the uaef importer) and back (for custom UAEF metrics)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic

from ...errors import ConfigError
from ...importers.uaef import evaluation_input_to_trace
from ...model import ToolCall as CoreToolCall
from ...model import Trace, Turn
from .models import (
    AgentTrace,
    CoordinationEvent,
    EvaluationInput,
    GroundTruth,
    Message,
    MultiAgentTrace,
    ToolCall,
)


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, pydantic.BaseModel) else value


def to_trace(trace: Any, ground_truth: Any = None, context: list[str] | None = None,
             default_id: str = "trace") -> Trace:
    """An assay Trace from UAEF's ``evaluate`` arguments.

    ``trace``: an AgentTrace or MultiAgentTrace (these models or UAEF-shaped dicts), an
    EvaluationInput, a UAEF session dict (its ``full_trace`` is used: assay scores turn-level
    metrics per turn itself), or an assay Trace.
    """
    if isinstance(trace, Trace):
        if ground_truth is not None or context:
            raise ConfigError("an assay Trace carries its own ground truth (expected) and context; "
                              "ground_truth= and context= apply to UAEF traces only")
        return trace
    if isinstance(trace, list):
        raise ConfigError("evaluate() takes one trace; use batch_evaluate() for several")
    if isinstance(trace, Mapping) and "per_turn_traces" in trace:
        if "full_trace" not in trace:
            raise ConfigError("a UAEF session dict needs both 'per_turn_traces' and 'full_trace'")
        trace = trace["full_trace"]
    if isinstance(trace, EvaluationInput) or (isinstance(trace, Mapping) and (
            "trace" in trace or "multi_agent_trace" in trace)):
        case = dict(_dump(trace))
        if ground_truth is not None:
            case["ground_truth"] = _dump(ground_truth)
        if context:
            case["context"] = [*case.get("context", []), *context]
    elif isinstance(trace, (AgentTrace, MultiAgentTrace, Mapping)):
        case = {"trace": _dump(trace), "ground_truth": _dump(ground_truth), "context": list(context or [])}
    else:
        raise ConfigError(f"trace must be an AgentTrace, a MultiAgentTrace, an EvaluationInput, a UAEF dict or an "
                          f"assay Trace, got {type(trace).__name__}")
    return evaluation_input_to_trace(case, default_id=default_id)


# -- assay Trace -> UAEF EvaluationInput (what a registered UAEF BaseMetric receives) --------------

def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0


def _call(c: CoreToolCall) -> ToolCall:
    return ToolCall(name=c.name, arguments=dict(c.arguments), result=c.result, error=c.error, timestamp=c.timestamp,
                    execution_time=_seconds(c.duration_ms))


def _messages(turns: list[Turn], system: str | None = None) -> list[Message]:
    out = [Message(role="system", content=system)] if system else []
    for t in turns:
        if t.input is not None:
            out.append(Message(role="user", content=t.input))
        if t.output is not None:
            out.append(Message(role="assistant", content=t.output))
    return out


def _agent_trace(trace_id: str, turns: list[Turn], usage: Any, latency_ms: float | None, system: str | None = None,
                 metadata: dict[str, Any] | None = None) -> AgentTrace:
    return AgentTrace(trace_id=trace_id, messages=_messages(turns, system),
                      tool_calls=[_call(c) for t in turns for c in t.tool_calls],
                      input_tokens=None if usage is None else usage.input_tokens,
                      output_tokens=None if usage is None else usage.output_tokens,
                      cost=None if usage is None else usage.cost_usd, latency=_seconds(latency_ms),
                      metadata=dict(metadata or {}))


def to_input(trace: Trace) -> EvaluationInput:
    """The UAEF EvaluationInput a custom UAEF metric sees for an assay trace."""
    turns = list(trace.turns or ())
    trace_id = str(trace.metadata.get("uaef_trace_id") or trace.id)
    meta = {k: v for k, v in trace.metadata.items() if k != "uaef_trace_id"}
    if trace.agents or trace.handoffs:
        agents = {name: _agent_trace(f"{trace_id}:{name}", list(a.turns or ()), a.usage, None)
                  for name, a in trace.agents.items()}
        usage = trace.total_usage()
        uaef_trace: AgentTrace | MultiAgentTrace = MultiAgentTrace(
            trace_id=trace_id, agent_traces=agents,
            coordination_events=[CoordinationEvent(from_agent=h.from_agent, to_agent=h.to_agent, event_type=h.kind,
                                                   message=h.message, timestamp=h.timestamp) for h in trace.handoffs],
            workflow_status=trace.status or "completed", total_latency=_seconds(trace.total_latency_ms()),
            total_cost=None if usage is None else usage.cost_usd, metadata=meta)
    else:
        uaef_trace = _agent_trace(trace_id, turns, trace.total_usage(), trace.total_latency_ms(), trace.system, meta)
    context = list(dict.fromkeys(c for t in turns for c in t.context))
    return EvaluationInput(trace=uaef_trace, ground_truth=_ground_truth(trace), context=context)


def _ground_truth(trace: Trace) -> GroundTruth | None:
    e = trace.expected
    last_output = next((t.expected.output for t in reversed(trace.turns or ())
                        if t.expected is not None and t.expected.output is not None), None)
    calls = trace.expected_tool_calls()
    args: dict[str, Any] = dict(trace.metadata.get("expected_arguments") or {})
    if e is not None:
        for key, value in (("goal", e.goal), ("role", e.role), ("instructions", e.instructions),
                           ("success_criteria", e.success_criteria or None), ("expected_turns", e.turns)):
            if value is not None:
                args.setdefault(key, value)
    output = e.output if e is not None and e.output is not None else last_output
    if output is None and calls is None and not args:
        return None
    return GroundTruth(expected_output=output,
                       expected_tool_calls=[ToolCall(name=c.name, arguments=c.arguments) for c in calls or ()],
                       expected_arguments=args)
