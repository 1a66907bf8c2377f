"""Fair Forge's BestOf result models (``fair_forge.schemas.best_of``)."""

from __future__ import annotations

from typing import Any

import pydantic


class BestOfContest(pydantic.BaseModel):
    """One contest of the knockout bracket: left against right, and who won."""

    round: int
    left_id: str
    right_id: str
    winner_id: str
    """The winning assistant's id, or "tie"."""
    confidence: float | None = None
    """assay: the winner's share of the contest's conversations (a tie counts half); Fair Forge: the
    judge's own confidence."""
    verdict: str | None = None
    reasoning: dict[str, Any] | None = None
    """assay: the record (wins, ties, losses, win rate, position inconsistency) and the judge's
    reasons per conversation."""
    thinkings: str | None = None


class BestOfMetric(pydantic.BaseModel):
    """The tournament's result: the final winner (or "tie") and every contest that led to it."""

    session_id: str
    assistant_id: str
    qa_id: str
    bestof_winner_id: str
    bestof_contests: list[BestOfContest]


__all__ = ["BestOfContest", "BestOfMetric"]
