"""Derived data that several metrics read from the same trace, computed once per scoring pass.

The engine gives every scoring pass of a trace a fresh ``TraceView`` on its ``MetricContext``
(``ctx.memo``), shared by the per-metric and per-turn contexts derived from it; metrics never
modify the trace, so a value computed from ``ctx.trace`` stays valid for the whole pass. No
module-level state: concurrent passes (async metrics, threads) cannot see each other's view.
"""

from __future__ import annotations

from typing import Any

from ..model import ExpectedToolCall, ToolCall, Trace, Usage


class TraceView:
    """Lazily computed, shared facts about one trace."""

    __slots__ = ("trace", "_tools", "_names", "_usage")

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
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


def view(ctx: Any) -> TraceView:
    """The shared view of ``ctx.trace`` for this scoring pass (made here for a context built by hand)."""
    v = ctx.memo
    if v is None or v.trace is not ctx.trace:
        v = ctx.memo = TraceView(ctx.trace)
    return v

