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
        t = self._tools
        if t is None:
            trace = self.trace
            exp, turns = trace.expected, trace.turns
            # the usual trace (expectations on the trace, one turn) without the general walks; the lists
            # are the trace's own, never modified (metrics do not modify the trace)
            expected = exp.tool_calls if exp is not None and exp.tool_calls is not None else trace.expected_tool_calls()
            actual = turns[0].tool_calls if turns is not None and len(turns) == 1 else trace.all_tool_calls()
            t = self._tools = (expected, actual)
        return t

    def names(self) -> tuple[list[str] | None, list[str]]:
        """The names of ``tools()``, in order."""
        n = self._names
        if n is None:
            expected, actual = self._tools or self.tools()
            called: list[str] = []
            for c in actual:  # (a loop: cheaper than a comprehension for a few calls)
                called.append(c.name)
            wanted: list[str] | None = None
            if expected is not None:
                wanted = []
                for e in expected:
                    wanted.append(e.name)
            n = self._names = (wanted, called)
        return n

    def usage(self) -> Usage | None:
        """``Trace.total_usage()`` (for one turn's usage alone, that usage itself: the same values)."""
        u = self._usage
        if u is self:
            trace = self.trace
            turns = trace.turns
            if trace.usage is None and not trace.agents and turns is not None and len(turns) == 1:
                u = turns[0].usage
            else:
                u = trace.total_usage()
            self._usage = u
        return u


def view(ctx: Any) -> TraceView:
    """The shared view of ``ctx.trace`` for this scoring pass (made here for a context built by hand)."""
    v = ctx.memo
    if v is None or v.trace is not ctx.trace:
        v = ctx.memo = TraceView(ctx.trace)
    return v

