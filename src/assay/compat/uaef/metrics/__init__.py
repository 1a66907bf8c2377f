"""UAEF's metrics module (``uaef.metrics``): the custom-metric base class and registry functions."""

from .registry import (
    BaseMetric,
    get_metric,
    list_metrics,
    list_metrics_by_dimension,
    register_metric,
    register_use_case_specific_metrics,
)

__all__ = ["BaseMetric", "get_metric", "list_metrics", "list_metrics_by_dimension", "register_metric",
           "register_use_case_specific_metrics"]
