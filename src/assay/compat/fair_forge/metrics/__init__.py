"""``fair_forge.metrics``: only Agentic is mirrored."""

from .agentic import Agentic

__all__ = ["Agentic"]
