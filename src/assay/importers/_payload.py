"""Provider-neutral message reading: any payload shape -> chat messages in one canonical spelling.

Every importer that meets a model call's payload (a file of chat logs, a Langfuse generation's
``input``/``output``, an OpenTelemetry span's messages, a Gemini recording) hands it to
``normalise``, so a new provider shape is taught to assay once. The canonical message is an
OpenAI chat message: ``{"role": "system" | "user" | "assistant" | "tool", "content": str | None,
"tool_calls": [{"id", "function": {"name", "arguments"}}], "tool_call_id",
"reasoning_content"}``, which ``_chat.build_turns`` and ``otel.message`` both read.

Shapes read:

- OpenAI chat: a list of messages, ``{"messages": [...]}``, a whole ``chat.completion``
  (``choices``) or one ``choice`` (``{"message", "finish_reason"}``).
- Anthropic Messages: content blocks (``text``, ``thinking``, ``tool_use`` / ``server_tool_use``
  / ``mcp_tool_use``, ``tool_result`` and server tools' ``*_tool_result``), a bare ``message``
  object, a request's top-level ``system``.
- Gemini: ``contents`` / ``candidates`` of ``{"role": "user" | "model", "parts": [...]}`` with
  ``text``, ``thought``, ``functionCall`` / ``function_call``, ``functionResponse`` /
  ``function_response`` parts, and ``systemInstruction`` (also inside ``config``).
- Vercel AI SDK: ``{"prompt": ...}`` / ``{"system", "messages"}`` with ``tool-call`` /
  ``tool-result`` content parts.
- LangChain / LlamaIndex call wrappers: ``{"args": [...], "kwargs": {...}}``.
- Python reprs of lists and dicts (``[{'role': 'user', ...}]``) and of message objects
  (``UserMessage(content='...')``): read only as a last resort, with an ``InputWarning``.

``normalise`` returns None for a value it does not recognise, so the caller can fall back to
treating it as plain text (and the after-reading check can flag it when it looks like a payload).
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from ..errors import InputWarning
from ._common import maybe_json

ANTHROPIC_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use", "server_tool_use", "mcp_tool_use",
                              "tool_result", "image", "document", "search_result", "container_upload"})
_USES = ("tool_use", "server_tool_use", "mcp_tool_use")
_TEXT = ("text", "input_text", "output_text")


def is_anthropic_message(value: Any) -> bool:
    """A bare Anthropic Messages response: ``type: message``, ``role: assistant`` and content blocks
    of Anthropic's kinds (``stop_reason`` settles it when the content is empty)."""
    if not (isinstance(value, dict) and value.get("type") == "message" and value.get("role") == "assistant"):
        return False
    content = value.get("content")
    if not isinstance(content, list):
        return False
    kinds = {b.get("type") for b in content if isinstance(b, dict)}
    if kinds & {"output_text", "refusal"}:
        return False  # a Responses API message item
    if "stop_reason" in value:
        return True
    return bool(kinds) and all(isinstance(k, str) and (k in ANTHROPIC_BLOCKS or k.endswith("_tool_result"))
                               for k in kinds) and bool(kinds - {"text"})


def is_chat_completion(value: Any) -> bool:
    """A bare OpenAI ``chat.completion`` (or a streamed-then-joined one): ``object`` and ``choices``."""
    return (isinstance(value, dict) and str(value.get("object", "")).startswith("chat.completion")
            and isinstance(value.get("choices"), list))


def is_gemini(value: Any) -> bool:
    """A Gemini ``generateContent`` request (``contents``) or response (``candidates``)."""
    if not isinstance(value, dict):
        return False
    for key in ("candidates", "contents"):
        items = value.get(key)
        if isinstance(items, list) and items and isinstance(items[0], dict):
            first = items[0].get("content", items[0]) if key == "candidates" else items[0]
            if isinstance(first, dict) and isinstance(first.get("parts"), list):
                return True
            if key == "candidates" and ("finishReason" in items[0] or "finish_reason" in items[0]):
                return True
    return False


# ---------------------------------------------------------------- normalise

def normalise(value: Any, default_role: str = "user", *, where: str = "") -> list[dict[str, Any]] | None:
    """``value`` as canonical chat messages, or None when it is no message shape assay knows.

    A plain string is one message of ``default_role``; a JSON string is decoded first.
    """
    value = maybe_json(_unquote_json(value))
    if isinstance(value, str):
        parsed = _repr(value, where)
        if parsed is not None:
            found = normalise(parsed, default_role, where=where)
            if found is not None:
                return found
        return _transcript(value) or [{"role": default_role, "content": value}]
    if isinstance(value, list):
        if not value:
            return []
        if len(value) == 1 and isinstance(value[0], list):  # LangChain: one list of messages per prompt
            return normalise(value[0], default_role, where=where)
        value = [_from_lc(m) for m in value]
        if all(isinstance(m, str) for m in value):
            if any(looks_like_repr(m) for m in value):  # agno: [str(Message), ...]
                each: list[dict[str, Any]] = []
                for m in value:
                    each += normalise(m, default_role, where=where) or []
                return each
            return [{"role": default_role, "content": "\n".join(value)}]
        if all(isinstance(m, dict) for m in value):
            if all(_is_message(m) for m in value):
                out: list[dict[str, Any]] = []
                for m in value:
                    out += _message(m, default_role)
                return out
            if all(isinstance(m, dict) and ("message" in m and "index" in m or "finish_reason" in m) for m in value):
                return normalise(value[0], default_role, where=where)  # a list of choices
            if all(m.get("type") in _RESPONSES_ITEMS or _is_message(m) for m in value):
                return _responses(value, default_role)
        return None
    if not isinstance(value, dict):
        return None
    return _object(value, default_role, where)


_LC_ROLES = {"HumanMessage": "user", "AIMessage": "assistant", "SystemMessage": "system", "ToolMessage": "tool",
             "FunctionMessage": "tool", "ChatMessage": "user", "AIMessageChunk": "assistant"}


def _from_lc(m: Any) -> Any:
    """A LangChain-serialised message (``{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs"}``) as a plain one."""
    if not (isinstance(m, dict) and m.get("lc") and isinstance(m.get("id"), list) and isinstance(m.get("kwargs"), dict)):
        return m
    kw = m["kwargs"]
    out = {"role": kw.get("role") or _LC_ROLES.get(str(m["id"][-1]), "user"), "content": kw.get("content")}
    calls = kw.get("tool_calls") or []
    if calls and all(isinstance(c, dict) and "args" in c for c in calls):  # LangChain's {name, args, id}
        out["tool_calls"] = [{"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("args") or {}}}
                             for c in calls]
    elif (kw.get("additional_kwargs") or {}).get("tool_calls"):
        out["tool_calls"] = kw["additional_kwargs"]["tool_calls"]
    if kw.get("tool_call_id"):
        out["tool_call_id"] = kw["tool_call_id"]
    return out


def _object(d: dict[str, Any], default_role: str, where: str) -> list[dict[str, Any]] | None:
    d = _from_lc(d)
    if isinstance(d.get("generations"), list) and d["generations"]:  # LangChain LLMResult
        first = d["generations"][0]
        first = first[0] if isinstance(first, list) and first else first
        if isinstance(first, dict):
            if first.get("message") is not None:
                return normalise(first["message"], "assistant", where=where)
            if isinstance(first.get("text"), str):
                return [{"role": "assistant", "content": first["text"]}]
    if is_chat_completion(d) or (isinstance(d.get("choices"), list) and d["choices"]
                                 and isinstance(d["choices"][0], dict) and "message" in d["choices"][0]):
        c = d["choices"][0] if d["choices"] else {}
        return _message(c.get("message") or {}, "assistant") if isinstance(c, dict) else []
    if isinstance(d.get("message"), dict) and ("finish_reason" in d or "index" in d):  # one choice
        return _message(d["message"], "assistant")
    if is_anthropic_message(d):
        return _message({"role": "assistant", "content": d["content"]}, "assistant")
    if is_responses(d):
        return _responses(d["output"], "assistant")
    if isinstance(d.get("content"), dict) and isinstance(d["content"].get("parts"), list):
        return _gemini({"contents": [{"role": "model", **d["content"]}]}, "assistant")  # ADK's LlmResponse
    if isinstance(d.get("contents"), (str, list)) and not is_gemini(d):  # google-genai: contents="text"
        contents = d["contents"] if isinstance(d["contents"], list) else [d["contents"]]
        if all(isinstance(c, str) for c in contents):
            system_turns = [{"role": "system", "content": t} for t in [_system_text(
                (d.get("config") or {}).get("system_instruction") if isinstance(d.get("config"), dict) else None)] if t]
            return system_turns + [{"role": default_role, "content": c} for c in contents]
    if is_gemini(d) or isinstance(d.get("parts"), list):
        return _gemini(d, default_role)
    if "args" in d and isinstance(d.get("args"), (list, tuple)) or isinstance(d.get("kwargs"), dict) and (
            {"messages", "input", "prompt", "query"} & d["kwargs"].keys()):
        return _call_wrapper(d, default_role, where)
    out: list[dict[str, Any]] = []
    system = _system_text(d.get("system") if "system" in d else d.get("instructions"))
    if system and ("messages" in d or "prompt" in d or "input" in d and not isinstance(d.get("input"), dict)):
        out.append({"role": "system", "content": system})
    for key in ("messages", "prompt", "input"):
        if key in d and d[key] is not None and (key != "input" or isinstance(d[key], (list, str))):
            inner = normalise(d[key], default_role, where=where)
            if inner is not None:
                return out + inner
    if _is_message(d):
        return _message(d, default_role)
    return None


def _is_message(m: Any) -> bool:
    if not isinstance(m, dict):
        return False
    role = m.get("role")
    if role in ("system", "developer", "user", "assistant", "tool", "function", "model", "ai", "human"):
        return "content" in m or "parts" in m or "tool_calls" in m or "function_call" in m or (
            isinstance(m.get("text"), str) and len(m) <= 4)
    return m.get("type") in ("human", "ai", "system", "tool") and "content" in m  # LangChain dumps


_RESPONSES_ITEMS = ("message", "function_call", "function_call_output", "reasoning", "custom_tool_call",
                    "custom_tool_call_output")
_ROLES = {"model": "assistant", "ai": "assistant", "human": "user", "developer": "system", "function": "tool"}


def _message(m: dict[str, Any], default_role: str) -> list[dict[str, Any]]:
    """One message of any spelling as canonical messages (Anthropic results become tool messages)."""
    if isinstance(m.get("parts"), list) and "content" not in m:
        if any(isinstance(p, dict) and p.get("type") in _GENAI_PARTS for p in m["parts"]):
            return _genai(m, default_role)
        return _gemini({"contents": [m]}, default_role)
    role = m.get("role") or m.get("type") or default_role
    role = _ROLES.get(str(role), str(role))
    content = m.get("content", m.get("text"))  # BeeAI: {'role', 'text'}
    if role == "tool" and not m.get("tool_call_id") and isinstance(content, dict) and content.get("type") == "function":
        return []  # a tool's definition that Langfuse lists among the messages, not a result
    if role == "tool" and isinstance(content, list) and content and not any(
            isinstance(b, dict) and isinstance(b.get("type"), str) for b in content):
        content = json.dumps(content, ensure_ascii=False)  # a structured result (LangChain tool output)
    out: dict[str, Any] = {"role": role}
    extra: list[dict[str, Any]] = []
    before: list[dict[str, Any]] = []
    extra_kwargs = m.get("additional_kwargs") if isinstance(m.get("additional_kwargs"), dict) else {}
    calls: list[dict[str, Any]] = [c for c in (m.get("tool_calls") or extra_kwargs.get("tool_calls") or [])
                                   if isinstance(c, dict)]
    if isinstance(m.get("function_call"), dict):
        calls.append({"function": m["function_call"]})
    thoughts = [t for t in (m.get("reasoning_content"), m.get("reasoning")) if isinstance(t, str) and t]
    if isinstance(content, list):
        texts: list[str] = []
        for block in content:
            if isinstance(block, str):
                texts.append(block)
                continue
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind in _TEXT and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind in ("thinking", "reasoning"):
                t = block.get("thinking") or block.get("text") or block.get("reasoning")
                if isinstance(t, str) and t:
                    thoughts.append(t)
            elif kind in _USES:
                call: dict[str, Any] = {"id": block.get("id"), "function": {"name": block.get("name"),
                                                                             "arguments": block.get("input") or {}}}
                if kind == "mcp_tool_use":
                    call["mcp_server"] = block.get("server_name")
                calls.append(call)
            elif kind == "function" and isinstance(block.get("function"), dict):  # a tool_calls entry as content (Koog)
                calls.append(block)
            elif kind == "tool-call":  # Vercel AI SDK
                calls.append({"id": block.get("toolCallId"), "function": {
                    "name": block.get("toolName"), "arguments": block.get("input", block.get("args")) or {}}})
            elif kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result")):
                res = _result_message(block.get("tool_use_id"), block.get("content"), block.get("is_error"))
                (extra if role == "assistant" else before).append(res)
            elif kind == "tool-result":  # Vercel AI SDK
                output = block.get("output", block.get("result"))
                if isinstance(output, dict) and "value" in output and output.get("type") in (
                        "text", "json", "error-text", "error-json", "content"):
                    err = str(output.get("type", "")).startswith("error")
                    output = output["value"]
                else:
                    err = False
                (extra if role == "assistant" else before).append(
                    _result_message(block.get("toolCallId"), output, err))
        out["content"] = "\n".join(texts) if texts else None
    elif isinstance(content, (str, type(None))):
        out["content"] = content
    else:
        out["content"] = json.dumps(content, ensure_ascii=False)
    if role == "tool":
        out["tool_call_id"] = m.get("tool_call_id") or m.get("id")
        if before and out.get("content") is None:
            return before
    if calls:
        out["tool_calls"] = calls
    if thoughts:
        out["reasoning_content"] = "\n".join(thoughts)
    if role == "user" and before and not out.get("content"):
        return before
    return before + [out] + extra


_GENAI_PARTS = ("text", "tool_call", "tool_call_response", "reasoning")


def _genai(m: dict[str, Any], default_role: str) -> list[dict[str, Any]]:
    """A message in the OpenTelemetry GenAI shape: ``{"role", "parts": [{"type": "text", "content"},
    {"type": "tool_call", "id", "name", "arguments"}, {"type": "tool_call_response", "id", "response"}]}``."""
    role = _ROLES.get(str(m.get("role") or default_role), str(m.get("role") or default_role))
    texts, thoughts, calls, results = [], [], [], []
    for p in m["parts"]:
        if not isinstance(p, dict):
            continue
        kind = p.get("type")
        if kind == "text" and isinstance(p.get("content"), str):
            texts.append(p["content"])
        elif kind == "reasoning" and isinstance(p.get("content"), str):
            thoughts.append(p["content"])
        elif kind == "tool_call":
            call_id = p.get("id")
            if isinstance(call_id, list):  # Microsoft Agent Framework: [run id, call id]
                call_id = call_id[-1] if call_id else None
            calls.append({"id": call_id, "function": {"name": p.get("name"), "arguments": p.get("arguments") or {}}})
        elif kind == "tool_call_response":
            call_id = p.get("id")
            if isinstance(call_id, list):
                call_id = call_id[-1] if call_id else None
            results.append(_result_message(call_id, p.get("response", p.get("result")), False))
    out: list[dict[str, Any]] = []
    if role in ("tool", "user") and results:
        out += results
        if texts:
            out.append({"role": role if role != "tool" else "user", "content": "\n".join(texts)})
        return out
    msg: dict[str, Any] = {"role": role, "content": "\n".join(texts) if texts else None}
    if calls:
        msg["tool_calls"] = calls
    if thoughts:
        msg["reasoning_content"] = "\n".join(thoughts)
    return [msg, *results]


def is_responses(value: Any) -> bool:
    """An OpenAI Responses API ``response`` object (``object: response`` and an ``output`` list)."""
    return isinstance(value, dict) and value.get("object") == "response" and isinstance(value.get("output"), list)


def _responses(items: list[Any], default_role: str) -> list[dict[str, Any]]:
    """Responses API items: messages, ``function_call`` / ``function_call_output``, ``reasoning``."""
    out: list[dict[str, Any]] = []
    for it in items:
        if not isinstance(it, dict):
            continue
        kind = it.get("type")
        if kind == "message" or (kind is None and "role" in it):
            out += _message({"role": it.get("role") or default_role, "content": it.get("content")}, default_role)
        elif kind in ("function_call", "custom_tool_call"):
            out.append({"role": "assistant", "content": None, "tool_calls": [{"id": it.get("call_id") or it.get("id"),
                        "function": {"name": it.get("name"), "arguments": it.get("arguments", it.get("input")) or {}}}]})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            out.append(_result_message(it.get("call_id"), it.get("output"), False))
        elif kind == "reasoning":
            summary = [s.get("text") for s in it.get("summary") or [] if isinstance(s, dict) and isinstance(s.get("text"), str)]
            if summary:
                out.append({"role": "assistant", "content": None, "reasoning_content": "\n".join(summary)})
    return out


_TURN_LINE = re.compile(r"^(system|developer|user|assistant|tool|human|ai): ?", re.M)


def _transcript(text: str) -> list[dict[str, Any]] | None:
    """A chat flattened to text, one ``role: content`` block per message (OpenLLMetry-style
    instrumentations of AutoGen and agno write it so), when it opens with a role and holds two."""
    if not _TURN_LINE.match(text):  # the cheap test first: most texts open with no role
        return None
    starts = list(_TURN_LINE.finditer(text))
    if len(starts) < 2:
        return None
    out = []
    for i, m in enumerate(starts):
        body = text[m.end():starts[i + 1].start() if i + 1 < len(starts) else len(text)].rstrip("\n")
        role = _ROLES.get(m.group(1), m.group(1))
        if role == "tool":
            out.append({"role": "tool", "tool_call_id": None, "content": body})
        elif not (role == "assistant" and body.strip() == "None"):
            out.append({"role": role, "content": body})
    return out


def _unquote_json(value: Any) -> Any:
    """A JSON string literal holding JSON or text (a payload encoded twice), decoded."""
    for _ in range(2):
        if isinstance(value, str) and len(value) > 1 and value[0] == '"' and value[-1] == '"':
            try:
                inner = json.loads(value)
            except ValueError:
                return value
            if not isinstance(inner, str):
                return value
            value = inner
        else:
            break
    return value


def _result_message(call_id: Any, content: Any, is_error: Any) -> dict[str, Any]:
    if isinstance(content, list) and content and all(isinstance(c, dict) and c.get("type") in _TEXT for c in content):
        content = "\n".join(c["text"] for c in content if isinstance(c.get("text"), str))
    elif isinstance(content, dict) and str(content.get("type", "")).endswith("_error"):
        is_error = True
        content = content.get("error_code") or content.get("type")
    if not isinstance(content, (str, type(None))):
        content = json.dumps(content, ensure_ascii=False)
    msg: dict[str, Any] = {"role": "tool", "tool_call_id": None if call_id is None else str(call_id),
                           "content": content}
    if is_error:
        msg["error"] = content or "error"
    return msg


def _system_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    if isinstance(value, list):
        texts = [b.get("text") for b in value if isinstance(b, dict) and isinstance(b.get("text"), str)]
        texts += [b for b in value if isinstance(b, str)]
        return "\n\n".join(texts) or None
    if isinstance(value, dict) and isinstance(value.get("parts"), list):  # Gemini systemInstruction
        return "\n".join(p["text"] for p in value["parts"] if isinstance(p, dict) and isinstance(p.get("text"), str)) or None
    return None


def _gemini(d: dict[str, Any], default_role: str) -> list[dict[str, Any]]:
    """Gemini ``contents`` (a request) or ``candidates`` (a response; the first candidate)."""
    out: list[dict[str, Any]] = []
    config = d.get("config") if isinstance(d.get("config"), dict) else d.get("generationConfig")
    system = d.get("systemInstruction", d.get("system_instruction"))
    if system is None and isinstance(config, dict):
        system = config.get("system_instruction", config.get("systemInstruction"))
    system_text = _system_text(system)
    if system_text:
        out.append({"role": "system", "content": system_text})
    if isinstance(d.get("candidates"), list):
        first = d["candidates"][0] if d["candidates"] else {}
        contents = [first.get("content") or {"role": "model", "parts": []}] if isinstance(first, dict) else []
    elif isinstance(d.get("contents"), list):
        contents = d["contents"]
    else:
        contents = [d]
    for c in contents:
        if isinstance(c, str):
            out.append({"role": default_role, "content": c})
            continue
        if not isinstance(c, dict):
            continue
        role = _ROLES.get(str(c.get("role") or default_role), str(c.get("role") or default_role))
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for p in c.get("parts") or []:
            if not isinstance(p, dict):
                continue
            call = p.get("functionCall", p.get("function_call"))
            resp = p.get("functionResponse", p.get("function_response"))
            if isinstance(p.get("text"), str):
                (thoughts if p.get("thought") else texts).append(p["text"])
            elif isinstance(call, dict):
                calls.append({"id": call.get("id") or _gemini_id(call.get("name"), out, calls),
                              "function": {"name": call.get("name"), "arguments": call.get("args") or {}}})
            elif isinstance(resp, dict):
                result = resp.get("response")
                if isinstance(result, dict) and set(result) == {"result"}:
                    result = result["result"]  # the SDKs wrap a plain value as {"result": value}
                rid = resp.get("id") or _gemini_answer(resp.get("name"), out + results)
                results.append({"role": "tool", "tool_call_id": rid, "content": result if isinstance(result, str)
                                else json.dumps(result, ensure_ascii=False)})
            elif isinstance(p.get("executableCode", p.get("executable_code")), dict):
                code = p.get("executableCode", p.get("executable_code"))
                calls.append({"id": _gemini_id("code_execution", out, calls),
                              "function": {"name": "code_execution", "arguments": {"code": code.get("code")}}})
            elif isinstance(p.get("codeExecutionResult", p.get("code_execution_result")), dict):
                res = p.get("codeExecutionResult", p.get("code_execution_result"))
                out_id = _pending_code(out, calls)
                if out_id is not None:
                    results.append({"role": "tool", "tool_call_id": out_id, "content": res.get("output")})
        if results and role != "assistant":
            out += results
            if texts:
                out.append({"role": role, "content": "\n".join(texts)})
            continue
        msg: dict[str, Any] = {"role": role, "content": "\n".join(texts) if texts else None}
        if calls:
            msg["tool_calls"] = calls
        if thoughts:
            msg["reasoning_content"] = "\n".join(thoughts)
        if texts and calls and role == "assistant" and results:
            # code execution: the call, its result, then the text that follows
            out.append({**msg, "content": None})
            out += results
            out.append({"role": "assistant", "content": "\n".join(texts)})
            continue
        out.append(msg)
        out += results
    return out


def _gemini_id(name: Any, earlier: list[dict[str, Any]], now: list[dict[str, Any]]) -> str:
    """Gemini calls before 2.5 carry no id: ``NAME#n`` (its n-th call), answered by the response of that name."""
    n = sum(1 for m in earlier for c in m.get("tool_calls") or [] if c["function"]["name"] == name)
    n += sum(1 for c in now if c["function"]["name"] == name)
    return f"{name}#{n + 1}"


def _gemini_answer(name: Any, earlier: list[dict[str, Any]]) -> str:
    """The id of the earliest call named ``name`` that no earlier response answered."""
    answered = {m.get("tool_call_id") for m in earlier if m.get("role") == "tool"}
    for m in earlier:
        for c in m.get("tool_calls") or []:
            if c["function"]["name"] == name and c["id"] not in answered:
                return str(c["id"])
    return f"{name}#1"


def _pending_code(earlier: list[dict[str, Any]], now: list[dict[str, Any]]) -> str | None:
    answered = {m.get("tool_call_id") for m in earlier if m.get("role") == "tool"}
    for c in reversed([*(c for m in earlier for c in m.get("tool_calls") or []), *now]):
        if c["function"]["name"] == "code_execution" and c["id"] not in answered:
            return str(c["id"])
    return None


def _call_wrapper(d: dict[str, Any], default_role: str, where: str) -> list[dict[str, Any]] | None:
    """LangChain / LlamaIndex instrumentation's ``{"args": [...], "kwargs": {...}}``: the messages inside."""
    kwargs = d.get("kwargs") if isinstance(d.get("kwargs"), dict) else {}
    for key in ("messages", "input", "prompt", "query"):
        if key in kwargs:
            inner = normalise(kwargs[key], default_role, where=where)
            if inner is not None:
                return inner
    for arg in d.get("args") or []:
        inner = normalise(arg, default_role, where=where)
        if inner is not None:
            return inner
    return None


# ---------------------------------------------------------------- Python reprs

_OBJ_REPR = re.compile(r"^\s*\[?\s*[A-Z]\w*(?:Message|Content|Part)?\(")
_FIELD = re.compile(r"\b(role|content|text)=(?:<[\w.]+:\s*)?('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")
_ROLE_CLASS = re.compile(r"\b(User|Assistant|System|Tool|Human|AI)Message\(")


_BARE_FIELDS = re.compile(r"^\s*\[?\s*role='(?:system|user|assistant|tool|developer|model)'\s+content=")


def looks_like_repr(text: str) -> bool:
    """Whether ``text`` is a Python repr of a structure: ``{'k': ...}``, ``[{'k': ...}]``, ``Name(field=...)``
    or a pydantic model's ``role='user' content='...'``."""
    s = text.strip()
    if s[:2] in ("{'", "[{") and ("': " in s[:200]) and s[-1:] in ("}", "]"):
        return True
    if _BARE_FIELDS.match(s):
        return True
    return bool(_OBJ_REPR.match(s)) and bool(_FIELD.search(s)) and s.rstrip()[-1:] in (")", "]")


def _repr(text: str, where: str) -> Any:
    """A Python repr read as data (with a warning), or None."""
    if not looks_like_repr(text):
        return None
    s = text.strip()
    try:
        value = ast.literal_eval(s) if len(s) < 1_000_000 else None
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    if value is None and _BARE_FIELDS.match(s):
        value = _bare_reprs(s)
    if value is None:
        msgs = _object_reprs(s)
        if not msgs:
            return None
        value = msgs
    key = hash(s)
    if key not in _WARNED:  # a payload is read more than once (a span's messages, then its text): one warning
        if len(_WARNED) > 10_000:
            _WARNED.clear()
        _WARNED.add(key)
        warnings.warn(InputWarning(f"{where + ': ' if where else ''}a Python repr, not JSON, was read as messages "
                                   "(the producer wrote str() of its objects); check the turns"), stacklevel=4)
    return value


_WARNED: set[int] = set()
"""Reprs already warned about (by hash), so that one payload read several times warns once."""


def _object_reprs(s: str) -> list[dict[str, Any]]:
    """``[UserMessage(content='hi'), AssistantMessage(content='hello')]``: role and text of each object."""
    out: list[dict[str, Any]] = []
    starts = [m.start() for m in re.finditer(r"\b[A-Z]\w*\(", s)]
    for i, start in enumerate(starts):
        chunk = s[start:starts[i + 1] if i + 1 < len(starts) else len(s)]
        fields = {k: _unquote(v) for k, v in _FIELD.findall(chunk)}
        role_class = _ROLE_CLASS.match(chunk)
        role = fields.get("role") or (role_class.group(1).lower() if role_class else None)
        text = fields.get("content") or fields.get("text")
        if text is None:
            continue
        if role is None and out:
            continue  # a part inside the previous message
        out.append({"role": _ROLES.get(str(role).lower(), str(role).lower()) if role else "user", "content": text})
    return out


_BARE_SPLIT = re.compile(r"(?:^|\n|,\s*|\[\s*)(?=role='(?:system|user|assistant|tool|developer|model)'\s+content=)")


def _bare_reprs(s: str) -> list[dict[str, Any]] | None:
    """``role='system' content='...' name=None ...`` (pydantic models' str()), one message per ``role=``."""
    out = []
    for chunk in _BARE_SPLIT.split(s.strip()):
        fields = dict(_FIELD.findall(chunk))
        if "role" not in fields:
            continue
        msg: dict[str, Any] = {"role": _unquote(fields["role"]),
                               "content": _unquote(fields["content"]) if "content" in fields else None}
        calls = _bracketed(chunk, "tool_calls=[")
        if calls:
            msg["tool_calls"] = calls
        call_id = re.search(r"\btool_call_id='([^']*)'", chunk)
        if call_id:
            msg["tool_call_id"] = call_id.group(1)
        out.append(msg)
    return out or None


def _bracketed(text: str, opener: str) -> Any:
    """The Python literal that opens with ``opener``'s last character, read to its matching bracket."""
    start = text.find(opener)
    if start < 0:
        return None
    i = start + len(opener) - 1
    depth = 0
    quote = ""
    for j in range(i, len(text)):
        c = text[j]
        if quote:
            if c == "\\":
                continue
            if c == quote and text[j - 1] != "\\":
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "[{(":
            depth += 1
        elif c in "]})":
            depth -= 1
            if depth == 0:
                try:
                    return ast.literal_eval(text[i:j + 1])
                except (ValueError, SyntaxError):
                    return None
    return None


def _unquote(v: str) -> str:
    try:
        return str(ast.literal_eval(v))
    except (ValueError, SyntaxError):
        return v[1:-1]
