"""Fair Forge's schemas (``fair_forge.schemas``)."""

from .agentic import AgenticMetric, ToolCorrectnessScore
from .common import Batch, Dataset

__all__ = ["AgenticMetric", "Batch", "Dataset", "ToolCorrectnessScore"]
