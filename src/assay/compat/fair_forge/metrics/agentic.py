"""``fair_forge.metrics.agentic``: the Agentic metric and the standalone pass@k helpers."""

from ....stats import pass_at_k, pass_pow_k
from .._agentic import Agentic, AgenticJudgeError
from ..schemas.agentic import AgenticMetric, ToolCorrectnessScore

__all__ = ["Agentic", "AgenticJudgeError", "AgenticMetric", "ToolCorrectnessScore", "pass_at_k", "pass_pow_k"]
