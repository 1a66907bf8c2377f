"""Chat messages -> assay turns: the one state machine every chat-shaped reader feeds.

``TurnBuilder`` holds the rules; each reader (assay's own ``messages``, the OpenAI / Anthropic /
Responses / Inspect importers, LangChain, UAEF) only translates its spelling of a message into
calls on it. A user message opens a turn; assistant text becomes the turn's output (several
assistant messages in one turn are joined), its reasoning the turn's reasoning; tool calls join
the open turn and tool results find their call by id (or, where a producer has no ids, by name
or by position). The system prompt is kept apart.

Errors are raised through ``error(detail, field)`` so that each caller gets its own exception
type: the trace model a ValueError (``messages[3].tool_call_id: ...``), importers a DataError.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ._limits import RecordError, loads

_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "integer", float: "number", bool: "boolean",
               type(None): "null"}
_UNSET: Any = object()


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type, for messages about JSON input."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def maybe_json(value: Any) -> Any:
    """A string holding a JSON object or array, decoded; anything else unchanged."""
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("{", "[") and s[-1:] in ("}", "]"):
            try:
                return loads(s)
            except ValueError:  # not JSON, or over a limit: kept as the string it is
                pass
    return value


def _value_error(detail: str, field: str | None) -> Exception:
    return ValueError(f"{field}: {detail}" if field else detail)


class TurnBuilder:
    """Turns built one message at a time; ``finish()`` returns ``(system prompt, turns)``.

    ``calls_word`` names the calls in the message for a result whose id matches none
    (``no earlier tool call has id 'x'``). With ``lenient`` such a result is kept in
    ``orphans`` instead (Inspect AI, for one, writes and reads logs holding them).
    """

    def __init__(self, *, agent: str | None = None, calls_word: str = "tool call", lenient: bool = False,
                 error: Callable[[str, str | None], Exception] = _value_error) -> None:
        self.turns: list[dict[str, Any]] = []
        self.orphans: list[dict[str, Any]] = []
        """Results no call could take: ``{"tool_call_id", "result" | "error"}`` (lenient only)."""
        self.strays: list[Any] = []
        """Results given by position (``positional``) that found no open call in their turn."""
        self.current: dict[str, Any] | None = None
        self._system: list[str] = []
        self._by_id: dict[str, dict[str, Any]] = {}
        self._positional: list[tuple[int, Any]] = []
        self._agent, self._word, self._lenient, self._error = agent, calls_word, lenient, error

    def system(self, text: str | None) -> None:
        if text:
            self._system.append(text)

    def user(self, text: str | None) -> dict[str, Any]:
        """Open a turn with this input."""
        turn: dict[str, Any] = {"input": text, "tool_calls": []}
        if self._agent is not None:
            turn["agent"] = self._agent
        self.turns.append(turn)
        self.current = turn
        return turn

    def assistant(self, text: str | None = None, *, reasoning: str | None = None,
                  calls: list[dict[str, Any]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
        """Add to the open turn (opening one without input if none is): output, reasoning, tool calls."""
        turn = self.current if self.current is not None else self.user(None)
        if text:
            turn["output"] = text if turn.get("output") is None else turn["output"] + "\n" + text
        if reasoning:
            turn["reasoning"] = reasoning if not turn.get("reasoning") else turn["reasoning"] + "\n" + reasoning
        for call in calls:
            self.call(call, turn)
        return turn

    def call(self, call: dict[str, Any], turn: dict[str, Any] | None = None) -> None:
        """One tool call into ``turn`` (default: the open one), findable by its id."""
        turn = turn if turn is not None else (self.current if self.current is not None else self.user(None))
        turn["tool_calls"].append(call)
        if call.get("id"):
            self._by_id[str(call["id"])] = call

    def find(self, call_id: Any, where: str | None) -> dict[str, Any] | None:
        """The call with this id; an error naming ``where`` when there is none (None when lenient)."""
        target = self._by_id.get(str(call_id)) if call_id is not None else None
        if target is None and not self._lenient:
            raise self._error(f"no earlier {self._word} has id {call_id!r}", where)
        return target

    def named(self, name: Any) -> dict[str, Any] | None:
        """The latest call of the open turn with this name that has no result yet (legacy ``function`` role)."""
        if self.current is None:
            return None
        return next((c for c in reversed(self.current["tool_calls"])
                     if c.get("name") == name and "result" not in c and "error" not in c), None)

    def answer(self, target: dict[str, Any] | None, call_id: Any, *, result: Any = _UNSET,
               error: str | None = None) -> None:
        """Give ``target`` its result and/or error; with no target (lenient), keep them as an orphan."""
        if target is None:
            orphan: dict[str, Any] = {"tool_call_id": call_id}
            if error:
                orphan["error"] = error
            if result is not _UNSET:
                orphan["result"] = result
            self.orphans.append(orphan)
            return
        if error:
            target["error"] = error
        if result is not _UNSET:
            target["result"] = result

    def positional(self, result: Any) -> None:
        """A result without an id: the first call of its turn still without one takes it at ``finish``."""
        self._positional.append((len(self.turns) - 1, result))

    def finish(self) -> tuple[str | None, list[dict[str, Any]]]:
        for index, result in self._positional:
            pending = [c for c in (self.turns[index]["tool_calls"] if index >= 0 else []) if c.get("result") is None]
            if pending:
                pending[0]["result"] = maybe_json(result)
            else:
                self.strays.append(result)
        self._positional = []
        return ("\n\n".join(self._system) if self._system else None), self.turns


# ---------------------------------------------------------------- assay's own ``messages``

def _text(content: Any, where: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text")]
        return "\n".join(parts)
    raise ValueError(f"{where}.content: expected a string or a list of content parts, got {json_type(content)}")


def messages_to_turns(messages: Any) -> tuple[str | None, list[dict[str, Any]]]:
    """OpenAI-style ``messages`` of a native trace as ``(system, turns)``; ValueError names the message."""
    if not isinstance(messages, list):
        raise ValueError(f"messages: expected an array, got {json_type(messages)}")
    b = TurnBuilder(calls_word="assistant tool call")
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(msg, dict):
            raise ValueError(f"{where}: expected an object, got {json_type(msg)}")
        role = msg.get("role")
        content = _text(msg.get("content"), where)
        if role in ("system", "developer"):
            b.system(content)
        elif role == "user":
            b.user(content)
        elif role == "assistant":
            b.assistant(content, calls=[_tool_call(call, f"{where}.tool_calls[{j}]")
                                        for j, call in enumerate(msg.get("tool_calls") or [])])
        elif role in ("tool", "function"):
            call_id = msg.get("tool_call_id")
            target = None
            if call_id is None and role == "function" and b.current and b.current["tool_calls"]:
                target = b.current["tool_calls"][-1]
            b.answer(target or b.find(call_id, f"{where}.tool_call_id"), call_id, result=maybe_json(content))
        else:
            raise ValueError(f"{where}.role: expected one of 'system', 'user', 'assistant', 'tool', got {role!r}")
    return b.finish()


def _tool_call(call: Any, where: str) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise ValueError(f"{where}: expected an object, got {json_type(call)}")
    fn = call.get("function", call)
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise ValueError(f"{where}.function.name: expected a string")
    args = fn.get("arguments", {})
    if isinstance(args, str):
        try:
            args = loads(args) if args.strip() else {}
        except RecordError as exc:
            raise ValueError(f"{where}.function.arguments: {exc.message}") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}.function.arguments: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(args, dict):
        raise ValueError(f"{where}.function.arguments: expected an object, got {json_type(args)}")
    out: dict[str, Any] = {"name": fn["name"], "arguments": args}
    if call.get("id") is not None:
        out["id"] = str(call["id"])
    return out
