"""assay: evaluate LLM agents with deterministic and LLM-as-judge metrics and honest statistics.

The facade re-exports the names most users need; everything else lives in the subpackages
(``assay.model``, ``assay.metrics``, ``assay.judge``, ``assay.stats``, ``assay.importers``).
Importing assay does no I/O and loads no SDK, numpy or template engine; the engine itself loads
on first use of ``evaluate``/``aevaluate``/``Evaluation``/``calibrate``.

``Warning`` (a result's warning code) is importable by name but not part of ``import *``, where
it would shadow the builtin; ``MetricWarning`` is the same enum.
"""

from .errors import AssayError, ConfigError, DataError, ProviderError
from .importers import load_traces, read_traces
from .metrics import DEFAULT_METRICS, Metric, MetricContext, Requirement, metric
from .model import Expected, JudgeCard, MetricResult, RunResult, ToolCall, Trace, TraceResult, Turn, Usage
from .model import Warning as Warning  # importable by name, kept out of __all__ (see above)
from .model import Warning as MetricWarning

from ._version import __version__

__all__ = [
    "AssayError", "ConfigError", "DEFAULT_METRICS", "DataError", "Evaluation", "Expected", "JudgeCard", "Metric",
    "MetricContext", "MetricResult", "MetricWarning", "ProviderError", "Requirement", "RunResult",
    "ToolCall", "Trace", "TraceResult", "Turn", "Usage", "__version__", "aevaluate", "calibrate", "collect", "evaluate", "load_traces",
    "metric", "read_traces", "register_tool",
]

_ENGINE = ("Evaluation", "aevaluate", "calibrate", "evaluate")


def __getattr__(name: str) -> object:
    """The engine (and asyncio under it, ~50 ms) loads on first use, not on ``import assay``."""
    if name in ("collect", "register_tool"):  # running agents on tasks (assay collect): loaded when first used
        from . import _collect

        return getattr(_collect, name)
    if name in _ENGINE:
        if name == "calibrate":
            from .analysis import calibrate

            return calibrate
        if name in ("evaluate", "aevaluate"):  # the session floor: config, outputs, the run store
            from . import session

            return getattr(session, name)
        from . import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'assay' has no attribute {name!r}")
