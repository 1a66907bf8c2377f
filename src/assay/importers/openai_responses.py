"""OpenAI Responses API data: response objects, their ``input`` / ``output`` items, request logs.

Shapes read: a response object (``{"object": "response", "instructions", "output": [...],
"usage"}``, with the request's ``input`` beside it when logged), ``{"request", "response"}``
logs (request ``input`` + ``instructions``, then the response's ``output``), and a list of items
per line or one file that is an array of items (one conversation).

Items become chat messages for the shared builder: ``message`` items by role (``input_text`` /
``output_text`` parts), ``function_call`` (``call_id``, ``name``, JSON ``arguments``) a tool call
answered by the ``function_call_output`` with the same ``call_id``, ``custom_tool_call`` likewise,
``mcp_call`` a call with its ``output`` or ``error``, ``web_search_call`` / ``file_search_call``
calls of ``web_search`` / ``file_search``, ``reasoning`` summaries the turn's reasoning.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError
from ..model import Trace
from ._chat import build_turns, responses, usage_of
from ._common import Record, arguments, build_trace, join, number, obj, read_conversations, text
from ._registry import Importer, register_importer
from ._sniff import inspect

ITEM_TYPES = frozenset({"message", "function_call", "function_call_output", "custom_tool_call",
                        "custom_tool_call_output", "mcp_call", "web_search_call", "file_search_call", "reasoning",
                        "computer_call", "computer_call_output", "item_reference"})


def _messages(item: Any, path: str) -> Iterator[tuple[str, Any]]:
    """The chat message(s) one item stands for."""
    it = obj(item, path, "an item object")
    kind = it.get("type", "message" if "role" in it else None)
    if kind == "message":
        yield path, {"role": it.get("role"), "content": it.get("content")}
    elif kind in ("function_call", "custom_tool_call"):
        call_id = it.get("call_id", it.get("id"))
        text(it, path, "name", required=True)
        args = arguments(it.get("arguments"), join(path, "arguments")) if kind == "function_call" else {
            "input": it.get("input")}
        yield path, {"role": "assistant", "tool_calls": [{"id": call_id, "function": {
            "name": it.get("name"), "arguments": args}}]}
    elif kind in ("function_call_output", "custom_tool_call_output", "computer_call_output"):
        yield path, {"role": "tool", "tool_call_id": it.get("call_id"), "content": _output_text(it.get("output"))}
    elif kind == "mcp_call":
        call_id = it.get("id") or f"mcp-{path}"
        yield path, {"role": "assistant", "tool_calls": [{"id": call_id, "function": {
            "name": it.get("name"), "arguments": it.get("arguments")}}]}
        if it.get("error") is not None:
            yield path, {"role": "tool", "tool_call_id": call_id, "error": str(it["error"])}
        elif it.get("output") is not None:
            yield path, {"role": "tool", "tool_call_id": call_id, "content": _output_text(it["output"])}
    elif kind in ("web_search_call", "file_search_call", "computer_call"):
        action = it.get("action") if isinstance(it.get("action"), dict) else {}
        args = {k: v for k, v in action.items() if k != "type"}
        if kind == "file_search_call" and it.get("queries"):
            args["queries"] = it["queries"]
        yield path, {"role": "assistant", "tool_calls": [{"id": it.get("call_id", it.get("id")), "function": {
            "name": kind.removesuffix("_call"), "arguments": args}}]}
    elif kind == "reasoning":
        texts = [s.get("text") for s in (it.get("summary") or []) + (it.get("content") or [])
                 if isinstance(s, dict) and isinstance(s.get("text"), str)]
        if texts:
            yield path, {"role": "assistant", "reasoning_content": "\n".join(texts)}
    elif kind == "item_reference":
        return
    else:
        raise DataError(f"expected a Responses API item, got type {kind!r}", field=join(path, "type"))


def _output_text(value: Any) -> Any:
    if isinstance(value, list):  # output content parts
        return "\n".join(p.get("text", "") for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return value


def _items(value: Any, path: str) -> list[tuple[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [(path, {"role": "user", "content": value})]
    if not isinstance(value, list):
        raise DataError("expected a string or an array of items", field=path or None)
    return [pair for i, item in enumerate(value) for pair in _messages(item, join(path, i))]


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
    pairs += _items(req.get("input"), join(rq_path, "input"))
    pairs += _items(d.get("output"), join(path, "output"))
    data = _turns(pairs)
    meta: dict[str, Any] = {}
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
        data = _turns(_items(value, ""))
        yield build_trace({k: v for k, v in {**data, "id": fallback}.items() if v is not None})
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
