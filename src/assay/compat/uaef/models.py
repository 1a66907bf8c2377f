"""UAEF's data and result models (``uaef.models``), as small pydantic mirrors.

Inputs (:class:`AgentTrace`, :class:`MultiAgentTrace`, :class:`GroundTruth`,
:class:`EvaluationInput`) take UAEF's fields and units (latency and execution times in seconds) and
are more lenient than UAEF's: timestamps and coordination messages are optional, and unknown
fields are kept (they end up in the trace's metadata). An expected :class:`ToolCall` without
``arguments`` accepts any arguments.

Results (:class:`MetricScore`, :class:`DimensionResult`, :class:`EvaluationResult`) have UAEF's
fields, with the honest values of assay's engine: a score, a dimension score or the overall score
is None when nothing could be scored (UAEF reports an all-None dimension as 0.0), and ``passed``
uses the documented weights and thresholds (UAEF's never apply).
"""

from __future__ import annotations

import datetime as _dt
import uuid
from typing import Any, Literal

import pydantic

WARNINGS = ("missing_data", "invalid_data", "not_applicable", "api_error")
"""UAEF's ``metadata['warning']`` values; assay adds metric_error and not_evaluated."""


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


class ToolCall(_Model):
    """A tool call the agent made (or, in a GroundTruth, should make)."""

    name: str
    arguments: dict[str, Any] | None = None
    result: Any = None
    timestamp: _dt.datetime | str | float | None = None
    execution_time: float | None = None
    """Seconds."""
    error: str | None = None


class Message(_Model):
    """One conversation message: role user, assistant, system or tool."""

    role: str
    content: str | None = None
    tool_calls: list[ToolCall] = pydantic.Field(default_factory=list)
    timestamp: _dt.datetime | str | float | None = None


class AgentTrace(_Model):
    """One agent's run: messages, tool calls and accounting (latency in seconds, cost in USD)."""

    trace_id: uuid.UUID | str = pydantic.Field(default_factory=uuid.uuid4)
    session_id: str | None = None
    messages: list[Message] = pydantic.Field(default_factory=list)
    tool_calls: list[ToolCall] = pydantic.Field(default_factory=list)
    input_tokens: int | None = pydantic.Field(default=None, ge=0)
    output_tokens: int | None = pydantic.Field(default=None, ge=0)
    latency: float | None = pydantic.Field(default=None, ge=0.0)
    cost: float | None = pydantic.Field(default=None, ge=0.0)
    metadata: dict[str, Any] = pydantic.Field(default_factory=dict)
    framework: str | None = None
    timestamp: _dt.datetime | str | None = None


class CoordinationEvent(_Model):
    """A delegation, handoff or message between two agents."""

    from_agent: str
    to_agent: str
    event_type: str = "delegation"
    message: str | None = None
    timestamp: _dt.datetime | str | float | None = None
    metadata: dict[str, Any] = pydantic.Field(default_factory=dict)


class MultiAgentTrace(_Model):
    """Several agents' traces plus their coordination events and the workflow's status."""

    trace_id: uuid.UUID | str = pydantic.Field(default_factory=uuid.uuid4)
    session_id: str | None = None
    agent_traces: dict[str, AgentTrace] = pydantic.Field(default_factory=dict)
    coordination_events: list[CoordinationEvent] = pydantic.Field(default_factory=list)
    workflow_status: Literal["completed", "failed", "partial"] = "completed"
    total_latency: float | None = pydantic.Field(default=None, ge=0.0)
    total_cost: float | None = pydantic.Field(default=None, ge=0.0)
    metadata: dict[str, Any] = pydantic.Field(default_factory=dict)
    timestamp: _dt.datetime | str | None = None


class GroundTruth(_Model):
    """What the agent should have done: expected output, tool calls, arguments, context documents.

    ``expected_arguments`` may also carry ``goal``/``user_goal``, ``role``, ``instructions``,
    ``success_criteria`` and ``expected_turns`` for the multi-turn metrics.
    """

    expected_output: str | None = None
    expected_tool_calls: list[ToolCall] = pydantic.Field(default_factory=list)
    expected_arguments: dict[str, Any] = pydantic.Field(default_factory=dict)
    context_documents: list[str] = pydantic.Field(default_factory=list)


class EvaluationInput(_Model):
    """What a metric sees: the trace, the ground truth and the context documents."""

    trace: AgentTrace | MultiAgentTrace
    ground_truth: GroundTruth | None = None
    context: list[str] = pydantic.Field(default_factory=list)

    @pydantic.field_validator("trace", mode="before")
    @classmethod
    def _which_trace(cls, value: Any) -> Any:
        if isinstance(value, dict):  # unambiguous: only a multi-agent trace has agent_traces
            return MultiAgentTrace.model_validate(value) if "agent_traces" in value \
                else AgentTrace.model_validate(value)
        return value


class MetricScore(_Model):
    """One metric's score in [0, 1], or None with ``metadata['warning']`` saying why."""

    metric_name: str
    score: float | None = None
    reasoning: str | None = None
    metadata: dict[str, Any] = pydantic.Field(default_factory=dict)
    timestamp: _dt.datetime = pydantic.Field(default_factory=_now)

    @pydantic.field_validator("score")
    @classmethod
    def _in_range(cls, v: float | None) -> float | None:
        if v is not None and not 0.0 <= v <= 1.0:
            raise ValueError(f"score must be between 0 and 1, got {v!r}")
        return v


class DimensionResult(_Model):
    """The metrics of one dimension; ``aggregate_score`` is the mean of their non-None scores."""

    dimension_name: str
    metric_scores: list[MetricScore]
    aggregate_score: float | None
    """None when no metric of the dimension produced a score (UAEF says 0.0)."""
    weight: float
    threshold: float
    passed: bool | None


class EvaluationResult(_Model):
    """One trace's evaluation: per-dimension results, the weighted overall score, pass/fail."""

    evaluation_id: uuid.UUID = pydantic.Field(default_factory=uuid.uuid4)
    trace_id: str
    dimension_results: list[DimensionResult]
    overall_score: float | None
    """Weighted mean of the dimension scores, over the dimensions that have one."""
    passed: bool | None
    """True iff every scored metric and dimension meets its threshold; None if nothing scored."""
    failures: list[str] = pydantic.Field(default_factory=list)
    warnings: list[str] = pydantic.Field(default_factory=list)
    metadata: dict[str, Any] = pydantic.Field(default_factory=dict)
    timestamp: _dt.datetime = pydantic.Field(default_factory=_now)

    @property
    def metric_scores(self) -> dict[str, MetricScore]:
        """Every metric's score by name."""
        return {m.metric_name: m for d in self.dimension_results for m in d.metric_scores}

    def get_metric(self, name: str) -> MetricScore | None:
        return self.metric_scores.get(name)

    def get_dimension(self, name: str) -> DimensionResult | None:
        return next((d for d in self.dimension_results if d.dimension_name == name), None)


__all__ = [
    "WARNINGS",
    "AgentTrace",
    "CoordinationEvent",
    "DimensionResult",
    "EvaluationInput",
    "EvaluationResult",
    "GroundTruth",
    "Message",
    "MetricScore",
    "MultiAgentTrace",
    "ToolCall",
]
