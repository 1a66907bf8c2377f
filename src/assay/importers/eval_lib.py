"""eval_lib test cases (eval-ai-library): ``EvalTestCase`` and ``ConversationalEvalTestCase``.

A single-turn case becomes a one-turn trace; a conversational case one trace with a turn per
case, ``chatbot_role`` as the expected role. eval_lib records tools as bare names, so their
arguments are unknown: actual calls get empty arguments and expected calls accept any arguments,
unless the case carries an ``execution_trace`` whose tool steps give the real ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import IO, Any

from ..errors import DataError
from ..model import Trace
from ._common import (
    Record, array, build_trace, integer, join, mapping, number, obj, prefixed, read_records, text, texts,
)
from ._registry import Importer, register_importer
from ._sniff import Head, inspect

_CASE_KEYS = {"input", "actual_output", "expected_output", "retrieval_context", "tools_called", "expected_tools",
              "reasoning", "name", "execution_trace", "agent_confidence", "perturbation_group", "planning_steps",
              "resource_usage"}
_CONV_KEYS = {"turns", "chatbot_role", "name"}

# Keys only DeepEval test cases have: their presence hands the file to the deepeval importer.
DEEPEVAL_KEYS = frozenset({
    "context", "metadata", "additional_metadata", "additionalMetadata", "comments", "tags", "token_cost", "tokenCost",
    "completion_time", "completionTime", "multimodal", "mcp_servers", "mcp_tools_called", "mcp_resources_called",
    "mcp_prompts_called", "actualOutput", "expectedOutput", "retrievalContext", "toolsCalled", "expectedTools",
    "custom_column_key_values", "customColumnKeyValues", "scenario", "expected_outcome", "expectedOutcome",
    "user_description", "userDescription", "chatbotRole",
})


def test_case_to_trace(case: Any, *, default_id: str | None = None) -> Trace:
    """An EvalTestCase or ConversationalEvalTestCase (dict or pydantic model) as a Trace.

    The trace id is the case's ``name`` (``default_id`` when it has none). Raises DataError
    naming the bad field.
    """
    if hasattr(case, "model_dump"):
        case = case.model_dump()
    return _case(case, "", default_id)


test_case_to_trace.__test__ = False  # type: ignore[attr-defined]  # not a pytest test despite the name


def _case(value: Any, path: str, default_id: str | None) -> Trace:
    d = obj(value, path, "an eval_lib test case object")
    name = text(d, path, "name")
    trace_id = name if name is not None else default_id
    if trace_id is None:
        raise DataError("required field is missing (or pass default_id)", field=join(path, "name"))
    data: dict[str, Any] = {"id": trace_id}
    if "turns" in d:
        turns, extras = [], {}
        for i, item in enumerate(array(d, path, "turns")):
            tpath = join(join(path, "turns"), i)
            turn, more = _turn(obj(item, tpath), tpath)
            turns.append(turn)
            if more:
                extras[str(i)] = more
        data["turns"] = turns
        if (role := text(d, path, "chatbot_role")) is not None:
            data["expected"] = {"role": role}
        meta = {k: v for k, v in d.items() if k not in _CONV_KEYS}
        if extras:
            meta["turn_fields"] = extras
    else:
        turn, more = _turn(d, path)
        data["turns"] = [turn]
        meta = more
    data["metadata"] = meta
    try:
        return build_trace(data)
    except DataError as exc:
        raise DataError(exc.detail, field=prefixed(path, exc.field)) from None


def _turn(d: dict[str, Any], path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    turn: dict[str, Any] = {"input": text(d, path, "input", required=True),
                            "output": text(d, path, "actual_output", required=True),
                            "context": texts(d, path, "retrieval_context"),
                            "reasoning": text(d, path, "reasoning")}
    expected: dict[str, Any] = {}
    if (out := text(d, path, "expected_output")) is not None:
        expected["output"] = out
    if d.get("expected_tools") is not None:
        expected["tool_calls"] = [{"name": n} for n in texts(d, path, "expected_tools")]
    if expected:
        turn["expected"] = expected
    steps = [s for s in _steps(d, path) if s[1].get("type") == "tool_call"]
    if steps:
        turn["tool_calls"] = [_step_call(s, p) for p, s in steps]
    else:
        turn["tool_calls"] = [{"name": n} for n in texts(d, path, "tools_called")]
    more: dict[str, Any] = {}
    ru = mapping(d, path, "resource_usage")
    if ru:
        rpath = join(path, "resource_usage")
        u = {"input_tokens": integer(ru, rpath, "input_tokens"), "output_tokens": integer(ru, rpath, "output_tokens"),
             "total_tokens": integer(ru, rpath, "total_tokens"), "cost_usd": number(ru, rpath, "cost")}
        if any(v is not None for v in u.values()):
            turn["usage"] = u
        turn["latency_ms"] = number(ru, rpath, "duration_ms")
        if ru.get("model") is not None:
            more["model"] = ru["model"]
    for key in ("agent_confidence", "perturbation_group", "planning_steps", "execution_trace"):
        if d.get(key) is not None:
            more[key] = d[key]
    more.update({k: v for k, v in d.items() if k not in _CASE_KEYS})
    return turn, more


def _steps(d: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for i, step in enumerate(array(d, path, "execution_trace")):
        spath = join(join(path, "execution_trace"), i)
        yield spath, obj(step, spath)


def _step_call(step: dict[str, Any], path: str) -> dict[str, Any]:
    args = step.get("input")
    call: dict[str, Any] = {"name": text(step, path, "name", required=True),
                            "arguments": args if isinstance(args, dict) else ({} if args is None else {"input": args}),
                            "result": step.get("output"), "duration_ms": number(step, path, "duration_ms"),
                            "id": text(step, path, "step_id")}
    if (ts := number(step, path, "timestamp")) is not None:
        try:
            call["timestamp"] = datetime.fromtimestamp(ts, timezone.utc).isoformat().replace("+00:00", "Z")
        except (ValueError, OverflowError, OSError):
            raise DataError(f"not a time: {ts!r} seconds since 1970", field=join(path, "timestamp")) from None
    error = text(step, path, "error")
    if error is None and step.get("status") == "error":
        error = text(step, path, "error_type") or "error"
    call["error"] = error
    return call


def _convert(value: Any, default_id: str) -> Iterator[Trace]:
    yield _case(value, "", default_id)


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    return read_records(stream, source, _convert)


def first_case(h: Head) -> tuple[Any, frozenset[str]]:
    """The first test case of the head (a list line's first element too) and its keys."""
    rec, keys = h.record, h.keys
    if isinstance(rec, list):
        rec = rec[0] if rec else None
        keys = frozenset(rec) if isinstance(rec, dict) else frozenset()
    return rec, keys


def _names_only(rec: Any) -> bool:
    if not isinstance(rec, dict):
        return True
    for key in ("tools_called", "expected_tools"):
        items = rec.get(key)
        if isinstance(items, list) and items and not isinstance(items[0], str):
            return False
    return True


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    rec, keys = first_case(h)
    if keys & DEEPEVAL_KEYS:
        return False
    if "turns" in keys and keys <= _CONV_KEYS:
        turns = rec.get("turns") if isinstance(rec, dict) else None
        if isinstance(turns, list) and turns and isinstance(turns[0], dict):
            return "actual_output" in turns[0] and "role" not in turns[0]
        return h.has('"actual_output"') and not h.has('"role"')
    return {"input", "actual_output"} <= keys and _names_only(rec)


register_importer(Importer("eval_lib", "eval_lib EvalTestCase / ConversationalEvalTestCase JSON", read, sniff))

__all__ = ["test_case_to_trace"]
