"""Small trace builders for the deterministic metric tests, exposed as session fixtures.

Builders return plain dicts (what a trace file holds) or validated Traces; ``score`` runs one
metric on one trace the way the engine does (name, params, earlier results) without a run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from assay.engine._scoring import finish
from assay.metrics import MetricContext
from assay.metrics._base import REGISTRY
from assay.model import MetricResult, Trace


def call(name: str, args: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """An actual tool call (dict)."""
    return {"name": name, "arguments": {} if args is None else args, **kw}


def expected_call(name: str, args: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """An expected tool call (dict); ``args`` None means any arguments."""
    out: dict[str, Any] = {"name": name, **kw}
    if args is not None:
        out["arguments"] = args
    return out


def make_trace(turns: list[dict[str, Any]] | None = None, **kw: Any) -> Trace:
    """A validated Trace; one plain turn by default."""
    data = {"id": kw.pop("id", "t"), "turns": [{"input": "hi", "output": "hello"}] if turns is None else turns, **kw}
    return Trace.model_validate(data)


def tools_trace(expected: list[Any] | None, actual: list[Any], *, order: str | None = None,
                **kw: Any) -> Trace:
    """One turn calling ``actual`` (names or call dicts), trace-level expected calls."""
    calls = [c if isinstance(c, dict) else call(c) for c in actual]
    exp: dict[str, Any] = {}
    if expected is not None:
        exp["tool_calls"] = [e if isinstance(e, dict) else expected_call(e) for e in expected]
    if order is not None:
        exp["tool_order"] = order
    extra = {"expected": exp} if exp else {}
    return make_trace([{"input": "do it", "output": "done", "tool_calls": calls}], **extra, **kw)


def score(name: str, trace: Trace | dict[str, Any], results: dict[str, MetricResult] | None = None,
          **params: Any) -> MetricResult:
    """Metric ``name`` with ``params`` on one trace, stamped like the engine stamps it."""
    m = REGISTRY.create(name, **params)
    t = trace if isinstance(trace, Trace) else Trace.model_validate(trace)
    return finish(m, m.score(MetricContext(t, None, dict(results or {}))))


def result(value: float | None) -> MetricResult:
    """An earlier metric result with this score (for ctx.results)."""
    return MetricContext.result(value) if value is not None else MetricContext.null("missing_data", "none")


@pytest.fixture(scope="session")
def build() -> Callable[..., Trace]:
    return make_trace


@pytest.fixture(scope="session")
def tools() -> Callable[..., Trace]:
    return tools_trace


@pytest.fixture(scope="session")
def run() -> Callable[..., MetricResult]:
    return score


@pytest.fixture(scope="session")
def mk() -> Any:
    """call / expected_call / result builders."""
    from types import SimpleNamespace
    return SimpleNamespace(call=call, expected=expected_call, result=result)
