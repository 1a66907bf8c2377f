"""assay: evaluate LLM agents with deterministic and LLM-as-judge metrics and honest statistics.

The facade re-exports the names most users need; everything else lives in the subpackages
(``assay.model``, ``assay.metrics``, ``assay.judge``, ``assay.stats``, ``assay.importers``).
Importing assay does no I/O and loads no SDK, numpy or template engine.
"""

from .engine import Evaluation, aevaluate, evaluate
from .errors import AssayError, ConfigError, DataError, MetricError, ProviderError
from .importers import load_traces, read_traces
from .metrics import REGISTRY, Metric, MetricContext, Requirement, metric
from .model import MetricResult, RunResult, ToolCall, Trace, TraceResult, Turn, Warning

from ._version import __version__

__all__ = [
    "AssayError", "ConfigError", "DataError", "Evaluation", "Metric", "MetricContext", "MetricError",
    "MetricResult", "ProviderError", "REGISTRY", "Requirement", "RunResult", "ToolCall", "Trace", "TraceResult",
    "Turn", "Warning", "__version__", "aevaluate", "evaluate", "load_traces", "metric", "read_traces",
]
