"""Derived data that several metrics read from the same trace, computed once per scoring pass.

The engine scores one trace with one ``MetricContext`` whose ``results`` dict is new for every
pass, and metrics never modify the trace; so a value computed from ``ctx.trace`` stays valid
while ``ctx.results`` and ``ctx.trace`` are the same objects. The view holds them (not their
ids), so a later pass is never mistaken for this one. Only the last pass is kept.
"""

from __future__ import annotations

from typing import Any

from ..model import ExpectedToolCall, MetricResult, ToolCall, Trace, Usage


class TraceView:
    """Lazily computed, shared facts about one trace."""

    __slots__ = ("results", "trace", "_tools", "_names", "_usage")

    def __init__(self, results: Any, trace: Trace) -> None:
        self.results, self.trace = results, trace
        self._tools: tuple[list[ExpectedToolCall] | None, list[ToolCall]] | None = None
        self._names: tuple[list[str] | None, list[str]] | None = None
        self._usage: Any = self

    def tools(self) -> tuple[list[ExpectedToolCall] | None, list[ToolCall]]:
        """(expected tool calls or None, actual tool calls of the main agent)."""
        if self._tools is None:
            self._tools = (self.trace.expected_tool_calls(), self.trace.all_tool_calls())
        return self._tools

    def names(self) -> tuple[list[str] | None, list[str]]:
        """The names of ``tools()``, in order."""
        if self._names is None:
            expected, actual = self.tools()
            self._names = (None if expected is None else [c.name for c in expected], [c.name for c in actual])
        return self._names

    def usage(self) -> Usage | None:
        """``Trace.total_usage()``."""
        if self._usage is self:
            self._usage = self.trace.total_usage()
        return self._usage


_last = TraceView(None, None)  # type: ignore[arg-type]


def view(ctx: Any) -> TraceView:
    """The shared view of ``ctx.trace`` for this scoring pass."""
    global _last
    v = _last
    if v.results is not ctx.results or v.trace is not ctx.trace:
        v = _last = TraceView(ctx.results, ctx.trace)
    return v


def scored(score: float, reason: str = "", evidence: list[str] | None = None,
           details: dict[str, Any] | None = None) -> MetricResult:
    """``MetricContext.result`` for the built-in metrics' hot paths: the same result, built with
    positional arguments (about half the cost of the keyword call; ~12 of these per trace).
    ``evidence`` must be a new list, as ``MetricContext.result`` would copy it."""
    return MetricResult("", float(score), None, None, reason, [] if evidence is None else evidence, None,
                        {} if details is None else details)
