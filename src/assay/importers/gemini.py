"""Gemini ``generateContent`` requests and responses (the Gemini API and Vertex AI).

Read, one per line or one per file: a response ``{"candidates": [{"content": {"role": "model",
"parts": [...]}, "finishReason"}], "usageMetadata", "modelVersion", "responseId"}``; a request
``{"contents": [...], "systemInstruction", "tools", "generationConfig"}`` (or the Python SDK's
``config``); and a logged call ``{"request": {...}, "response": {...}}``. Parts become turns as
chat messages do: ``text`` the input or output, ``thought: true`` text the reasoning,
``functionCall`` a tool call, ``functionResponse`` its result (matched by ``id``, else by the
name of the earliest unanswered call: Gemini before 2.5 writes no ids), ``executableCode`` /
``codeExecutionResult`` a ``code_execution`` call and its output. ``usageMetadata`` is the usage
(``promptTokenCount``, ``candidatesTokenCount`` plus ``thoughtsTokenCount``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError
from ..model import Trace
from ._chat import build_turns, settle
from ._common import Record, build_trace, integer, join, obj, read_records, usage
from ._payload import is_gemini, normalise
from ._registry import Importer, register_importer
from ._sniff import inspect


def _usage(value: Any, path: str) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    out = integer(value, path, "candidatesTokenCount", "candidates_token_count")
    thoughts = integer(value, path, "thoughtsTokenCount", "thoughts_token_count")
    if thoughts:
        out = (out or 0) + thoughts
    return usage(integer(value, path, "promptTokenCount", "prompt_token_count"), out,
                 integer(value, path, "totalTokenCount", "total_token_count"))


def convert(value: Any, fallback: str) -> Iterator[Trace]:
    d = obj(value, "", "a Gemini request or response object")
    req = d.get("request") if isinstance(d.get("request"), dict) else (d if "contents" in d else None)
    resp = d.get("response") if isinstance(d.get("response"), dict) else (d if "candidates" in d else None)
    if req is None and resp is None:
        raise DataError(f"expected a Gemini request ('contents'), response ('candidates') or {{request, response}}, "
                        f"got an object with keys {sorted(d)[:6]}")
    messages: list[dict[str, Any]] = []
    meta: dict[str, Any] = {}
    if req is not None:
        messages += normalise({k: req[k] for k in ("contents", "systemInstruction", "system_instruction", "config")
                               if k in req}, "user", where="request") or []
        model = req.get("model")
        if isinstance(model, str):
            meta["model"] = model
    status = None
    if resp is not None:
        cands = resp.get("candidates")
        if isinstance(cands, list) and cands:
            answer = normalise({"candidates": cands}, "assistant", where="response") or []
            # the response continues the request's calls: its ids count on from them
            messages += _renumber(answer, messages)
            first = cands[0] if isinstance(cands[0], dict) else {}
            if first.get("finishReason") is not None:
                meta["finish_reason"] = first["finishReason"]
        feedback = resp.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            status = "failed"
            meta["block_reason"] = feedback["blockReason"]
        if isinstance(resp.get("error"), dict):
            status = "failed"
            meta["error"] = resp["error"]
        for key, name in (("modelVersion", "model"), ("responseId", "response_id")):
            if isinstance(resp.get(key), str):
                meta[name] = resp[key]
    data = build_turns((join("messages", i), m) for i, m in enumerate(messages))
    rid = d.get("id")
    data.update({"id": str(rid) if rid is not None else fallback, "metadata": meta, "status": status,
                 "usage": _usage((resp or {}).get("usageMetadata"), join("response" if resp is not d else "",
                                                                         "usageMetadata"))})
    settle(data)
    yield build_trace({k: v for k, v in data.items() if v is not None})


def _renumber(answer: list[dict[str, Any]], earlier: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Generated ``NAME#n`` ids of the response's calls counted after the request's calls of that name."""
    seen: dict[str, int] = {}
    for m in earlier:
        for c in m.get("tool_calls") or []:
            seen[c["function"]["name"]] = seen.get(c["function"]["name"], 0) + 1
    if not seen:
        return answer
    for m in answer:
        for c in m.get("tool_calls") or []:
            name = c["function"]["name"]
            if isinstance(c.get("id"), str) and c["id"].startswith(f"{name}#") and name in seen:
                c["id"] = f"{name}#{seen[name] + int(c['id'].rpartition('#')[2])}"
    return answer


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    return read_records(stream, source, convert)


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    rec = h.first
    if isinstance(rec, dict):
        if is_gemini(rec):
            return True
        return is_gemini(rec.get("request")) or is_gemini(rec.get("response"))
    if h.complete:
        return False
    keys = h.keys
    return (("candidates" in keys and bool({"usageMetadata", "modelVersion"} & keys))
            or ("contents" in keys and h.has('"parts"')))


register_importer(Importer("gemini", "Gemini generateContent requests and responses (contents / candidates)", read,
                           sniff))
