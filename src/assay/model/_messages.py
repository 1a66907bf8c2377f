"""OpenAI chat ``messages`` -> assay turns.

A user message opens a turn; assistant text becomes the turn's output (several assistant
messages in one turn are joined); assistant ``tool_calls`` (JSON-string arguments) become the
turn's tool calls; ``tool`` messages fill in results by ``tool_call_id``. The system prompt is
returned separately. Errors are ValueErrors whose text starts with the message path so that
the reader can report ``messages[3].tool_calls[0].function.arguments: ...``.
"""

from __future__ import annotations

import json
from typing import Any

from ._limits import RecordError, loads


_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "integer", float: "number", bool: "boolean",
               type(None): "null"}


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type, for messages about JSON input."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _text(content: Any, where: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text")]
        return "\n".join(parts)
    raise ValueError(f"{where}.content: expected a string or a list of content parts, got {json_type(content)}")


def messages_to_turns(messages: Any) -> tuple[str | None, list[dict[str, Any]]]:
    if not isinstance(messages, list):
        raise ValueError(f"messages: expected an array, got {json_type(messages)}")
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    by_call_id: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None

    def open_turn(user_input: str | None) -> dict[str, Any]:
        turn: dict[str, Any] = {"input": user_input, "output": None, "tool_calls": []}
        turns.append(turn)
        return turn

    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(msg, dict):
            raise ValueError(f"{where}: expected an object, got {json_type(msg)}")
        role = msg.get("role")
        content = _text(msg.get("content"), where)
        if role in ("system", "developer"):
            if content:
                system.append(content)
        elif role == "user":
            current = open_turn(content)
        elif role == "assistant":
            if current is None:
                current = open_turn(None)
            if content:
                current["output"] = content if current["output"] is None else current["output"] + "\n" + content
            for j, call in enumerate(msg.get("tool_calls") or []):
                tc = _tool_call(call, f"{where}.tool_calls[{j}]")
                current["tool_calls"].append(tc)
                if tc.get("id"):
                    by_call_id[tc["id"]] = tc
        elif role in ("tool", "function"):
            call_id = msg.get("tool_call_id")
            target = by_call_id.get(call_id) if call_id is not None else None
            if target is None and role == "function" and current and current["tool_calls"]:
                target = current["tool_calls"][-1]
            if target is None:
                raise ValueError(f"{where}.tool_call_id: no earlier assistant tool call has id {call_id!r}")
            target["result"] = _maybe_json(content)
        else:
            raise ValueError(f"{where}.role: expected one of 'system', 'user', 'assistant', 'tool', got {role!r}")
    return ("\n\n".join(system) if system else None), turns


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


def _maybe_json(content: str | None) -> Any:
    if content is None:
        return None
    s = content.strip()
    if s[:1] in ("{", "["):
        try:
            return loads(s)
        except ValueError:  # not JSON, or over a limit: kept as the text it is
            pass
    return content
