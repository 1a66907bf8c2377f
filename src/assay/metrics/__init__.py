"""Metrics: the declaration seam, the registry and the built-in catalog (loaded on first use).

Deterministic metrics are a dataclass with ``score(ctx)`` under ``@metric``. Judge metrics derive
from :class:`ScaleJudged` (a 1-5 or other integer scale) or :class:`LabelJudged` (labels with
weights) and give a ``rubric``, or come from the one-line :func:`rubric_metric`; ``shows(...)``
with :func:`turn_sections`, :func:`conversation_sections` or :func:`dialogue` says what the judge sees, and
:class:`Session` is the tool for several calls or custom schemas. Metrics are found by name in
the default registry: built-ins, then installed plugins (``assay.metrics`` entry points), then
what user code registers. The judge-metric names load on first access (they import pydantic).
"""

from typing import Any

from ._base import (
    Metric, MetricContext, MetricSpec, Registry, Requirement, data_meets, metric, parse_metric_arg,
)
from ._defaults import DEFAULT_METRICS, DEFAULT_SET_VERSION

_LAZY = {
    "ScaleJudged": "._judged", "LabelJudged": "._judged", "Session": "._judged", "JudgeFailed": "._judged",
    "Rubric": "._judged", "shows": "._judged", "read_rubric": "._judged",
    "Section": "._sections", "turn_sections": "._sections", "dialogue": "._sections",
    "conversation_sections": ".conversation", "rubric_metric": ".criteria", "criteria_metric": ".criteria",
}

__all__ = ["DEFAULT_METRICS", "DEFAULT_SET_VERSION", "Metric", "MetricContext", "MetricSpec", "Registry",
           "Requirement", "data_meets", "metric", "parse_metric_arg", *_LAZY]


def __getattr__(name: str) -> Any:
    if name == "REGISTRY":  # internal: importable for old code, not part of the public API (__all__)
        from ._base import REGISTRY
        return REGISTRY
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
