"""DeepEval test cases: ``LLMTestCase`` and ``ConversationalTestCase`` as JSON.

Both spellings DeepEval reads are accepted: snake_case (``actual_output``) and the camelCase of
its serialised form (``actualOutput``). Tool calls are DeepEval ``ToolCall`` dicts (``name``,
``input_parameters``, ``output``); retrieved passages may be strings or ``{context, source}``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError
from ..model import Trace
from ._common import (
    Record, array, build_trace, get, join, mapping, number, obj, prefixed, read_records, seconds_to_ms, text, texts,
)
from ._registry import Importer, register_importer
from ._sniff import inspect
from .eval_lib import DEEPEVAL_KEYS, first_case

_SINGLE = {"input", "actual_output", "actualOutput", "expected_output", "expectedOutput", "context", "retrieval_context",
           "retrievalContext", "tools_called", "toolsCalled", "expected_tools", "expectedTools", "token_cost",
           "tokenCost", "completion_time", "completionTime", "name", "metadata", "additional_metadata",
           "additionalMetadata"}
_CONV = {"turns", "scenario", "context", "name", "user_description", "userDescription", "expected_outcome",
         "expectedOutcome", "chatbot_role", "chatbotRole", "metadata", "additional_metadata", "additionalMetadata"}
_TURN = {"role", "content", "retrieval_context", "retrievalContext", "tools_called", "toolsCalled", "metadata",
         "additional_metadata", "additionalMetadata"}


def test_case_to_trace(case: Any, *, default_id: str | None = None) -> Trace:
    """A DeepEval LLMTestCase or ConversationalTestCase (dict or model) as a Trace.

    The trace id is the case's ``name`` (``default_id`` when it has none). Raises DataError
    naming the bad field.
    """
    if hasattr(case, "model_dump"):
        case = case.model_dump()
    return _case(case, "", default_id)


test_case_to_trace.__test__ = False  # type: ignore[attr-defined]


def _case(value: Any, path: str, default_id: str | None) -> Trace:
    d = obj(value, path, "a DeepEval test case object")
    name = text(d, path, "name")
    trace_id = name if name is not None else default_id
    if trace_id is None:
        raise DataError("required field is missing (or pass default_id)", field=join(path, "name"))
    meta = dict(mapping(d, path, "metadata", "additional_metadata", "additionalMetadata"))
    data: dict[str, Any] = {"id": trace_id}
    if "turns" in d:
        data["turns"] = _turns(d, path)
        expected = {"role": text(d, path, "chatbot_role", "chatbotRole"),
                    "goal": text(d, path, "expected_outcome", "expectedOutcome")}
        if any(v is not None for v in expected.values()):
            data["expected"] = {k: v for k, v in expected.items() if v is not None}
        for key, aliases in (("scenario", ("scenario",)), ("user_description", ("user_description", "userDescription"))):
            if (v := text(d, path, *aliases)) is not None:
                meta[key] = v
        if d.get("context") is not None:
            meta["context"] = texts(d, path, "context")
        known = _CONV
    else:
        data["turns"] = [_single(d, path, meta)]
        known = _SINGLE
    meta.update({k: v for k, v in d.items() if k not in known and v is not None})
    data["metadata"] = meta
    try:
        return build_trace(data)
    except DataError as exc:
        raise DataError(exc.detail, field=prefixed(path, exc.field)) from None


def _single(d: dict[str, Any], path: str, meta: dict[str, Any]) -> dict[str, Any]:
    turn: dict[str, Any] = {"input": text(d, path, "input", required=True),
                            "output": text(d, path, "actual_output", "actualOutput"),
                            "tool_calls": _calls(d, path, "tools_called", "toolsCalled")}
    retrieved = _passages(d, path, "retrieval_context", "retrievalContext")
    context = texts(d, path, "context") if d.get("context") is not None else None
    if retrieved is not None:
        turn["context"] = retrieved
        if context is not None:
            meta["context"] = context
    elif context is not None:
        turn["context"] = context
    expected: dict[str, Any] = {}
    if (out := text(d, path, "expected_output", "expectedOutput")) is not None:
        expected["output"] = out
    if get(d, "expected_tools", "expectedTools") is not None:
        expected["tool_calls"] = _calls(d, path, "expected_tools", "expectedTools", expected_calls=True)
    if expected:
        turn["expected"] = expected
    cost = number(d, path, "token_cost", "tokenCost")
    if cost is not None:
        turn["usage"] = {"cost_usd": cost}
    turn["latency_ms"] = seconds_to_ms(number(d, path, "completion_time", "completionTime"))
    return turn


def _turns(d: dict[str, Any], path: str) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for i, item in enumerate(array(d, path, "turns")):
        tpath = join(join(path, "turns"), i)
        t = obj(item, tpath)
        role = t.get("role")
        content = text(t, tpath, "content")
        if role == "user":
            current = {"input": content, "tool_calls": [], "context": []}
            turns.append(current)
        elif role == "assistant":
            if current is None:  # the assistant spoke first
                current = {"input": None, "tool_calls": [], "context": []}
                turns.append(current)
            if content is not None:
                current["output"] = content if current.get("output") is None else current["output"] + "\n" + content
            current["tool_calls"] += _calls(t, tpath, "tools_called", "toolsCalled")
            current["context"] += _passages(t, tpath, "retrieval_context", "retrievalContext") or []
        else:
            raise DataError(f"expected 'user' or 'assistant', got {role!r}", field=join(tpath, "role"))
    return turns


def _calls(d: dict[str, Any], path: str, *keys: str, expected_calls: bool = False) -> list[dict[str, Any]]:
    where = join(path, next((k for k in keys if k in d), keys[0]))
    calls = []
    for i, item in enumerate(array(d, path, *keys)):
        cpath = join(where, i)
        if isinstance(item, str):  # older DeepEval took bare names
            calls.append({"name": item})
            continue
        c = obj(item, cpath, "a ToolCall object")
        params = get(c, "input_parameters", "inputParameters")
        call: dict[str, Any] = {"name": text(c, cpath, "name", required=True)}
        if expected_calls:
            call["arguments"] = None if params is None else mapping(c, cpath, "input_parameters", "inputParameters")
        else:
            call["arguments"] = mapping(c, cpath, "input_parameters", "inputParameters")
            call["result"] = c.get("output")
        calls.append(call)
    return calls


def _passages(d: dict[str, Any], path: str, *keys: str) -> list[str] | None:
    if get(d, *keys) is None:
        return None
    where = join(path, next((k for k in keys if k in d), keys[0]))
    out = []
    for i, item in enumerate(array(d, path, *keys)):
        if isinstance(item, dict):  # RetrievedContextData
            item = text(item, join(where, i), "context", required=True)
        elif not isinstance(item, str):
            raise DataError("expected a string or a {context, source} object", field=join(where, i))
        out.append(item)
    return out


def _convert(value: Any, default_id: str) -> Iterator[Trace]:
    yield _case(value, "", default_id)


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    return read_records(stream, source, _convert)


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    rec, keys = first_case(h)
    if "turns" in keys and "id" not in keys:
        turns = rec.get("turns") if isinstance(rec, dict) else None
        if isinstance(turns, list) and turns and isinstance(turns[0], dict):
            return "role" in turns[0] and "content" in turns[0]
        return bool(keys & DEEPEVAL_KEYS) or h.has('"role"') and not h.has('"actual_output"')
    if "input" not in keys or "observations" in keys or "traceId" in keys:  # a Langfuse trace or observation
        return False
    if keys & DEEPEVAL_KEYS:
        return True
    if "actual_output" not in keys:
        return "expected_output" in keys  # a golden: input and expected output, no answer yet
    for key in ("tools_called", "expected_tools"):
        items = rec.get(key) if isinstance(rec, dict) else None
        if isinstance(items, list) and items and isinstance(items[0], dict):
            return True
    return False


register_importer(Importer("deepeval", "DeepEval LLMTestCase / ConversationalTestCase JSON", read, sniff))

__all__ = ["test_case_to_trace"]
