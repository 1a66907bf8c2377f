"""Fair Forge's Agentic API (alquimia-fair-forge 3.0.0) over assay's core.

Fair Forge's documentation snippets run with ``fair_forge`` replaced by ``assay.compat.fair_forge`` in their
imports; the module paths are mirrored (``.metrics.agentic``, ``.statistical``,
``.core.retriever``, ``.schemas.common``). Scoring is the core metric ``agentic_correctness``
(see docs/metrics.md); see :class:`Agentic` for what differs from Fair Forge.
"""

from ...stats import pass_at_k, pass_pow_k
from ._agentic import Agentic, AgenticJudgeError
from .core.retriever import Retriever
from .schemas.agentic import AgenticMetric, ToolCorrectnessScore
from .schemas.common import Batch, Dataset
from .statistical import BayesianMode, FrequentistMode, StatisticalMode

__all__ = [
    "Agentic", "AgenticJudgeError", "AgenticMetric", "Batch", "BayesianMode", "Dataset", "FrequentistMode",
    "Retriever", "StatisticalMode", "ToolCorrectnessScore", "pass_at_k", "pass_pow_k",
]
