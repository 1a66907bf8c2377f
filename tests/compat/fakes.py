"""Stand-ins for the LangChain chat models of the seed 001 snippets (no LangChain needed).

``ChatGroq`` / ``ChatOpenAI`` take the real classes' constructor arguments and post each
``ainvoke`` to the scripted judge server named by ASSAY_TEST_CHAT_URL (the ``chat_url`` fixture
sets it), like a real OpenAI-compatible chat model; they have no structured output, so the judge
asks for JSON in the prompt. ``ScriptedChatModel`` answers in-process and has
``with_structured_output``, as most LangChain models do.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class AIMessage:
    content: Any
    usage_metadata: dict[str, int] = field(default_factory=lambda: {"input_tokens": 10, "output_tokens": 5})


def _dicts(messages: Any) -> list[dict[str, str]]:
    return [m if isinstance(m, dict) else {"role": getattr(m, "type", "user"), "content": m.content} for m in messages]


class ChatGroq:
    """Fake of langchain_groq.ChatGroq: same constructor, replies from the scripted server."""

    def __init__(self, model: str, api_key: str | None = None, temperature: float = 0.0, **kwargs: Any) -> None:
        self.model_name, self.api_key, self.temperature = model, api_key, temperature
        self.url = os.environ["ASSAY_TEST_CHAT_URL"]

    async def ainvoke(self, messages: Any, **kwargs: Any) -> AIMessage:
        body = json.dumps({"model": self.model_name, "messages": _dicts(messages),
                           "temperature": self.temperature}).encode()

        def post() -> dict[str, Any]:
            req = urllib.request.Request(f"{self.url}/chat/completions", body, {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.load(r)

        reply = await asyncio.to_thread(post)
        usage = reply.get("usage") or {}
        return AIMessage(reply["choices"][0]["message"]["content"],
                         {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0)})


ChatOpenAI = ChatGroq


class ScriptedChatModel:
    """In-process chat model: ``answer(messages) -> dict`` decides every reply.

    With ``with_structured_output`` (LangChain's contract, include_raw or not); ``wrap`` puts the
    plain-text reply between markers, like a model following a prompt's JSON clauses.
    """

    model_name = "scripted-chat"

    def __init__(self, answer: Callable[[list[dict[str, str]]], Any], *, structured: bool = True,
                 wrap: tuple[str, str] | None = None) -> None:
        self.answer, self.wrap = answer, wrap
        self.calls: list[list[dict[str, str]]] = []
        self.structured_calls = 0
        if not structured:
            self.with_structured_output = None  # type: ignore[assignment]

    def with_structured_output(self, schema: Any, include_raw: bool = False) -> Any:
        model = self

        class Runnable:
            async def ainvoke(self, messages: Any, **kwargs: Any) -> Any:
                model.structured_calls += 1
                data = model._reply(messages)
                parsed = schema.model_validate(data) if isinstance(data, dict) else None
                msg = AIMessage(json.dumps(data))
                return {"raw": msg, "parsed": parsed, "parsing_error": None} if include_raw else parsed

        return Runnable()

    def _reply(self, messages: Any) -> Any:
        msgs = _dicts(messages)
        self.calls.append(msgs)
        return self.answer(msgs)

    async def ainvoke(self, messages: Any, **kwargs: Any) -> AIMessage:
        data = self._reply(messages)
        text = data if isinstance(data, str) else json.dumps(data)
        if self.wrap:
            text = f"Here is my verdict:\n{self.wrap[0]}\n{text}\n{self.wrap[1]}\nThanks."
        return AIMessage(text)
