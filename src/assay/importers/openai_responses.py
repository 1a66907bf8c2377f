"""OpenAI Responses API data: response objects, their ``input`` / ``output`` items, request logs.

Shapes read: a response object (``{"object": "response", "instructions", "output": [...],
"usage"}``, with the request's ``input`` beside it when logged), ``{"request", "response"}``
logs (request ``input`` + ``instructions``, then the response's ``output``), and a list of items
per line or one file that is an array of items (one conversation).

Items become chat messages for the shared builder: ``message`` items by role (``input_text`` /
``output_text`` parts), ``function_call`` (``call_id``, ``name``, JSON ``arguments``) a tool call
answered by the ``function_call_output`` with the same ``call_id``; ``custom_tool_call``,
``computer_call``, ``local_shell_call``, ``shell_call`` and ``apply_patch_call`` likewise with
their ``*_output``. The calls the API runs itself carry their outcome: ``mcp_call`` (``output`` or
``error``; its name joins ``metadata.mcp_tools`` so the MCP metrics see it), ``web_search_call``,
``file_search_call``, ``code_interpreter_call`` (the logs of its ``outputs``) and
``image_generation_call`` (a placeholder for the image). ``reasoning`` summaries are the turn's
reasoning. ``mcp_list_tools`` (server -> tools), ``mcp_approval_request`` / ``_response`` go to
metadata; an item type newer than this reader is kept in ``metadata.other_items`` with one
warning, never a rejected record.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError, InputWarning
from ..model import Trace
from ._chat import build_turns, responses, usage_of
from ._common import Record, arguments, build_trace, join, number, obj, read_conversations, text
from ._errors import json_type
from ._payload import is_anthropic_message
from ._registry import Importer, register_importer
from ._sniff import inspect

_CALLS = {"function_call", "custom_tool_call", "mcp_call", "web_search_call", "file_search_call", "computer_call",
          "code_interpreter_call", "image_generation_call", "local_shell_call", "shell_call", "apply_patch_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "computer_call_output", "local_shell_call_output",
            "shell_call_output", "apply_patch_call_output"}
_SERVER = {"mcp_call", "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call"}
"""Calls the API runs itself: their status is the call's outcome."""
_KEPT = {"mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "compaction"}
"""Items that are no message and no call: kept in the trace's metadata under their type."""
ITEM_TYPES = frozenset({"message", "reasoning", "item_reference", *_CALLS, *_OUTPUTS, *_KEPT})
_WARNED: set[str] = set()


def _messages(item: Any, path: str, meta: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The chat message(s) one item stands for; what is no message goes to ``meta``."""
    it = obj(item, path, "an item object")
    kind = it.get("type", "message" if "role" in it else None)
    if kind == "message":
        yield path, {"role": it.get("role"), "content": it.get("content")}
    elif kind in _CALLS:
        yield from _call_item(kind, it, path, meta)
    elif kind in _OUTPUTS:
        out = it.get("output")
        if kind == "shell_call_output" and isinstance(out, list):  # [{stdout, stderr, outcome}] per command
            out = [{k: v for k, v in o.items() if v not in (None, "")} if isinstance(o, dict) else o for o in out]
        yield path, {"role": "tool", "tool_call_id": it.get("call_id", it.get("id")), "content": _output_text(out)}
    elif kind == "reasoning":
        texts = [s.get("text") for s in (it.get("summary") or []) + (it.get("content") or [])
                 if isinstance(s, dict) and isinstance(s.get("text"), str)]
        if texts:
            yield path, {"role": "assistant", "reasoning_content": "\n".join(texts)}
    elif kind == "item_reference":
        return
    elif kind == "mcp_list_tools":
        tools = [t.get("name") for t in it.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("name"), str)]
        meta.setdefault("mcp_list_tools", {})[str(it.get("server_label") or "")] = tools
    elif kind in _KEPT:
        meta.setdefault(kind, []).append(it)
    else:  # a type newer than this reader: kept, and said once
        if not isinstance(kind, str):
            raise DataError(f"expected a Responses API item (an object with a 'type'), got type {kind!r}",
                            field=join(path, "type"))
        meta.setdefault("other_items", []).append(it)
        if kind not in _WARNED:
            _WARNED.add(kind)
            warnings.warn(InputWarning(f"Responses API item type {kind!r} is not known to assay; such items are "
                                       "kept in the trace's metadata.other_items"), stacklevel=2)


def _call_item(kind: str, it: dict[str, Any], path: str, meta: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """A call item as an assistant tool call, and its result or error when the item holds them."""
    call_id = it.get("call_id") or it.get("id") or f"{kind}-{path}"
    name = kind.removesuffix("_call")
    result: Any = None
    error: Any = None
    if kind in ("function_call", "custom_tool_call", "mcp_call"):
        text(it, path, "name", required=True)
        name = it["name"]
        args = arguments(it.get("arguments"), join(path, "arguments")) if kind != "custom_tool_call" else {
            "input": it.get("input")}
        if kind == "mcp_call":
            call_id = it.get("id") or call_id
            result, error = it.get("output"), it.get("error")
            server = str(it.get("server_label") or "")
            meta.setdefault("mcp_tools", [])
            if name not in meta["mcp_tools"]:
                meta["mcp_tools"].append(name)
            called = meta.setdefault("mcp_servers", {}).setdefault(server, [])
            if name not in called:
                called.append(name)
    elif kind == "code_interpreter_call":
        args = {k: it[k] for k in ("code", "container_id") if it.get(k) is not None}
        outs = it.get("outputs")
        if isinstance(outs, list):
            logs = [o.get("logs") for o in outs if isinstance(o, dict) and isinstance(o.get("logs"), str)]
            result = "\n".join(logs) if len(logs) == len(outs) else outs
    elif kind == "image_generation_call":
        args = {k: it[k] for k in ("revised_prompt", "size", "quality") if it.get(k) is not None}
        image = it.get("result")
        result = f"<image: {len(image)} base64 characters>" if isinstance(image, str) else None
    elif kind == "file_search_call":
        args = {"queries": it.get("queries")} if it.get("queries") else {}
        result = it.get("results")
    elif kind == "apply_patch_call":
        args = dict(it["operation"]) if isinstance(it.get("operation"), dict) else {}
    else:  # web_search, computer, local_shell, shell: the arguments are the action
        action = it.get("action") if isinstance(it.get("action"), dict) else {}
        args = {k: v for k, v in action.items() if k != "type" and not (k == "sources" and kind == "web_search_call")}
        if kind == "web_search_call" and action.get("sources"):
            result = action["sources"]
    if error is None and it.get("status") in ("failed", "incomplete") and kind in _SERVER:
        error = f"{kind} {it['status']}"
    yield path, {"role": "assistant", "tool_calls": [{"id": call_id, "function": {"name": name, "arguments": args}}]}
    if error is not None:
        yield path, {"role": "tool", "tool_call_id": call_id, "error": str(error)}
    elif result is not None:
        yield path, {"role": "tool", "tool_call_id": call_id,
                     "content": result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)}


def _output_text(value: Any) -> Any:
    if isinstance(value, list):  # output content parts
        return "\n".join(p.get("text", "") for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return value


def _items(value: Any, path: str, meta: dict[str, Any], *, text_is_user: bool = True) -> list[tuple[str, Any]]:
    """The messages of ``input`` (a string is the user's message) or ``output`` (items only: a string
    there is no Responses API output, and was once read as a second user message)."""
    if value is None:
        return []
    if isinstance(value, str) and text_is_user:
        return [(path, {"role": "user", "content": value})]
    if not isinstance(value, list):
        expected = "a string or an array of items" if text_is_user else "an array of output items"
        raise DataError(f"expected {expected}, got {json_type(value)}", field=path or None)
    return [pair for i, item in enumerate(value) for pair in _messages(item, join(path, i), meta)]


def _turns(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The chat builder over translated items; its field names put back into the items' spelling."""
    try:
        return build_turns(pairs)
    except DataError as exc:
        raise DataError(exc.detail, field=(exc.field or "").replace(".tool_call_id", ".call_id") or None) from None


def _response(d: dict[str, Any], path: str, fallback: str, request: dict[str, Any] | None = None,
              rpath: str = "") -> Trace:
    req = request if request is not None else d
    rq_path = rpath if request is not None else path
    pairs: list[tuple[str, Any]] = []
    instructions = d.get("instructions", req.get("instructions"))
    if isinstance(instructions, str) and instructions:
        pairs.append((join(rq_path, "instructions"), {"role": "system", "content": instructions}))
    meta: dict[str, Any] = {}
    pairs += _items(req.get("input"), join(rq_path, "input"), meta)
    pairs += _items(d.get("output"), join(path, "output"), meta, text_is_user=False)
    data = _turns(pairs)
    for key, name in (("model", "model"), ("id", "response_id"), ("previous_response_id", "previous_response_id"),
                      ("incomplete_details", "incomplete_details"), ("error", "error")):
        if d.get(key) is not None:
            meta[name] = d[key]
    if "model" not in meta and req.get("model") is not None:
        meta["model"] = req["model"]
    status = d.get("status")
    data.update({"id": fallback, "metadata": meta, "usage": usage_of(d.get("usage"), join(path, "usage")),
                 "status": {"completed": "completed", "failed": "failed", "incomplete": "partial"}.get(status)})
    return build_trace({k: v for k, v in data.items() if v is not None})


def _one(value: Any, path: str, fallback: str) -> Trace:
    d = obj(value, path, "a response object")
    if "request" in d or "response" in d:
        rpath, ppath = join(path, "request"), join(path, "response")
        req = obj(d.get("request") or {}, rpath)
        resp = obj(d.get("response") or {}, ppath)
        trace = _response(resp, ppath, fallback, req, rpath)
    else:
        trace = _response(d, path, fallback)
    record_id = d.get("id") if "request" in d else None
    extra = {k: v for k, v in d.items() if k not in ("request", "response", "id", "latency_ms")} if "request" in d else {}
    latency = number(d, path, "latency_ms") if "request" in d else None
    if record_id is not None or extra or latency is not None:
        trace = trace.model_copy(update={"id": str(record_id) if record_id is not None else trace.id,
                                         "metadata": {**trace.metadata, **extra},
                                         "latency_ms": latency if latency is not None else trace.latency_ms})
    return trace


def is_item(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in ITEM_TYPES


def convert(value: Any, fallback: str) -> Iterator[Trace]:
    if isinstance(value, list):
        meta: dict[str, Any] = {}
        data = _turns(_items(value, "", meta))
        yield build_trace({k: v for k, v in {**data, "id": fallback, "metadata": meta}.items() if v is not None})
    else:
        yield _one(value, "", fallback)


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    return read_conversations(stream, source, convert,
                              lambda v: is_item(v) or (isinstance(v, dict) and "role" in v))


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    rec = h.record
    if isinstance(rec, list):
        rec = rec[0] if rec else None
    if isinstance(rec, dict):
        if is_anthropic_message(rec):
            return False  # type: message with Anthropic content blocks: the anthropic importer's
        if is_item(rec) or ("role" in rec and responses(h)):  # an easy-input message, then items
            return True
        if rec.get("object") == "response":
            return True
        req = rec.get("request")
        if isinstance(req, dict) and "input" in req and "messages" not in req:
            return True
        out = rec.get("output")
        return isinstance(out, list) and bool(out) and is_item(out[0]) and "input" in rec
    if h.complete:
        return False
    return h.has('"object": "response"') or h.has('"object":"response"')


register_importer(Importer("openai_responses", "OpenAI Responses API: response objects, input/output items", read,
                           sniff))
