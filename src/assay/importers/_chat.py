"""Chat-API logs -> traces: the part the OpenAI chat and Anthropic Messages importers share.

Both APIs send a list of ``{"role", "content"}`` messages and answer with one more; they differ
in where tool calls live. OpenAI: assistant ``tool_calls`` (JSON-string arguments) answered by
``tool`` messages with ``tool_call_id``. Anthropic: ``tool_use`` content blocks in the assistant
message answered by ``tool_result`` blocks (``tool_use_id``) in the next user message. One
builder reads both spellings, so a file whose flavour was guessed wrong still reads right.

A user message opens a turn, except one that only carries tool results; assistant text is the
turn's output (joined when there are several), ``thinking`` / ``reasoning_content`` its
reasoning; system and developer messages (or a top-level ``system``) are the system prompt.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Iterator
from typing import IO, Any

from ..errors import DataError, InputWarning
from ..model import Trace
from ..model._messages import TurnBuilder
from ._common import (
    Record, Skip, arguments, array, build_trace, integer, join, maybe_json, number, obj, read_conversations, usage,
    wrong,
)
from ._payload import is_anthropic_message, is_chat_completion
from ._sniff import Head

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_TEXT = {"text", "input_text", "output_text"}
_THINK = {"thinking", "reasoning"}
_RECORD = {"id", "task_id", "trial", "expected", "metadata", "system", "status", "latency_ms", "usage", "messages"}
"""Top-level fields of a ``{"messages"}`` record with a meaning; the rest goes to metadata."""


# ---------------------------------------------------------------- messages -> turns

def _blocks(content: Any, path: str) -> tuple[list[str], list[str], list[tuple[str, dict[str, Any]]],
                                              list[tuple[str, dict[str, Any]]]]:
    """(texts, thoughts, tool_use blocks, tool_result blocks) of a message's content."""
    texts: list[str] = []
    thoughts: list[str] = []
    uses: list[tuple[str, dict[str, Any]]] = []
    results: list[tuple[str, dict[str, Any]]] = []
    if content is None:
        return texts, thoughts, uses, results
    if isinstance(content, str):
        return [content], thoughts, uses, results
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        raise wrong(path, "a string or a list of content blocks", content)
    for i, block in enumerate(content):
        if isinstance(block, str):
            texts.append(block)
            continue
        if not isinstance(block, dict):
            raise wrong(join(path, i), "a content block object", block)
        kind = block.get("type")
        if kind in _TEXT and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind in _THINK:
            thought = block.get("thinking") or block.get("reasoning") or block.get("text")
            if isinstance(thought, str):
                thoughts.append(thought)
        elif kind in _USES:
            uses.append((join(path, i), block))
        elif kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result")):
            results.append((join(path, i), block))
    return texts, thoughts, uses, results


_USES = ("tool_use", "server_tool_use", "mcp_tool_use")
"""Anthropic's call blocks: client tools, server tools (web search, code execution), MCP connector tools."""


def _result_text(block: dict[str, Any], path: str) -> Any:
    content = block.get("content")
    if isinstance(content, list):
        if not content:
            return []  # a server tool that found nothing (no search hits)
        if all(isinstance(c, dict) and c.get("type") not in _TEXT for c in content):
            return content  # a server tool's structured result (search hits, fetched documents)
        texts, _, _, _ = _blocks(content, join(path, "content"))
        return maybe_json("\n".join(texts))
    return maybe_json(content)


def _result_error(block: dict[str, Any], path: str) -> str | None:
    """The error of a result block: ``is_error`` (client and MCP tools) or an ``*_error`` content (server tools)."""
    content = block.get("content")
    if isinstance(content, dict) and str(content.get("type", "")).endswith("_error"):
        return str(content.get("error_code") or content.get("type"))
    if block.get("is_error"):
        return str(_result_text(block, path) or "error")
    return None


def _answer_blocks(b: TurnBuilder, results: list[tuple[str, dict[str, Any]]]) -> None:
    for rpath, block in results:
        call_id = block.get("tool_use_id")
        target = b.find(call_id, join(rpath, "tool_use_id"))
        error = _result_error(block, rpath)
        if error is not None:
            b.answer(target, call_id, error=error)
        else:
            b.answer(target, call_id, result=_result_text(block, rpath))


def _call(c: Any, path: str) -> dict[str, Any]:
    """An OpenAI ``tool_calls`` entry (or a legacy ``function_call``)."""
    c = obj(c, path)
    if isinstance(c.get("function"), str):  # Inspect AI: {"function": name, "arguments": {...}}
        fn, fpath, name = c, path, c["function"]
    else:
        fn = c.get("function") if isinstance(c.get("function"), dict) else c
        fpath = join(path, "function") if fn is not c else path
        name = fn.get("name")
    if not isinstance(name, str):
        raise DataError("required field is missing" if name is None else "expected a string", field=join(fpath, "name"))
    out = {"name": name, "arguments": arguments(fn.get("arguments"), join(fpath, "arguments"))}
    if c.get("id") is not None:
        out["id"] = str(c["id"])
    return out


def build_turns(messages: Iterable[tuple[str, Any]], *, lenient: bool = False) -> dict[str, Any]:
    """``{"turns", "system"}`` from (field path, message) pairs; raises DataError naming the field.

    With ``lenient`` a result whose call id matches no earlier call is kept in ``orphans`` (and the
    trace's metadata, with a warning) instead of rejecting the record.
    """
    b = TurnBuilder(lenient=lenient, error=lambda detail, field: DataError(detail, field=field))
    mcp: dict[str, list[str]] = {}
    for where, m in messages:
        m = obj(m, where, "a message object")
        role = m.get("role")
        if role not in ROLES:
            raise DataError(f"expected one of {', '.join(map(repr, ROLES))}, got {role!r}", field=join(where, "role"))
        cpath = join(where, "content")
        texts, thoughts, uses, results = _blocks(m.get("content"), cpath)
        body = "\n".join(texts) if texts else None
        if role in ("system", "developer"):
            b.system(body)
        elif role == "user":
            _answer_blocks(b, results)
            if texts or not results:
                b.user(body)
        elif role == "assistant":
            extra = m.get("reasoning_content", m.get("reasoning"))
            if isinstance(extra, str) and extra:
                thoughts.append(extra)
            calls = [_call(c, join(join(where, "tool_calls"), j)) for j, c in enumerate(array(m, where, "tool_calls"))]
            if isinstance(m.get("function_call"), dict):
                calls.append(_call(m["function_call"], join(where, "function_call")))
            for upath, block in uses:
                name = block.get("name")
                if not isinstance(name, str):
                    raise DataError("required field is missing", field=join(upath, "name"))
                if isinstance(block.get("input"), str):  # Anthropic sends an object, never JSON text
                    raise wrong(join(upath, "input"), "an object", block["input"])
                call = {"name": name, "arguments": arguments(block.get("input"), join(upath, "input"))}
                if block.get("id") is not None:
                    call["id"] = str(block["id"])
                if block.get("type") == "mcp_tool_use":
                    mcp.setdefault(str(block.get("server_name") or ""), []).append(name)
                calls.append(call)
            b.assistant(body, reasoning="\n".join(thoughts) or None, calls=calls)
            _answer_blocks(b, results)  # server and MCP tools answer inside the assistant's own message
        else:  # tool / function
            call_id = m.get("tool_call_id")
            if call_id is None and role == "function" and b.current is not None:
                target = b.named(m.get("name"))
                if target is None:
                    raise DataError(f"no earlier function call is named {m.get('name')!r}", field=join(where, "name"))
            else:
                target = b.find(call_id, join(where, "tool_call_id"))
            error = m.get("error")
            if isinstance(error, dict):  # Inspect AI: {"type", "message"}
                error = error.get("message") or error.get("type") or "error"
            b.answer(target, call_id, error=str(error) if error else None,
                     **({"result": maybe_json(body)} if body or not error else {}))
    system, turns = b.finish()
    out: dict[str, Any] = {"turns": turns, "system": system}
    if b.orphans:
        out["orphans"] = b.orphans
    if mcp:
        out["mcp"] = mcp
    return out


def settle(data: dict[str, Any], source_hint: str = "") -> dict[str, Any]:
    """Move ``build_turns``' side findings into the trace's metadata.

    MCP calls: ``metadata["mcp_tools"]`` (the names the MCP metrics take as MCP) and
    ``metadata["mcp_servers"]`` (server -> tools called); orphan results:
    ``metadata["orphan_tool_results"]``, with a warning.
    """
    mcp = data.pop("mcp", None)
    orphans = data.pop("orphans", None)
    if not (mcp or orphans):
        return data
    meta = data["metadata"] = data.get("metadata") or {}
    if mcp:
        names = list(dict.fromkeys([*meta.get("mcp_tools", []), *(n for ns in mcp.values() for n in ns)]))
        meta["mcp_tools"] = names
        servers = meta.setdefault("mcp_servers", {})
        for server, ns in mcp.items():
            servers[server] = list(dict.fromkeys([*servers.get(server, []), *ns]))
    if orphans:
        meta["orphan_tool_results"] = orphans
        ids = ", ".join(repr(o.get("tool_call_id")) for o in orphans[:3])
        warnings.warn(InputWarning(f"{source_hint}{len(orphans)} tool result(s) answer no earlier tool call "
                                   f"(id {ids}); kept in metadata.orphan_tool_results"), stacklevel=2)
    return data


def usage_of(value: Any, path: str) -> dict[str, Any] | None:
    """Either API's usage object as assay's Usage (Anthropic's cache tokens count as input)."""
    if value is None:
        return None
    u = obj(value, path)
    tokens_in = integer(u, path, "input_tokens", "prompt_tokens")
    for cached in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        extra = integer(u, path, cached)
        if extra:
            tokens_in = (tokens_in or 0) + extra
    return usage(tokens_in, integer(u, path, "output_tokens", "completion_tokens"), integer(u, path, "total_tokens"),
                 number(u, path, "cost_usd", "cost"))


# ---------------------------------------------------------------- records

def _system(d: dict[str, Any], path: str) -> str | None:
    """A top-level ``system``: a string, or (Anthropic) a list of text blocks."""
    if d.get("system") is None:
        return None
    texts, _, _, _ = _blocks(d["system"], join(path, "system"))
    return "\n\n".join(texts) or None


def _finish(data: dict[str, Any], system: str | None) -> Trace:
    settle(data)
    systems = [s for s in (system, data.pop("system", None)) if s]
    if systems:
        data["system"] = "\n\n".join(systems)
    return build_trace({k: v for k, v in data.items() if v is not None})


def _record(d: dict[str, Any], path: str, fallback: str) -> Trace:
    """``{"messages": [...], ...}``: fine-tuning / evals JSONL, with or without an id."""
    mpath = join(path, "messages")
    data = build_turns((join(mpath, i), m) for i, m in enumerate(array(d, path, "messages")))
    meta = {k: v for k, v in d.items() if k not in _RECORD}
    meta.update(obj(d.get("metadata") or {}, join(path, "metadata")))
    data.update({"id": str(d["id"]) if d.get("id") is not None else fallback, "metadata": meta,
                 "usage": usage_of(d.get("usage"), join(path, "usage"))})
    for key in ("task_id", "trial", "expected", "status", "latency_ms"):
        data[key] = d.get(key)
    return _finish(data, _system(d, path))


def _unwrap_body(d: dict[str, Any], path: str, inner: str) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """A Batch-API style ``{"body": {...}}`` wrapper, opened: (body, its path, the wrapper's other fields)."""
    if inner not in d and isinstance(d.get("body"), dict):
        return d["body"], join(path, "body"), {k: v for k, v in d.items() if k != "body"}
    return d, path, {}


NOT_CONVERSATIONS = {
    "file": "an uploaded file's metadata", "vector_store": "a vector store", "vector_store.file": "a file in a vector store",
    "vector_store.file_batch": "a batch of vector store files", "vector_store.deleted": "a deletion receipt",
    "file.deleted": "a deletion receipt", "batch": "a Batch API job", "model": "a model listing entry",
    "list": "a list page", "embedding": "an embedding", "fine_tuning.job": "a fine-tuning job",
    "fine_tuning.job.event": "a fine-tuning event", "upload": "an upload", "assistant": "an assistant's settings",
    "thread": "a thread's metadata", "organization.project": "a project",
}
"""OpenAI API objects that hold no conversation: what each is, for the line that skips it."""


def _exchange(d: dict[str, Any], path: str, fallback: str, *, bare: bool = False) -> Trace:
    """``{"request": {...}, "response": {...}}``: one API call as logged by a proxy or a wrapper
    (``bare``: a response object alone, whose fields are at ``path`` itself)."""
    rpath = join(path, "request")
    req, rpath, _ = _unwrap_body(obj(d.get("request") or {}, rpath), rpath, "messages")
    mpath = join(rpath, "messages")
    pairs: list[tuple[str, Any]] = [(join(mpath, i), m) for i, m in enumerate(array(req, rpath, "messages"))]
    meta: dict[str, Any] = {}
    resp = d.get("response")
    ppath = path if bare else join(path, "response")
    status = None
    use = None
    if resp is not None:
        resp, ppath, wrapper = _unwrap_body(obj(resp, ppath), ppath, "choices")
        code = wrapper.get("status_code")
        if isinstance(code, int) and code >= 400:
            status = "failed"
            meta["status_code"] = code
        choices = array(resp, ppath, "choices")
        if choices:
            cpath = join(join(ppath, "choices"), 0)
            choice = obj(choices[0], cpath)
            if choice.get("message") is not None:
                pairs.append((join(cpath, "message"), choice["message"]))
            if choice.get("finish_reason") is not None:
                meta["finish_reason"] = choice["finish_reason"]
        elif resp.get("type") == "message" or resp.get("role") == "assistant" or isinstance(resp.get("content"), list):
            pairs.append((ppath, {"role": "assistant", "content": resp.get("content")}))
            if resp.get("stop_reason") is not None:
                meta["stop_reason"] = resp["stop_reason"]
        if resp.get("error") is not None or resp.get("type") == "error":
            status = "failed"
            meta["error"] = resp.get("error")
        use = usage_of(resp.get("usage"), join(ppath, "usage"))
        if resp.get("id") is not None:
            meta["response_id"] = resp["id"]
    if d.get("error") is not None:
        status = "failed"
        meta["error"] = d["error"]
    data = build_turns(pairs)
    model = (resp or {}).get("model") or req.get("model")
    if model is not None:
        meta["model"] = model
    params = {k: v for k, v in req.items() if k not in ("messages", "system", "model")}
    if params:
        meta["request"] = params
    meta.update({k: v for k, v in d.items() if k not in ("request", "response", "id", "metadata", "error", "latency_ms")})
    meta.update(obj(d.get("metadata") or {}, join(path, "metadata")))
    record_id = d.get("id", d.get("custom_id"))
    data.update({"id": str(record_id) if record_id is not None else fallback, "metadata": meta, "usage": use,
                 "status": status, "latency_ms": number(d, path, "latency_ms")})
    return _finish(data, _system(req, rpath))


def _one(value: Any, path: str, fallback: str) -> Trace:
    d = obj(value, path, "a chat record object")
    if is_chat_completion(d) or is_anthropic_message(d):  # a bare response, saved on its own
        return _exchange({"response": d}, path, fallback, bare=True)
    kind = d.get("object")
    if isinstance(kind, str) and kind in NOT_CONVERSATIONS:
        raise Skip(f"skipped: an OpenAI {kind!r} object ({NOT_CONVERSATIONS[kind]}), not a conversation",
                   field=path or None)
    if "request" in d or "response" in d:
        return _exchange(d, path, fallback)
    if "messages" in d:
        return _record(d, path, fallback)
    raise DataError(f"expected a record with 'messages' (or 'request' and 'response'), got an object with keys "
                    f"{sorted(d)[:6]}", field=path or None)


def is_message(value: Any) -> bool:
    """A chat message: a role, and no ``type`` (LangChain and Responses items carry one)."""
    return isinstance(value, dict) and value.get("role") in ROLES and "type" not in value


def convert(value: Any, fallback: str) -> Iterator[Trace]:
    """One JSON value: a record, a list of messages (one conversation) or a list of records."""
    if isinstance(value, list):
        if not value:
            raise DataError("expected a list of messages or of records, got an empty array")
        if isinstance(value[0], dict) and "role" in value[0]:
            data = build_turns((f"[{i}]", m) for i, m in enumerate(value))
            yield _finish({**data, "id": fallback}, None)
            return
        for i, item in enumerate(value):  # several records (read() reports each one's issue apart)
            yield _one(item, f"[{i}]", f"{fallback}.{i + 1}")
        return
    yield _one(value, "", fallback)


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    """Every trace of the file; a file that is one array of messages is one conversation."""
    return read_conversations(stream, source, convert, is_message,
                              several=lambda v: isinstance(v, list) and bool(v) and not is_message(v[0]))


# ---------------------------------------------------------------- detection

_ANTHROPIC = re.compile(r'"type"\s*:\s*"(?:tool_use|thinking|redacted_thinking|server_tool_use|mcp_tool_use|'
                        r'[a-z_]*tool_result)"|"stop_reason"\s*:'
                        r'|"model"\s*:\s*"claude')


_RESPONSES = re.compile(r'"type"\s*:\s*"(?:function_call|function_call_output|custom_tool_call|mcp_call|mcp_list_tools|'
                        r'mcp_approval_request|code_interpreter_call|image_generation_call|local_shell_call|'
                        r'web_search_call|file_search_call)"'
                        r'|"object"\s*:\s*"response"')
"""OpenAI Responses API items: read by the openai_responses importer, not as chat messages."""


def responses(h: Head) -> bool:
    return bool(_RESPONSES.search(h.text))


_MINI_SWE = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "mswea_bash_command", '"trajectory_format": "mini-swe-agent')


def is_mini_swe(text: str) -> bool:
    """Whether a head's text is a mini-swe-agent trajectory's (its submit command, its bash block tag,
    its format tag): the swe_agent importer's, though the messages are chat messages."""
    return any(m in text for m in _MINI_SWE)


def is_chat(h: Head, native_keys: frozenset[str]) -> bool:
    """Whether the head looks like chat-API data (either flavour) that assay's own reader does not take."""
    rec = h.record
    if isinstance(rec, list):  # a JSON Lines line holding a list
        rec = rec[0] if rec else None
    if is_anthropic_message(rec):
        return True
    if responses(h) or (h.container == "array" and is_mini_swe(h.text)):
        return False
    if isinstance(rec, dict):
        if is_message(rec):
            return True
        if is_chat_completion(rec) or is_anthropic_message(rec):
            return True
        if isinstance(rec.get("request"), dict):
            req = rec["request"]
            body = req.get("body") if isinstance(req.get("body"), dict) else req
            return isinstance(body.get("messages"), list)
        msgs = rec.get("messages")
        if not (isinstance(msgs, list) and (not msgs or is_message(msgs[0]))):
            return False
        return not _native(frozenset(rec), native_keys) or anthropic(h)
    if h.complete:
        return False
    keys = h.keys
    if {"request", "response"} <= keys:
        return h.has('"messages"')
    return "messages" in keys and h.has('"role"') and (not _native(keys, native_keys) or anthropic(h))


def _native(keys: frozenset[str], native_keys: frozenset[str]) -> bool:
    return "id" in keys and keys <= native_keys


def anthropic(h: Head) -> bool:
    """Anthropic's markers: tool_use / tool_result / thinking blocks, stop_reason, a Claude model, a top-level system.

    A bare ``chat.completion`` is OpenAI's whatever model wrote it (a Claude model behind an
    OpenAI-compatible gateway), a bare ``message`` with content blocks Anthropic's."""
    rec = h.first
    if is_chat_completion(rec):
        return False
    if is_anthropic_message(rec):
        return True
    if _ANTHROPIC.search(h.text):
        return True
    return isinstance(rec, dict) and "messages" in rec and "system" in rec and "id" not in rec


__all__ = ["anthropic", "build_turns", "convert", "is_chat", "is_message", "read", "responses", "settle", "usage_of"]
