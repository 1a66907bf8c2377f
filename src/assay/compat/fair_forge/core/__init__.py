"""Fair Forge's core (``fair_forge.core``): the Retriever base class."""

from .retriever import Retriever

__all__ = ["Retriever"]
