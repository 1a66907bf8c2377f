"""Shared pieces of the judge tests (a module, not conftest, so tests can import it by name)."""

from __future__ import annotations

from typing import Any

import pydantic

from assay.judge import JudgeRequest


class Score(pydantic.BaseModel):
    score: float = pydantic.Field(ge=0, le=1)
    reason: str


GOOD = {"score": 0.75, "reason": "fine"}


def request(i: int = 0, *, repeat: int = 0, schema: type[pydantic.BaseModel] = Score, **kw: Any) -> JudgeRequest:
    messages = ({"role": "system", "content": "Score the answer."},
                {"role": "user", "content": f"question {i}: is this answer good?"})
    return JudgeRequest(messages=messages, schema=schema, key="test@1", repeat=repeat, **kw)


def backend_of(judge: Any) -> Any:
    """The backend under a composed judge's layers, however many the default stack has."""
    while hasattr(judge, "inner"):
        judge = judge.inner
    return judge
