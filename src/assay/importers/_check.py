"""Never silently wrong: after a trace is read, flag turns whose text still looks unread.

A reader that meets a payload shape it does not know keeps the payload as text, and a trace
whose question is a whole request JSON, a Python repr or the system prompt scores as nonsense
without anyone being told. ``unparsed(trace)`` names each such field (``turns[0].input``) and
why; the registry yields one ``ReadingWarning`` per trace for them, which ``assay validate``
prints and a run keeps in ``input_issues``.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import Trace
from ._common import maybe_json
from ._payload import _transcript, is_anthropic_message, is_chat_completion, is_gemini, looks_like_repr

_ROLES = {"system", "developer", "user", "assistant", "tool", "model", "function", "human", "ai"}


def payload_shape(value: Any) -> str | None:
    """The name of the request/response shape a decoded JSON value has, or None."""
    if isinstance(value, list):
        if value and all(isinstance(m, dict) and m.get("role") in _ROLES for m in value):
            return "a list of chat messages"
        return None
    if not isinstance(value, dict):
        return None
    if is_chat_completion(value) or isinstance(value.get("choices"), list):
        return "a chat.completion response"
    if is_anthropic_message(value):
        return "an Anthropic message"
    if is_gemini(value):
        return "a Gemini request or response"
    if isinstance(value.get("messages"), list):
        return "a request with 'messages'"
    if isinstance(value.get("parts"), list) and "role" in value:
        return "a Gemini content object"
    if "role" in value and ("content" in value or "tool_calls" in value):
        return "a chat message object"
    if isinstance(value.get("args"), list) and isinstance(value.get("kwargs"), dict):
        return "a call's {args, kwargs}"
    if "prompt" in value and isinstance(value["prompt"], (list, str)) and len(value) <= 4:
        return "a {prompt} request"
    if isinstance(value.get("message"), dict) and ("finish_reason" in value or "index" in value):
        return "a choice object"
    return None


_SUSPECT = re.compile(r"\s*(?:[\[{]|[A-Z]\w*\(|role=|(?:system|developer|user|assistant|tool|human|ai):)")
"""How every text that one of ``why_unparsed``'s tests can flag opens (after white space): a JSON or repr
bracket, ``Name(`` (an object repr), ``role=`` (a pydantic repr) or ``role:`` (a flattened transcript).
Most texts match none, and this one test clears them."""


def why_unparsed(text: Any) -> str | None:
    """Why a turn's text looks like an unparsed payload, or None when it reads as text."""
    if not isinstance(text, str) or _SUSPECT.match(text) is None:
        return None
    return why_unparsed_ungated(text)


def why_unparsed_ungated(text: str) -> str | None:
    """:func:`why_unparsed`'s three tests on every text, without its one-regex gate (``_SUSPECT``)
    that clears plain text: what the gate's tests compare it against."""
    s = text.strip()
    if s[:1] in ("{", "["):
        shape = payload_shape(maybe_json(s))
        if shape is not None:
            return f"looks like an unparsed payload ({shape} as JSON text)"
    if looks_like_repr(s):
        return "looks like a Python repr of objects, not text"
    flat = _transcript(s)
    if flat and {m["role"] for m in flat} & {"system", "assistant", "tool"}:
        return "looks like a whole conversation flattened to 'role: text' lines"
    return None


def unparsed(trace: Trace) -> list[tuple[str, str]]:
    """(field, why) for each turn text of ``trace`` that looks unread."""
    found: list[tuple[str, str]] = []
    turns = trace.turns
    if not trace.agents and not trace.system and len(turns) == 1:  # the usual trace: one turn, nothing else to walk
        suspect = _SUSPECT.match
        turn = turns[0]
        text, out = turn.input, turn.output
        if isinstance(text, str) and suspect(text) is not None and (why := why_unparsed(text)) is not None:
            found.append(("turns[0].input", why))
        if isinstance(out, str) and suspect(out) is not None and (why := why_unparsed(out)) is not None:
            found.append(("turns[0].output", why))
        return found
    system = (trace.system or "").strip()
    long_system = len(system) > 40
    threads = [("turns", trace.turns)]
    if trace.agents:
        threads += [(f"agents.{name}.turns", a.turns) for name, a in trace.agents.items()]
    suspect = _SUSPECT.match  # the test why_unparsed opens with, here so that a plain text costs one call
    for prefix, turns in threads:
        for i, turn in enumerate(turns):
            text, out = turn.input, turn.output
            if isinstance(text, str) and suspect(text) is not None and (why := why_unparsed(text)) is not None:
                found.append((f"{prefix}[{i}].input", why))
            if isinstance(out, str) and suspect(out) is not None and (why := why_unparsed(out)) is not None:
                found.append((f"{prefix}[{i}].output", why))
            if long_system and isinstance(text, str):
                text = text.strip()
                if text and (text == system or text.startswith(system[:200])):
                    found.append((f"{prefix}[{i}].input", "is the system prompt, not the user's question"))
    return found
