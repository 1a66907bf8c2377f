"""LangChain chat messages as JSON: one conversation per line, or an array of conversations.

A conversation is a list of messages or an object with ``messages`` (a LangGraph state). Three
message spellings are read: ``message.model_dump()`` (``{"type": "human", "content": ...}``),
``messages_to_dict`` (``{"type": "human", "data": {...}}``) and ``dumpd`` / ``dumps``
(``{"lc": 1, "type": "constructor", "id": [..., "HumanMessage"], "kwargs": {...}}``).
A file that is a single JSON array of messages is one conversation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError
from ..model import Trace
from ..model._messages import TurnBuilder
from ._common import (
    Record, arguments, build_trace, join, maybe_json, obj, prefixed, read_conversations, text, wrong,
)
from ._registry import Importer, register_importer
from ._sniff import inspect

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "function",
          "chat": "chat"}
_CLASSES = {"HumanMessage": "human", "AIMessage": "ai", "SystemMessage": "system", "ToolMessage": "tool",
            "FunctionMessage": "function", "ChatMessage": "chat"}


def messages_to_trace(conversation: Any, *, default_id: str | None = None) -> Trace:
    """A LangChain conversation (a list of messages, message objects, or ``{"messages": [...]}``) as a Trace."""
    if isinstance(conversation, list):
        conversation = [m.model_dump() if hasattr(m, "model_dump") else m for m in conversation]
    return _conversation(conversation, "", default_id)


def _conversation(value: Any, path: str, fallback_id: str | None) -> Trace:
    meta: dict[str, Any] = {}
    trace_id = fallback_id
    if isinstance(value, dict) and not _is_message(value):
        if "messages" not in value:
            raise DataError("expected a list of messages or an object with 'messages'", field=path or None)
        if value.get("id") is not None:
            trace_id = str(value["id"])
        meta = {k: v for k, v in value.items() if k not in ("messages", "id")}
        messages = value["messages"]
        path = join(path, "messages")
    else:
        messages = value if isinstance(value, list) else [value]
    if not isinstance(messages, list):
        raise wrong(path, "an array of messages", messages)
    if trace_id is None:
        raise DataError("a conversation needs an 'id' (or pass default_id)", field=path or None)
    data = _turns(messages, path)
    data["id"] = trace_id
    data.setdefault("metadata", {}).update(meta)
    try:
        return build_trace(data)
    except DataError as exc:
        raise DataError(exc.detail, field=prefixed(path, exc.field)) from None


def _unwrap(m: Any, path: str) -> tuple[str, dict[str, Any]]:
    """(LangChain type, fields) of one message in any of the three spellings."""
    m = obj(m, path, "a LangChain message object")
    if m.get("lc") == 1 and m.get("type") == "constructor":
        ids = m.get("id")
        cls = str(ids[-1]) if isinstance(ids, list) and ids else ""
        kind = _CLASSES.get(cls.removesuffix("Chunk"))
        if kind is None:
            raise DataError(f"not a LangChain message class: {cls!r}", field=join(path, "id"))
        return kind, obj(m.get("kwargs", {}), join(path, "kwargs"))
    kind = m.get("type")
    if isinstance(m.get("data"), dict) and "content" not in m:
        m = m["data"]
    if isinstance(kind, str) and kind.endswith("MessageChunk"):
        kind = _CLASSES.get(kind.removesuffix("Chunk"), kind)
    if not isinstance(kind, str) or kind not in _ROLES:
        raise DataError(f"expected one of {', '.join(map(repr, _ROLES))}, got {kind!r}", field=join(path, "type"))
    return kind, m


def _content(value: Any, path: str) -> tuple[str | None, str | None, list[dict[str, Any]]]:
    """(text, reasoning, tool_use blocks) of a message's content."""
    if value is None or isinstance(value, str):
        return value, None, []
    if not isinstance(value, list):
        raise wrong(path, "a string or a list of content blocks", value)
    texts, thoughts, uses = [], [], []
    for block in value:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict):
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind in ("thinking", "reasoning"):
                thought = block.get("thinking") or block.get("reasoning") or block.get("text")
                if isinstance(thought, str):
                    thoughts.append(thought)
                for s in block.get("summary") or []:
                    if isinstance(s, dict) and isinstance(s.get("text"), str):
                        thoughts.append(s["text"])
            elif kind == "tool_use":
                uses.append(block)
    return "\n".join(texts), ("\n".join(thoughts) or None), uses


def _turns(messages: list[Any], path: str) -> dict[str, Any]:
    b = TurnBuilder(calls_word="AI tool call", error=lambda detail, field: DataError(detail, field=field))
    models: list[str] = []
    for i, raw in enumerate(messages):
        mpath = join(path, i)
        kind, m = _unwrap(raw, mpath)
        role: str | None = _ROLES[kind]
        if role == "chat":
            chat_role = m.get("role")
            role = {"human": "user", "ai": "assistant"}.get(chat_role, chat_role) if isinstance(chat_role, str) else None
        body, reasoning, uses = _content(m.get("content"), join(mpath, "content"))
        if role == "system":
            b.system(body)
        elif role == "user":
            b.user(body)
        elif role == "assistant":
            extra = _dict(m.get("additional_kwargs")).get("reasoning_content")
            reasoning = "\n".join(r for r in (reasoning, extra if isinstance(extra, str) else None) if r) or None
            turn = b.assistant(body, reasoning=reasoning, calls=_calls(m, mpath, uses))
            _add_usage(turn, m.get("usage_metadata"), join(mpath, "usage_metadata"))
            meta = _dict(m.get("response_metadata"))
            model = meta.get("model_name") or meta.get("model")
            if isinstance(model, str) and model not in models:
                models.append(model)
        elif role in ("tool", "function"):
            call_id = m.get("tool_call_id")
            if call_id is not None:
                target = b.find(call_id, join(mpath, "tool_call_id"))
            else:  # FunctionMessage: the latest unanswered call of that name
                target = b.named(m.get("name"))
                if target is None:
                    b.find(None, join(mpath, "tool_call_id"))
            if m.get("status") == "error":
                b.answer(target, call_id, error=body or "error")
            else:
                b.answer(target, call_id, result=maybe_json(body))
        else:
            raise DataError(f"unknown chat role {role!r}", field=join(mpath, "role"))
    system, turns = b.finish()
    data: dict[str, Any] = {"turns": turns, "metadata": {}}
    if system:
        data["system"] = system
    if models:
        data["metadata"]["models"] = models
    return data


def _calls(m: dict[str, Any], path: str, uses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for j, c in enumerate(_list(m.get("tool_calls"), join(path, "tool_calls"))):
        cpath = join(join(path, "tool_calls"), j)
        c = obj(c, cpath)
        calls.append({"name": text(c, cpath, "name", required=True), "arguments": arguments(c.get("args"), join(cpath, "args")),
                      "id": text(c, cpath, "id")})
    if not calls:  # older messages keep the provider's tool calls in additional_kwargs
        for j, c in enumerate(_list(_dict(m.get("additional_kwargs")).get("tool_calls"),
                                    join(path, "additional_kwargs.tool_calls"))):
            cpath = join(join(path, "additional_kwargs.tool_calls"), j)
            fn = obj(obj(c, cpath).get("function"), join(cpath, "function"))
            calls.append({"name": text(fn, join(cpath, "function"), "name", required=True),
                          "arguments": arguments(fn.get("arguments"), join(cpath, "function.arguments")),
                          "id": text(c, cpath, "id")})
    if not calls:
        for block in uses:
            calls.append({"name": str(block.get("name", "")), "arguments": arguments(block.get("input"), join(path, "content")),
                          "id": block.get("id")})
    for j, c in enumerate(_list(m.get("invalid_tool_calls"), join(path, "invalid_tool_calls"))):
        cpath = join(join(path, "invalid_tool_calls"), j)
        c = obj(c, cpath)
        calls.append({"name": c.get("name") or "", "id": c.get("id"),
                      "error": f"invalid tool call: {c.get('error') or 'arguments not parsed'} (args {c.get('args')!r})"})
    return calls


def _add_usage(turn: dict[str, Any], um: Any, path: str) -> None:
    if not isinstance(um, dict):
        return
    u = turn.setdefault("usage", {})
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        v = um.get(key)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, int):
                raise wrong(join(path, key), "an integer", v)
            u[key] = u.get(key, 0) + v


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise wrong(path, "an array", value)
    return value


def _is_message(m: Any) -> bool:
    if not isinstance(m, dict):
        return False
    if m.get("lc") == 1 and m.get("type") == "constructor":
        ids = m.get("id")
        return isinstance(ids, list) and bool(ids) and str(ids[-1]).removesuffix("Chunk") in _CLASSES
    kind = m.get("type")
    if not isinstance(kind, str):
        return False
    return (kind in _ROLES or kind.removesuffix("Chunk") in _CLASSES) and (
        "content" in m or isinstance(m.get("data"), dict))


def _convert(value: Any, fallback_id: str) -> Iterator[Trace]:
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        for i, conv in enumerate(value):  # a line holding several conversations
            yield _conversation(conv, f"[{i}]", f"{fallback_id}.{i + 1}")
    else:
        yield _conversation(value, "", fallback_id)


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    """Every conversation of the file; a file that is one array of messages is one conversation."""
    return read_conversations(stream, source, _convert, _is_message)


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    rec = h.record
    if isinstance(rec, list):
        rec = rec[0] if rec else None
        if isinstance(rec, list):
            rec = rec[0] if rec else None
    if isinstance(rec, dict):
        if _is_message(rec):
            return True
        msgs = rec.get("messages")
        return isinstance(msgs, list) and bool(msgs) and _is_message(msgs[0]) and not sniff_native_like(rec)
    if h.complete:
        return False
    keys = h.keys
    lc_text = h.has('"lc": 1') or h.has('"lc":1') or any(h.has(f'"type": "{t}"') or h.has(f'"type":"{t}"')
                                                         for t in ("human", "ai"))
    return ("messages" in keys or {"type", "content"} <= keys or {"lc", "kwargs"} <= keys) and lc_text


def sniff_native_like(rec: dict[str, Any]) -> bool:
    """An OpenAI-style trace ('role' messages) is the native format's, not ours."""
    first = rec["messages"][0]
    return isinstance(first, dict) and "role" in first and "type" not in first


register_importer(Importer("langchain", "LangChain message lists (model_dump, messages_to_dict or dumpd forms)", read, sniff))

__all__ = ["messages_to_trace"]
