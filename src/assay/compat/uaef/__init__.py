"""UAEF's API (awslabs/uaef 0.2.0) over assay's core.

UAEF's documentation snippets run with ``uaef`` replaced by ``assay.compat.uaef`` in their imports
(``.api.evaluate``, ``.models``, ``.metrics``, ``.metrics.registry``)::

    from assay.compat.uaef import evaluate
    result = evaluate(trace=trace, metrics=["answer_relevance", "safety_score", "latency_score"],
                      judge="openai:gpt-4o-mini")     # or ASSAY_JUDGE
    result.overall_score, result.passed, result.get_metric("latency_score").score

Every metric is assay's (same names as UAEF's catalog); see ``api`` for what differs from UAEF.
``assay.compat.uaef.integrations`` mirrors the RAGAS and DeepEval connectors.
"""

from .api import batch_evaluate, evaluate
from .metrics.registry import (
    BaseMetric,
    get_metric,
    list_metrics,
    list_metrics_by_dimension,
    register_metric,
    register_use_case_specific_metrics,
)
from .models import (
    AgentTrace,
    CoordinationEvent,
    DimensionResult,
    EvaluationInput,
    EvaluationResult,
    GroundTruth,
    Message,
    MetricScore,
    MultiAgentTrace,
    ToolCall,
)

__all__ = [
    "AgentTrace", "BaseMetric", "CoordinationEvent", "DimensionResult", "EvaluationInput", "EvaluationResult",
    "GroundTruth", "Message", "MetricScore", "MultiAgentTrace", "ToolCall", "batch_evaluate", "evaluate",
    "get_metric", "list_metrics", "list_metrics_by_dimension", "register_metric",
    "register_use_case_specific_metrics",
]
