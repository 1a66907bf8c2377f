"""The evaluation engine: metric selection, scoring, aggregation, judge calibration."""

from ._aggregate import DEFAULT_THRESHOLDS, DEFAULT_WEIGHTS, Dimensions
from ._calibrate import Label, calibrate, correct_pass_rates, read_labels
from ._dask import DaskExecutor
from ._jury import Jury, make_jury
from ._run import NO_JUDGE, Evaluation, aevaluate, evaluate, resolve_metrics

__all__ = ["DEFAULT_THRESHOLDS", "DEFAULT_WEIGHTS", "DaskExecutor", "Dimensions", "Evaluation", "Jury", "Label", "NO_JUDGE", "aevaluate",
           "calibrate", "correct_pass_rates", "evaluate", "make_jury", "read_labels", "resolve_metrics"]
