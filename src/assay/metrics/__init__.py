"""Metrics: the declaration seam, the registry and the built-in catalog (loaded on first use)."""

from ._base import (
    REGISTRY, Metric, MetricContext, MetricSpec, Registry, Requirement, data_meets, metric, parse_metric_arg,
)

__all__ = ["REGISTRY", "Metric", "MetricContext", "MetricSpec", "Registry", "Requirement", "data_meets",
           "metric", "parse_metric_arg"]
