"""Environment state: the state a run left its environment in, compared with the task's expected one.

tau-bench's central check: an agent that says "booked" but never booked, or booked twice, is
told apart by the environment, not by its words. ``Trace.state`` is the final state (``assay
collect`` records it for a task with ``state``; any importer may fill it) and ``expected.state``
the state the task requires. Deterministic; opt-in (``-m state_match``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..model import MetricResult, Warning
from ._base import MetricContext, metric

SHOWN = 20
"""Differences listed in ``details['differences']`` (all are counted)."""


def state_differences(expected: Any, actual: Any, *, subset: bool = False, path: str = "$") -> list[str]:
    """Where ``actual`` differs from ``expected`` (JSON values), one line each: ``$.seats.A1: expected
    "booked", got "free"``. ``subset``: keys of an object that ``expected`` does not name are ignored
    (at every depth); arrays are compared item by item either way. 1 and 1.0 are equal; true and 1 are not."""
    out: list[str] = []
    _diff(expected, actual, subset, path, out)
    return out


def _diff(expected: Any, actual: Any, subset: bool, path: str, out: list[str]) -> None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, value in expected.items():
            where = f"{path}.{key}" if str(key).isidentifier() else f"{path}[{json.dumps(str(key))}]"
            if key not in actual:
                out.append(f"{where}: missing (expected {_show(value)})")
            else:
                _diff(value, actual[key], subset, where, out)
        if not subset:
            for key in actual.keys() - expected.keys():
                where = f"{path}.{key}" if str(key).isidentifier() else f"{path}[{json.dumps(str(key))}]"
                out.append(f"{where}: not expected (got {_show(actual[key])})")
        return
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            out.append(f"{path}: expected {len(expected)} items, got {len(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual)):
            _diff(e, a, subset, f"{path}[{i}]", out)
        return
    if isinstance(expected, bool) != isinstance(actual, bool) or expected != actual or \
            isinstance(expected, (dict, list)) != isinstance(actual, (dict, list)):
        out.append(f"{path}: expected {_show(expected)}, got {_show(actual)}")


def _show(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


@metric("state_match", dimension="tool_calling", requires=("expected_state",), default=False,
        summary="1.0 when the final state (trace.state) equals expected.state, else 0.0; subset=True: only "
                "the keys expected.state names")
@dataclass(frozen=True, kw_only=True)
class StateMatch:
    """Did the agent leave the environment in the state the task requires (tau-bench's check)?

    The final state is compared with ``expected.state`` as JSON: every difference is counted and
    the first 20 are listed in ``details['differences']``. A trace with no final state is null
    (missing data), never a pass.
    """

    threshold: float = 1.0
    subset: bool = False
    """Compare only the keys ``expected.state`` names (other keys of the final state are ignored)."""

    def score(self, ctx: MetricContext) -> MetricResult:
        trace = ctx.trace
        expected = trace.expected.state if trace.expected is not None else None
        if expected is None:
            return ctx.null(Warning.MISSING_DATA, "no expected state (expected.state)")
        if trace.state is None:
            return ctx.null(Warning.MISSING_DATA, "the trace records no final state (state)")
        diffs = state_differences(expected, trace.state, subset=self.subset)
        if not diffs:
            return ctx.result(1.0, "the final state is the expected one" + (" (in the keys it names)"
                                                                           if self.subset else ""),
                              details={"differences": [], "count": 0})
        return ctx.result(0.0, f"{len(diffs)} difference{'s' if len(diffs) > 1 else ''} from the expected state: "
                               f"{diffs[0]}", details={"differences": diffs[:SHOWN], "count": len(diffs)})
