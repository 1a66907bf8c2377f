"""UAEF's documented values on its edge cases, where assay's own metrics answer otherwise on purpose.

UAEF's test data (``tests/data/*.json`` of awslabs/uaef) fixes these; assay's metrics say why they
differ in their descriptions (``assay metrics NAME``):

| metric | input | UAEF | assay |
|---|---|---|---|
| cost_efficiency | cost 0 | None (missing_data: 0 is taken as missing) | scored (a free run is cheap) |
| cost_efficiency | negative cost | 0.0 | None (invalid_data) |
| token_efficiency | 0 tokens | None (missing_data) | scored |
| throughput | negative throughput | 0.0 | None (invalid_data) |
| parameter_quality | no calls expected, none made | 1.0 | None (not_applicable) |
"""

from __future__ import annotations

from typing import Any

from ...model import Trace
from .models import MetricScore


def _usage(trace: Trace, field: str) -> Any:
    """The trace's recorded tokens or cost (its own usage, else its first turn's that has one)."""
    values = [getattr(u, field) for u in [trace.usage, *(t.usage for t in trace.turns)] if u is not None]
    return next((v for v in values if v is not None), None)


def _edge(name: str, trace: Trace) -> tuple[float | None, str, str | None] | None:
    """(score, reason, warning) UAEF gives ``trace`` for metric ``name``, when that differs from assay's."""
    if name == "cost_efficiency":
        cost = _usage(trace, "cost_usd")
        if cost == 0:
            return None, "cost 0 is taken as missing (UAEF)", "missing_data"
        if cost is not None and cost < 0:
            return 0.0, f"negative cost {cost!r} scores 0.0 (UAEF)", None
    elif name == "token_efficiency":
        if _usage(trace, "tokens") == 0:
            return None, "0 tokens are taken as missing (UAEF)", "missing_data"
    elif name == "throughput":
        rps = trace.throughput_rps
        if rps is not None and rps < 0:
            return 0.0, f"negative throughput {rps!r} scores 0.0 (UAEF)", None
    elif name == "parameter_quality":
        expected = trace.expected.tool_calls if trace.expected is not None else None
        if expected == [] and not any(t.tool_calls for t in trace.turns):
            return 1.0, "no tools to evaluate (UAEF)", None
    return None


def uaef_score(score: MetricScore, trace: Trace | None) -> MetricScore:
    """``score`` with UAEF's documented value when ``trace`` is one of UAEF's edge cases for it."""
    edge = _edge(score.metric_name, trace) if trace is not None else None
    if edge is None:
        return score
    value, reason, warning = edge
    meta = {k: v for k, v in (score.metadata or {}).items() if k not in ("warning", "assay_warning")}
    meta.update(assay_score=score.score, assay_reasoning=score.reasoning, uaef_edge_case=True)
    if warning is not None:
        meta["warning"] = warning
    return MetricScore(metric_name=score.metric_name, score=value, reasoning=reason, metadata=meta)
