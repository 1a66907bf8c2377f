"""An in-process scripted Judge for metric unit tests: the test chooses every answer.

``ScriptedJudge(answer)``: *answer* is a dict (the verdict, validated against the request's
schema as the real parser would), a list of them (served in order), a callable
``answer(request) -> dict | Verdict``, or a ready Verdict. Every request is kept in ``requests``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pydantic

from assay.judge import JudgeRequest, Verdict, errored

Answer = dict[str, Any] | Verdict | Callable[[JudgeRequest], Any]


class ScriptedJudge:
    model = "scripted:test"

    def __init__(self, answer: Answer | list[Answer] | None = None, *, tokens: tuple[int, int] = (100, 20),
                 cost: float | None = 0.001) -> None:
        self.script = list(answer) if isinstance(answer, list) else None
        self.answer = None if isinstance(answer, list) else answer
        self.requests: list[JudgeRequest] = []
        self.tokens, self.cost = tokens, cost

    async def judge(self, request: JudgeRequest) -> Verdict:
        self.requests.append(request)
        answer = self.script.pop(0) if self.script else self.answer
        if callable(answer) and not isinstance(answer, Verdict):
            answer = answer(request)
        if isinstance(answer, Verdict):
            return answer
        if answer is None:
            return errored(self.model, "no scripted answer left")
        raw = json.dumps(answer)
        try:
            parsed = request.schema.model_validate(answer)
        except pydantic.ValidationError as exc:
            return errored(self.model, f"reply does not match {request.schema.__name__}: {exc}", raw=raw,
                           input_tokens=self.tokens[0], output_tokens=self.tokens[1], cost_usd=self.cost)
        return Verdict(parsed=parsed, raw=raw, model=self.model, input_tokens=self.tokens[0],
                       output_tokens=self.tokens[1], cost_usd=self.cost)

    # -- reading the requests --------------------------------------------------------------------
    def system(self, i: int = -1) -> str:
        return self.requests[i].messages[0]["content"]

    def user(self, i: int = -1) -> str:
        return self.requests[i].messages[1]["content"]

    def schemas(self) -> list[str]:
        return [r.schema.__name__ for r in self.requests]


def scale(score: int, evidence: list[str] | None = None, reasoning: str = "because", **extra: Any) -> dict:
    return {"evidence": evidence or [], "reasoning": reasoning, "score": score, **extra}


def label(verdict: str, evidence: list[str] | None = None, reasoning: str = "because") -> dict:
    return {"evidence": evidence or [], "reasoning": reasoning, "verdict": verdict}


def schema_options(request: JudgeRequest, field: str = "verdict") -> list[str]:
    """The enum of *field* in the order the schema presents it."""
    schema = request.schema.model_json_schema()
    node = schema["properties"][field]
    if "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return list(node["enum"])


def prompt_options(request: JudgeRequest) -> list[str]:
    """Option keys in the order the prompt lists them (``- key: meaning`` lines after "options:").

    Options follow the data in the user message (the system message is the static rubric).
    """
    user = request.messages[1]["content"]
    return re.findall(r"^- ([\w.]+)(?::|$)", user[user.rindex("options:\n"):], flags=re.MULTILINE)
