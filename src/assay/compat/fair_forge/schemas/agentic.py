"""Fair Forge's Agentic result models (``fair_forge.schemas.agentic``), with Fair Forge's fields."""

from __future__ import annotations

import pydantic


class ToolCorrectnessScore(pydantic.BaseModel):
    """Tool usage of one interaction (assay's ``agentic_tools.tool_correctness_score``)."""

    tool_selection_correct: float
    parameter_accuracy: float
    sequence_correct: float
    result_utilization: float | None
    """None when the data does not say whether the answer used the tool results (Fair Forge
    counts that as 0.0); the other weights are then renormalised."""
    overall_correctness: float
    is_correct: bool
    reasoning: str | None = None


class AgenticMetric(pydantic.BaseModel):
    """One conversation's Agentic result; ``*_ci_*`` are None in frequentist mode."""

    session_id: str
    assistant_id: str
    total_interactions: int
    correct_interactions: int
    is_fully_correct: bool
    threshold: float
    correctness_scores: list[float]
    correct_indices: list[int]
    tool_correctness_scores: list[ToolCorrectnessScore | None]
    k: int
    pass_at_k: float
    pass_at_k_ci_low: float | None = None
    pass_at_k_ci_high: float | None = None
    pass_pow_k: float
    pass_pow_k_ci_low: float | None = None
    pass_pow_k_ci_high: float | None = None


__all__ = ["AgenticMetric", "ToolCorrectnessScore"]
