"""Google ADK eval sets: ``*.evalset.json`` and the older ``*.test.json`` lists.

An eval set ``{"eval_set_id", "name", "eval_cases": [{"eval_id", "conversation": [invocation],
"session_input"}]}`` gives one trace per eval case. Each invocation is one turn: ``user_content``
(Gemini ``parts``) the input, ``final_response`` the output, ``intermediate_data.tool_uses``
(``{"id", "name", "args"}``) the tool calls, answered by ``tool_responses`` where recorded, and
``intermediate_responses`` (``[agent, parts]``) the sub-agents' text, kept in metadata. The
conversation is ADK's reference for the case, so it is also each turn's ``expected`` output and
tool calls: scoring a rerun's traces against these names what changed.

The older format is one session per file: a list of ``{"query", "expected_tool_use":
[{"tool_name", "tool_input"}], "reference"}``; ``query`` is the input, and the expected tool
calls and ``reference`` answer are the turn's ``expected`` (nothing was recorded, so no output).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError
from ..model import Trace
from ._common import Record, array, build_trace, join, obj, read_array_as_one
from ._payload import normalise
from ._registry import Importer, register_importer
from ._sniff import inspect


def _text(content: Any, role: str) -> str | None:
    msgs = normalise(content, role) if content is not None else None
    texts = [m["content"] for m in msgs or [] if m.get("role") == role and isinstance(m.get("content"), str)]
    return "\n".join(texts) if texts else None


def _case(case: Any, path: str, fallback: str, set_meta: dict[str, Any]) -> Trace:
    c = obj(case, path, "an eval case object")
    turns = []
    invocations: list[dict[str, Any]] = []
    for i, inv in enumerate(array(c, path, "conversation")):
        ipath = join(join(path, "conversation"), i)
        inv = obj(inv, ipath, "an invocation object")
        mid = obj(inv.get("intermediate_data") or {}, join(ipath, "intermediate_data"))
        messages: list[tuple[str, dict[str, Any]]] = [(join(ipath, "user_content"),
                                                       {"role": "user", "content": _text(inv.get("user_content"), "user")})]
        calls = []
        answers = {str(r.get("id")): r for r in mid.get("tool_responses") or [] if isinstance(r, dict) and r.get("id")}
        by_name = [r for r in mid.get("tool_responses") or [] if isinstance(r, dict) and not r.get("id")]
        for j, use in enumerate(array(mid, join(ipath, "intermediate_data"), "tool_uses")):
            upath = join(join(ipath, "intermediate_data.tool_uses"), j)
            use = obj(use, upath)
            if not isinstance(use.get("name"), str):
                raise DataError("required field is missing", field=join(upath, "name"))
            call: dict[str, Any] = {"name": use["name"], "arguments": use.get("args") or {}}
            if use.get("id"):
                call["id"] = str(use["id"])
            answer = answers.get(str(use.get("id"))) or next((r for r in by_name if r.get("name") == use["name"]), None)
            if answer is not None:
                if answer in by_name:
                    by_name.remove(answer)
                result = answer.get("response")
                call["result"] = result["result"] if isinstance(result, dict) and set(result) == {"result"} else result
            calls.append(call)
        output = _text(inv.get("final_response"), "assistant")
        turn: dict[str, Any] = {"input": messages[0][1]["content"], "output": output, "tool_calls": calls}
        expected: dict[str, Any] = {}
        if output is not None:
            expected["output"] = output
        if calls:
            expected["tool_calls"] = [{"name": x["name"], "arguments": x["arguments"], "step": k + 1}
                                      for k, x in enumerate(calls)]
        if expected:
            turn["expected"] = expected
        steps = [r for r in mid.get("intermediate_responses") or [] if isinstance(r, list) and len(r) == 2]
        invocations.append({"invocation_id": inv.get("invocation_id"),
                            **({"intermediate_responses": [{"agent": a, "text": _text({"parts": p}, "user")}
                                                           for a, p in steps if isinstance(p, list)]} if steps else {})})
        turns.append(turn)
    meta = dict(set_meta)
    if any(len(inv) > 1 or inv.get("invocation_id") for inv in invocations):
        meta["invocations"] = invocations
    if isinstance(c.get("session_input"), dict):
        meta["session_input"] = c["session_input"]
    eid = c.get("eval_id")
    return build_trace({"id": str(eid) if eid else fallback, "task_id": str(eid) if eid else None, "turns": turns,
                        "metadata": meta})


def _legacy(items: list[Any], fallback: str) -> Trace:
    """The older ``*.test.json``: a list of {query, expected_tool_use, reference}: one session."""
    turns = []
    for i, item in enumerate(items):
        d = obj(item, f"[{i}]", "a {query, expected_tool_use, reference} object")
        if not isinstance(d.get("query"), str):
            raise DataError("required field is missing" if "query" not in d else "expected a string",
                            field=f"[{i}].query")
        expected: dict[str, Any] = {}
        uses = [u for u in d.get("expected_tool_use") or [] if isinstance(u, dict) and isinstance(u.get("tool_name"), str)]
        if uses:
            expected["tool_calls"] = [{"name": u["tool_name"], "arguments": u.get("tool_input"), "step": k + 1}
                                      for k, u in enumerate(uses)]
        if isinstance(d.get("reference"), str):
            expected["output"] = d["reference"]
        turns.append({"input": d["query"], "tool_calls": [], **({"expected": expected} if expected else {})})
    return build_trace({"id": fallback, "turns": turns, "metadata": {"adk_format": "test.json (expectations only)"}})


def convert(value: Any, fallback: str) -> Iterator[Trace]:
    if isinstance(value, list):
        yield _legacy(value, fallback)
        return
    d = obj(value, "", "an ADK eval set object")
    if "conversation" in d:  # one eval case on its own
        yield _case(d, "", fallback, {})
        return
    meta = {k: d[k] for k in ("eval_set_id", "name", "description") if d.get(k)}
    for i, case in enumerate(array(d, "", "eval_cases")):
        yield _case(case, join("eval_cases", i), f"{fallback}.{i + 1}", meta)


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    return read_array_as_one(stream, source, convert)  # the older list: the whole array is one session


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    rec = h.record
    if isinstance(rec, list):
        rec = rec[0] if rec else None
    if h.container == "array" and isinstance(rec, dict) and "query" in rec:
        return "expected_tool_use" in rec or "reference" in rec
    if isinstance(rec, dict):
        if isinstance(rec.get("eval_cases"), list):
            return True
        return isinstance(rec.get("conversation"), list) and "eval_id" in rec
    if h.container == "array" and h.complete is False:
        return h.has('"expected_tool_use"') and h.has('"query"')
    return not h.complete and "eval_cases" in h.keys or ("eval_id" in h.keys and "conversation" in h.keys)


register_importer(Importer("adk_evalset", "Google ADK eval sets (eval_cases / conversation) and *.test.json lists",
                           read, sniff))
