"""The run core: metric selection, scoring, aggregation, statistics, partial runs, juries and
repeats, the Dask executor. Analyses of finished runs live in ``assay.analysis``."""

from ._aggregate import DEFAULT_THRESHOLDS, DEFAULT_WEIGHTS, Dimensions
from ._spec import DaskExecutor  # (not from _dask: Dask's driver is loaded by a run that uses it)
from ._jury import Jury, make_jury
from ._run import NO_JUDGE, Evaluation, resolve_metrics

__all__ = ["DEFAULT_THRESHOLDS", "DEFAULT_WEIGHTS", "DaskExecutor", "Dimensions", "Evaluation", "Jury", "NO_JUDGE",
           "make_jury", "resolve_metrics"]
