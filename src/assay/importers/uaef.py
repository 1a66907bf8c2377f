"""UAEF evaluation inputs: ``{"trace" | "multi_agent_trace", "ground_truth", "context"}``.

Files hold one such test case, an array or JSON Lines of them, or UAEF's own test-data shape
``{"test_cases": [...]}`` (streamed case by case). Conversions that differ from UAEF's own:
latency and execution times are seconds there and milliseconds here; a turn is opened by a user
message only (system and tool messages never count as turns); the trace-level ``tool_calls``
list is placed into turns by timestamp.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import IO, Any

from ..errors import DataError
from ..model import Trace
from ..model._messages import TurnBuilder
from ._common import (
    Record, arguments, array, build_trace, integer, join, mapping, number, obj, prefixed, read_records,
    seconds_to_ms, text, texts, usage,
)
from ._registry import Importer, register_importer
from ._sniff import inspect

_CASE_KEYS = {"trace", "multi_agent_trace", "ground_truth", "context", "name"}
_TRACE_KEYS = {"trace_id", "session_id", "messages", "tool_calls", "input_tokens", "output_tokens", "latency", "cost",
               "metadata", "framework", "timestamp"}
_MULTI_KEYS = {"trace_id", "session_id", "agent_traces", "coordination_events", "workflow_status", "total_latency",
               "total_cost", "metadata", "timestamp", "workflow_id"}
# expected_arguments keys with a place of their own in assay's Expected
_EXPECTED_ARGS = {"goal": "goal", "user_goal": "goal", "role": "role", "chatbot_role": "role", "expected_role": "role",
                  "instructions": "instructions", "expected_turns": "turns", "success_criteria": "success_criteria"}


def evaluation_input_to_trace(case: Any, *, default_id: str | None = None) -> Trace:
    """One UAEF test case / EvaluationInput (dict or pydantic model) as a Trace.

    The trace id is the case's ``name``, else the trace's ``trace_id``, else ``default_id``.
    Raises DataError naming the bad field.
    """
    if hasattr(case, "model_dump"):
        case = case.model_dump(mode="json")
    return _case(case, "", default_id)


def _case(value: Any, path: str, default_id: str | None) -> Trace:
    d = obj(value, path, "a UAEF test case object")
    key = "multi_agent_trace" if "multi_agent_trace" in d else "trace"
    tpath = join(path, key)
    if d.get(key) is None:
        raise DataError("required field is missing", field=tpath)
    t = obj(d[key], tpath)
    meta: dict[str, Any] = {k: v for k, v in d.items() if k not in _CASE_KEYS}
    data = _multi(t, tpath) if key == "multi_agent_trace" or "agent_traces" in t else _single(t, tpath)
    data["metadata"] = {**meta, **data["metadata"]}
    name = text(d, path, "name")
    trace_id = name or data["metadata"].get("uaef_trace_id") or default_id
    if trace_id is None:
        raise DataError("required field is missing (or pass default_id)", field=join(path, "name"))
    data["id"] = str(trace_id)
    gpath = join(path, "ground_truth")
    gt = mapping(d, path, "ground_truth")
    docs = texts(d, path, "context") + [c for c in texts(gt, gpath, "context_documents")]
    docs = list(dict.fromkeys(docs))
    if docs:
        if data["turns"]:
            for turn in data["turns"]:
                turn["context"] = list(docs)
        else:
            data["metadata"]["context"] = docs
    if gt:
        data["expected"], extra = _expected(gt, gpath)
        if extra:
            data["metadata"]["expected_arguments"] = extra
    try:
        return build_trace(data)
    except DataError as exc:
        raise DataError(exc.detail, field=prefixed(path, exc.field)) from None


def _expected(gt: dict[str, Any], path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    expected: dict[str, Any] = {}
    if (out := text(gt, path, "expected_output")) is not None:
        expected["output"] = out
    if gt.get("expected_tool_calls") is not None:
        calls = []
        for i, item in enumerate(array(gt, path, "expected_tool_calls")):
            cpath = join(join(path, "expected_tool_calls"), i)
            c = obj(item, cpath)
            args = c.get("arguments")
            calls.append({"name": text(c, cpath, "name", required=True),
                          "arguments": None if args is None else arguments(args, join(cpath, "arguments"))})
        expected["tool_calls"] = calls
    args = mapping(gt, path, "expected_arguments")
    apath = join(path, "expected_arguments")
    for key, field in _EXPECTED_ARGS.items():
        if args.get(key) is None or field in expected:
            continue
        if field == "turns":
            expected[field] = integer(args, apath, key)
        elif field == "success_criteria":
            v = args[key]
            expected[field] = [v] if isinstance(v, str) else texts(args, apath, key)
        else:
            expected[field] = text(args, apath, key)
    return expected, args


def _single(t: dict[str, Any], path: str) -> dict[str, Any]:
    turns, system, stray = _conversation(t, path)
    data: dict[str, Any] = {"turns": turns, "metadata": _trace_meta(t, path, _TRACE_KEYS)}
    if system:
        data["system"] = system
    if stray:
        data["metadata"]["unmatched_tool_messages"] = stray
    data["usage"] = usage(integer(t, path, "input_tokens"), integer(t, path, "output_tokens"),
                          cost=_cost(t, path, "cost"))
    data["latency_ms"] = seconds_to_ms(number(t, path, "latency"))
    rps = data["metadata"].get("throughput_rps")
    if rps is not None:
        if isinstance(rps, bool) or not isinstance(rps, (int, float)):
            raise DataError("expected a number", field=join(path, "metadata.throughput_rps"))
        data["throughput_rps"] = rps
    return data


def _multi(t: dict[str, Any], path: str) -> dict[str, Any]:
    agents: dict[str, Any] = {}
    meta = _trace_meta(t, path, _MULTI_KEYS)
    apath = join(path, "agent_traces")
    for name, at in mapping(t, path, "agent_traces").items():
        npath = f"{apath}.{name}"
        a = obj(at, npath)
        turns, system, stray = _conversation(a, npath, agent=name)
        agents[name] = {"turns": turns, "usage": usage(integer(a, npath, "input_tokens"),
                                                       integer(a, npath, "output_tokens"), cost=_cost(a, npath, "cost"))}
        for key, value in (("agent_system_prompts", system), ("agent_latency_ms", seconds_to_ms(number(a, npath, "latency"))),
                           ("agent_metadata", a.get("metadata") or None), ("unmatched_tool_messages", stray or None)):
            if value is not None:
                meta.setdefault(key, {})[name] = value
    handoffs = []
    for i, item in enumerate(array(t, path, "coordination_events")):
        epath = join(join(path, "coordination_events"), i)
        e = obj(item, epath)
        handoffs.append({"from": text(e, epath, "from_agent", required=True),
                         "to": text(e, epath, "to_agent", required=True),
                         "kind": text(e, epath, "event_type") or "delegate",
                         "message": text(e, epath, "message"), "timestamp": _timestamp(e.get("timestamp"), join(epath, "timestamp"))})
        if e.get("metadata"):
            meta.setdefault("handoff_metadata", {})[str(i)] = e["metadata"]
    status = text(t, path, "workflow_status")
    if status is not None and status.lower() not in ("completed", "failed", "partial"):
        raise DataError(f"expected 'completed', 'failed' or 'partial', got {status!r}", field=join(path, "workflow_status"))
    if t.get("workflow_id") is not None:
        meta["workflow_id"] = t["workflow_id"]
    return {"turns": [], "agents": agents, "handoffs": handoffs, "status": status.lower() if status else None,
            "usage": usage(cost=_cost(t, path, "total_cost")),
            "latency_ms": seconds_to_ms(number(t, path, "total_latency")), "metadata": meta}


def _cost(t: dict[str, Any], path: str, key: str) -> float | None:
    """The trace's cost field, else ``metadata.cost_usd`` (where UAEF's own test data keeps it)."""
    cost = number(t, path, key)
    if cost is None:
        cost = number(mapping(t, path, "metadata"), join(path, "metadata"), "cost_usd", "total_cost_usd")
    return cost


def _trace_meta(t: dict[str, Any], path: str, known: set[str]) -> dict[str, Any]:
    meta = dict(mapping(t, path, "metadata"))
    for key, name in (("trace_id", "uaef_trace_id"), ("session_id", "session_id"), ("framework", "framework"),
                      ("timestamp", "timestamp")):
        if t.get(key) is not None:
            meta[name] = t[key]
    meta.update({k: v for k, v in t.items() if k not in known})
    return meta


def _conversation(t: dict[str, Any], path: str, agent: str | None = None) -> tuple[list[dict[str, Any]], str | None, list[Any]]:
    """(turns, system prompt, tool messages no call could take) of one AgentTrace.

    UAEF's tool messages carry no call id: each answers the first call of its turn still without
    a result.
    """
    b = TurnBuilder(agent=agent, error=lambda detail, field: DataError(detail, field=field))
    starts: list[datetime | None] = []
    msg_calls: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for i, item in enumerate(array(t, path, "messages")):
        mpath = join(join(path, "messages"), i)
        m = obj(item, mpath)
        role = text(m, mpath, "role", required=True).lower()
        content = text(m, mpath, "content")
        if role not in ("system", "user", "assistant", "tool"):
            raise DataError(f"expected 'user', 'assistant', 'system' or 'tool', got {role!r}", field=join(mpath, "role"))
        if role == "user" or (role == "assistant" and b.current is None):
            starts.append(_parse_time(m.get("timestamp"), join(mpath, "timestamp")))
        if role == "system":
            b.system(content)
        elif role == "user":
            b.user(content)
        elif role == "assistant":
            turn = b.assistant(content)
            msg_calls += [(turn, _tool_call(c, join(join(mpath, "tool_calls"), j), agent)[0])
                          for j, c in enumerate(array(m, mpath, "tool_calls"))]
        else:
            b.positional(content)
    calls = [_tool_call(c, join(join(path, "tool_calls"), j), agent) for j, c in enumerate(array(t, path, "tool_calls"))]
    if calls:
        if not b.turns:
            b.user(None)
            starts.append(None)
        for call, when in calls:
            b.call(call, b.turns[_turn_of(when, starts)])
    else:
        for turn, call in msg_calls:
            b.call(call, turn)
    system, turns = b.finish()
    return turns, system, b.strays


def _turn_of(when: datetime | None, starts: list[datetime | None]) -> int:
    """The turn a trace-level tool call belongs to: the last one started at or before it."""
    if when is None or any(s is None for s in starts):
        return len(starts) - 1
    index = 0
    for i, start in enumerate(starts):
        if start is not None and start <= when:
            index = i
    return index


def _tool_call(value: Any, path: str, agent: str | None) -> tuple[dict[str, Any], datetime | None]:
    c = obj(value, path)
    call: dict[str, Any] = {"name": text(c, path, "name", required=True),
                            "arguments": arguments(c.get("arguments"), join(path, "arguments")),
                            "result": c.get("result"), "error": text(c, path, "error"),
                            "duration_ms": seconds_to_ms(number(c, path, "execution_time")),
                            "timestamp": _timestamp(c.get("timestamp"), join(path, "timestamp"))}
    if agent is not None:
        call["agent"] = agent
    return call, _parse_time(c.get("timestamp"), join(path, "timestamp"))


def _parse_time(value: Any, path: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, timezone.utc)
        except (ValueError, OverflowError, OSError):
            raise DataError(f"not a time: {value!r} seconds since 1970", field=path) from None
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise DataError(f"not an ISO 8601 time: {value!r}", field=path) from None
        return when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    raise DataError("expected a time (ISO 8601 text or seconds since 1970)", field=path)


def _timestamp(value: Any, path: str) -> str | None:
    if value is None or isinstance(value, str):
        if isinstance(value, str):
            _parse_time(value, path)
        return value
    when = _parse_time(value, path)
    return when.isoformat().replace("+00:00", "Z") if when else None


def _convert(value: Any, default_id: str) -> Iterator[Trace]:
    yield _case(value, "", default_id)


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    return read_records(stream, source, _convert, unwrap=("test_cases",))


def _is_case(rec: Any) -> bool:
    if not isinstance(rec, dict) or "observations" in rec:  # {"trace", "observations"}: a Langfuse download
        return False
    return isinstance(rec.get("trace"), dict) or isinstance(rec.get("multi_agent_trace"), dict)


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    rec, keys = h.record, h.keys
    if isinstance(rec, list):
        return bool(rec) and _is_case(rec[0])
    if "test_cases" in keys:
        cases = rec.get("test_cases") if isinstance(rec, dict) else None
        if isinstance(cases, list):
            return bool(cases) and _is_case(cases[0])
        return h.has('"trace"') or h.has('"multi_agent_trace"')
    if isinstance(rec, dict):
        return _is_case(rec)
    return bool({"trace", "multi_agent_trace"} & keys) and not keys - _CASE_KEYS - {
        "description", "scenario_type", "expected_score", "metric_params"}


register_importer(Importer("uaef", "UAEF test cases / EvaluationInput JSON (trace or multi_agent_trace)", read, sniff))

__all__ = ["evaluation_input_to_trace"]
