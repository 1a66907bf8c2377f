"""Typed data: the trace format (input contract) and the result types."""

from ._card import Disagreement, JudgeCard, LabelAgreement, MetricCard, PassFail
from ._record import RunRecord
from ._result import (
    DimensionScore, InputIssue, MetricResult, MetricSummary, ReadingWarning, RunResult, TraceResult, Warning, decode_issue, decode_run, decode_trace,
    encode, encode_run, encode_summary_record, encode_trace, encode_trace_into, read_results, run_from_builtins,
)
from ._trace import (
    AgentRun, Expected, ExpectedToolCall, Handoff, ToolCall, Trace, TraceValidationError, Turn, TurnExpected, Usage,
    negative_values,
)

__all__ = [
    "AgentRun", "DimensionScore", "Disagreement", "JudgeCard", "LabelAgreement", "MetricCard", "PassFail", "Expected", "ExpectedToolCall", "Handoff", "InputIssue", "MetricResult", "ReadingWarning",
    "MetricSummary", "RunRecord", "RunResult", "ToolCall", "Trace", "TraceResult", "TraceValidationError", "Turn", "TurnExpected", "Usage", "Warning",
    "decode_issue", "decode_run", "decode_trace", "encode", "encode_run", "encode_summary_record", "encode_trace",
    "encode_trace_into", "read_results", "negative_values", "run_from_builtins",
]
