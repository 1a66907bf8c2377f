"""assay: evaluate LLM agents with deterministic and LLM-as-judge metrics and honest statistics."""

__version__ = "0.1.0"
