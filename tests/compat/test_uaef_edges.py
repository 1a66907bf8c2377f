"""assay.compat.uaef gives UAEF's own expected scores on UAEF's test data (tests/data/real/uaef),
edge cases included; assay's native metrics say where they differ on purpose."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from assay.compat.uaef import evaluate, get_metric
from assay.metrics._base import REGISTRY

UAEF = Path(__file__).resolve().parents[1] / "data" / "real" / "uaef"
CASES = [(path.stem, case) for path in sorted(UAEF.glob("*.json"))
         for case in json.loads(path.read_text(encoding="utf-8"))["test_cases"]]


@pytest.mark.parametrize(("metric", "case"), CASES, ids=[f"{m}:{c['name']}" for m, c in CASES])
def test_uaef_expected_scores(metric: str, case: dict[str, Any]) -> None:
    chosen = get_metric(metric, **case["metric_params"]) if case.get("metric_params") else metric
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        score = evaluate(trace=case["trace"], ground_truth=case.get("ground_truth"), metrics=[chosen]).get_metric(metric)
    expected = case["expected_score"]
    if expected is None:
        assert score.score is None and score.metadata["warning"]
    else:
        assert score.score == pytest.approx(expected, abs=0.01)  # UAEF's file rounds to 2 places


@pytest.mark.parametrize(("metric", "trace", "ground_truth", "uaef", "assay_warning"), [
    ("token_efficiency", {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
                          "input_tokens": 0, "output_tokens": 0, "metadata": {"quality_score": 0.8}}, None, None, None),
    ("parameter_quality", {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
     {"expected_tool_calls": []}, 1.0, "not_applicable"),
], ids=["zero_tokens", "no_tools"])
def test_other_documented_edges(metric: str, trace: dict[str, Any], ground_truth: Any, uaef: float | None,
                                assay_warning: str | None) -> None:
    score = evaluate(trace=trace, ground_truth=ground_truth, metrics=[metric]).get_metric(metric)
    assert score.score == uaef and score.metadata["uaef_edge_case"] is True
    assert score.metadata.get("assay_score") is None or assay_warning is None


@pytest.mark.parametrize("name", ["cost_efficiency", "token_efficiency", "throughput", "parameter_quality"])
def test_native_metrics_say_where_they_differ_from_uaef(name: str) -> None:
    doc = " ".join((REGISTRY.get(name).__doc__ or "").split())  # what `assay metrics NAME` prints
    assert "UAEF gives" in doc and "assay.compat.uaef" in doc
