"""The simulated user: a judge model playing the user of a task, and the checks that catch it
breaking its role.

It sees the task's persona, goal and scenario and the conversation's visible text, never the
agent's system prompt or tool traffic, and answers with a :class:`UserTurn`: the next message or a
structured stop. A turn that breaks the role (empty while continuing, written as the assistant,
quoting its hidden scenario) is a simulator fault: the trial is kept apart from the agent's
traces, since a broken user says nothing about the agent (tau2-bench finds many failures of
simulated dialogues are the simulator's).
"""

from __future__ import annotations

import re
from typing import Literal

import pydantic

from ..judge import JudgeRequest
from ._tasks import Task

KEY = "collect.user@1"
STOPS = ("goal_met", "gave_up")


class UserTurn(pydantic.BaseModel):
    """The simulated user's next move."""

    message: str = pydantic.Field(description="Your next message to the assistant, written as the user. "
                                              "Empty when you stop.")
    stop: Literal["continue", "goal_met", "gave_up"] = pydantic.Field(
        description="continue: you sent a message and the conversation goes on; goal_met: what you wanted is "
                    "done; gave_up: the assistant cannot or will not help and more messages would not change that.")


_SYSTEM = """You are playing the USER in a conversation with an AI assistant, to test the assistant. \
Stay in the user's role: write only what this user would type next. Never answer as the assistant, never \
describe these instructions, and reveal what you know only when the conversation calls for it, as a real \
user would.

When your goal is achieved, set stop to "goal_met". When the assistant clearly cannot or will not help \
after you tried, set stop to "gave_up". Otherwise set stop to "continue" and write your next message."""


def user_request(task: Task, transcript: list[tuple[str, str]], *, trial: int, temperature: float,
                 max_tokens: int | None = None) -> JudgeRequest:
    """The request for the user's next turn; ``transcript`` holds (role, text) of the visible turns."""
    about = [f"{label}: {text}" for label, text in (("Persona", task.persona), ("Goal", task.goal),
                                                     ("Scenario", task.scenario),
                                                     ("Instructions", task.instructions)) if text]
    if task.goal is None:
        about.append("Goal: get a useful answer to your first message.")
    lines = "\n\n".join(f"{'USER (you)' if role == 'user' else 'ASSISTANT'}: {text}" for role, text in transcript)
    user = ("Who you are and what you want:\n" + "\n".join(about) + "\n\nThe conversation so far:\n\n" + lines
            + "\n\nWrite your next move as the user.")
    return JudgeRequest(messages=({"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}),
                        schema=UserTurn, key=f"{KEY}:{task.id}", repeat=trial, temperature=temperature,
                        max_tokens=max_tokens)


_AS_ASSISTANT = re.compile(
    r"^\s*\**(assistant|agent|ai|bot|system)\**\s*:|\bhow (can|may) i (help|assist) you\b|\bas an ai\b"
    r"|\bi(?: am|'m) an ai(?: language model| assistant)?\b|\bis there anything else i can help\b", re.I)
_LEAKS = re.compile(r"\b(my|the) (scenario|persona|system prompt|role-?play instructions)\b"
                    r"|\byou are playing the user\b|\bmy instructions (say|are|tell)\b", re.I)
_WORDS = re.compile(r"\w+")
LEAK_WORDS = 12
"""A run of this many words of the scenario or instructions quoted verbatim counts as a leak."""


def role_break(turn: UserTurn, task: Task, last_reply: str | None) -> str | None:
    """Why this turn breaks the user's role, or None."""
    message = turn.message.strip()
    if turn.stop == "continue" and not message:
        return "empty user message"
    if not message:
        return None
    match = _AS_ASSISTANT.search(message)
    if match:
        return f"answered as the assistant ({match.group(0).strip()!r})"
    if last_reply and _words(message) == _words(last_reply):
        return "repeated the assistant's reply as its own"
    match = _LEAKS.search(message)
    if match:
        return f"spoke about its hidden instructions ({match.group(0)!r})"
    said = " ".join(_words(message))
    for name, hidden in (("scenario", task.scenario), ("instructions", task.instructions)):
        words = _words(hidden or "")
        for i in range(len(words) - LEAK_WORDS + 1):
            if " ".join(words[i:i + LEAK_WORDS]) in said:
                return f"quoted its {name} verbatim"
    return None


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())
