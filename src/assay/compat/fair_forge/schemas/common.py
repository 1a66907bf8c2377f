"""Fair Forge's conversation data (``fair_forge.schemas.common``): one Dataset per conversation."""

from __future__ import annotations

from typing import Any

import pydantic


class Batch(pydantic.BaseModel):
    """One interaction: the user's query, the agent's answer, the reference, and tool usage.

    ``agentic``: ``{"tools_used": [{"tool_name", "parameters", "result", "step"}],
    "final_answer_uses_tools": bool}``; ``ground_truth_agentic``: ``{"expected_tools":
    [{"tool_name", "parameters", "step"}], "tool_sequence_matters": bool}``.
    """

    qa_id: str
    query: str
    assistant: str
    ground_truth_assistant: str
    observation: str | None = None
    agentic: dict[str, Any] | None = pydantic.Field(default_factory=dict)
    ground_truth_agentic: dict[str, Any] | None = pydantic.Field(default_factory=dict)
    logprobs: dict[str, Any] | None = pydantic.Field(default_factory=dict)
    weight: float | None = None


class Dataset(pydantic.BaseModel):
    """One complete conversation (session) between a user and an assistant."""

    session_id: str
    assistant_id: str
    language: str | None = "english"
    context: str
    conversation: list[Batch]


__all__ = ["Batch", "Dataset"]
