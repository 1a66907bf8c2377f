"""The evaluation engine: metric selection, scoring, aggregation."""

from ._aggregate import DEFAULT_THRESHOLDS, DEFAULT_WEIGHTS, Dimensions
from ._run import NO_JUDGE, Evaluation, aevaluate, evaluate, resolve_metrics

__all__ = ["DEFAULT_THRESHOLDS", "DEFAULT_WEIGHTS", "Dimensions", "Evaluation", "NO_JUDGE", "aevaluate",
           "evaluate", "resolve_metrics"]
