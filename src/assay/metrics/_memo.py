"""Derived data that several metrics read from the same trace, computed once per scoring pass.

The engine scores one trace with one ``MetricContext`` whose ``results`` dict is new for every
pass, and metrics never modify the trace; so a value computed from ``ctx.trace`` stays valid
while ``ctx.results`` and ``ctx.trace`` are the same objects. Holding them (not their ids)
keeps a later pass from being mistaken for this one. Only the last pass is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..model import Trace

_MISSING = object()
_state: tuple[Any, Any, dict[str, Any]] = (None, None, {})


def per_trace(ctx: Any, key: str, compute: Callable[[Trace], Any]) -> Any:
    """``compute(ctx.trace)``, computed once per scoring pass of that trace."""
    global _state
    state = _state
    if state[0] is not ctx.results or state[1] is not ctx.trace:
        state = _state = (ctx.results, ctx.trace, {})
    value = state[2].get(key, _MISSING)
    if value is _MISSING:
        value = state[2][key] = compute(ctx.trace)
    return value


def tool_calls(ctx: Any) -> tuple[Any, Any]:
    """(expected tool calls or None, actual tool calls) of the main agent."""
    return per_trace(ctx, "tool_calls", lambda t: (t.expected_tool_calls(), t.all_tool_calls()))


def usage(ctx: Any) -> Any:
    """``Trace.total_usage()``."""
    return per_trace(ctx, "usage", Trace.total_usage)
