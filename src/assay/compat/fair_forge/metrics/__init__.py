"""``fair_forge.metrics``: Agentic and BestOf are mirrored."""

from .agentic import Agentic
from .best_of import BestOf

__all__ = ["Agentic", "BestOf"]
