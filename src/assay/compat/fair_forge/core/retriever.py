"""Fair Forge's data source (``fair_forge.core.retriever``)."""

from __future__ import annotations

import abc
from typing import Any

from ..schemas.common import Dataset


class Retriever(abc.ABC):
    """Loads the conversations to evaluate; ``Agentic.run`` passes its extra keyword arguments here."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    @abc.abstractmethod
    def load_dataset(self) -> list[Dataset]:
        """Every conversation to evaluate, one Dataset each."""


__all__ = ["Retriever"]
