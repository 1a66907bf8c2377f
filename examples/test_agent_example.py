"""Agent tests with assay's pytest plugin, against the example traces (deterministic metrics only).

Run with ``python -m pytest examples/test_agent_example.py`` (add ``-n 4`` with pytest-xdist).
The plugin comes with assay (entry point ``pytest11``): the ``assay_evaluate`` fixture, the
``assay`` marker and ``--assay-judge MODEL`` to configure a judge once per session.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from assay import MetricContext, load_traces, metric
from assay.pytest_plugin import assert_passes

TRACES, _ISSUES = load_traces(Path(__file__).with_name("traces.jsonl"))
BY_ID = {t.id: t for t in TRACES}


@metric("states_refund_reference", dimension="response_quality", register=False)
@dataclass(frozen=True, kw_only=True)
class StatesRefundReference:
    """A custom deterministic metric: some answer tells the user the refund reference (RF-...)."""

    threshold: float = 1.0

    def score(self, ctx: MetricContext):
        words = [w.strip(".,;") for t in ctx.trace.turns for w in (t.output or "").split()]
        ref = next((w for w in words if w.startswith("RF-")), None)
        if ref is None:
            return ctx.result(0.0, "no answer gives the refund reference")
        return ctx.result(1.0, f"an answer gives reference {ref}", evidence=[ref])


# Defaults for every test in this module; a marker on a test overrides them.
pytestmark = pytest.mark.assay(metrics=["tool_selection_accuracy"])


@pytest.mark.parametrize("trace_id", ["support-refund-0", "support-refund-1", "weather-paris-0"])
def test_agent_calls_the_expected_tools(assay_evaluate, trace_id):
    assay_evaluate(BY_ID[trace_id])


@pytest.mark.assay(metrics=[StatesRefundReference()])
def test_refund_answers_quote_the_reference(assay_evaluate):
    result = assay_evaluate([BY_ID["support-refund-0"], BY_ID["support-refund-1"]])
    assert result.summary["states_refund_reference"].pass_rate == 1.0


def test_a_wrong_tool_fails_with_metric_score_threshold_and_reason():
    with pytest.raises(AssertionError) as failure:
        assert_passes(BY_ID["weather-paris-2"], ["tool_selection_accuracy"])
    message = str(failure.value)
    assert "weather-paris-2" in message
    assert "tool_selection_accuracy scored 0.000 < threshold 0.70" in message
    assert "reason: 0 matched of 1 expected" in message


def test_thresholds_are_metric_parameters(assay_evaluate):
    # support-refund-2 skipped a tool (score 0.67): it passes a looser threshold
    assay_evaluate(BY_ID["support-refund-2"], ["tool_selection_accuracy:threshold=0.6"],
                   thresholds={"tool_calling": 0.6})  # the dimension's threshold too: `assay run` applies both
