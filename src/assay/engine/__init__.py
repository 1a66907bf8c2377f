"""The evaluation engine: metric selection, scoring, aggregation, judge calibration."""

from ._aggregate import DEFAULT_THRESHOLDS, DEFAULT_WEIGHTS, Dimensions
from ._calibrate import Label, calibrate, correct_pass_rates, read_labels
from ._run import NO_JUDGE, Evaluation, aevaluate, evaluate, resolve_metrics

__all__ = ["DEFAULT_THRESHOLDS", "DEFAULT_WEIGHTS", "Dimensions", "Evaluation", "Label", "NO_JUDGE", "aevaluate",
           "calibrate", "correct_pass_rates", "evaluate", "read_labels", "resolve_metrics"]
