"""Typed data: the trace format (input contract) and the result types."""

from ._result import (
    DimensionScore, InputIssue, MetricResult, MetricSummary, RunResult, TraceResult, Warning,
)
from ._trace import (
    AgentRun, Expected, ExpectedToolCall, Handoff, ToolCall, Trace, TraceValidationError, Turn, TurnExpected, Usage,
)

__all__ = [
    "AgentRun", "DimensionScore", "Expected", "ExpectedToolCall", "Handoff", "InputIssue", "MetricResult",
    "MetricSummary", "RunResult", "ToolCall", "Trace", "TraceResult", "TraceValidationError", "Turn", "TurnExpected", "Usage", "Warning",
]
