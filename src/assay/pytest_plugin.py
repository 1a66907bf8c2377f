"""pytest integration: ``assay_evaluate`` fixture and ``assert_passes`` for agent tests.

Registered through the ``pytest11`` entry point. Configure the judge once per session with
``--assay-judge MODEL`` (or ASSAY_JUDGE); tests then call::

    def test_support_agent(assay_evaluate):
        assay_evaluate(trace, ["tool_selection_accuracy", "answer_relevance"])

which fails with the metric, score, threshold and the judge's reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pytest


def assert_passes(traces: Any, metrics: Iterable[Any] | None = None, *, judge: Any = None, **kwargs: Any) -> Any:
    """Evaluate and raise AssertionError listing every failed or errored metric result."""
    from .engine import evaluate

    if isinstance(traces, dict) or hasattr(traces, "turns"):
        traces = [traces]
    result = evaluate(traces, metrics, judge=judge, **kwargs)
    problems = []
    for issue in result.input_issues:
        problems.append(f"input: {issue}")
    for tr in result.traces:
        for name, r in tr.metrics.items():
            if r.passed is False:
                problems.append(f"{tr.id}: {name} scored {r.score:.3f} < threshold {r.threshold}: {r.reason}")
            elif r.errored:
                problems.append(f"{tr.id}: {name} errored ({r.warning}): {r.reason}")
    if problems:
        raise AssertionError("assay: " + "\n  ".join(problems))
    return result


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("assay")
    group.addoption("--assay-judge", default=None, help="Judge model for assay metrics (default: $ASSAY_JUDGE).")


@pytest.fixture(scope="session")
def assay_judge(request: pytest.FixtureRequest) -> Any:
    """The session's judge, built once (None when none is configured)."""
    spec = request.config.getoption("--assay-judge") or os.environ.get("ASSAY_JUDGE")
    if not spec:
        return None
    from .judge import make_judge
    return make_judge(spec)


@pytest.fixture()
def assay_evaluate(assay_judge: Any) -> Any:
    """``assay_evaluate(traces, metrics, **kw)``: assert_passes with the session's judge."""

    def run(traces: Any, metrics: Iterable[Any] | None = None, **kwargs: Any) -> Any:
        kwargs.setdefault("judge", assay_judge)
        return assert_passes(traces, metrics, **kwargs)

    return run
