"""Langfuse exports: traces with their observations (GENERATION, SPAN, TOOL, AGENT, ...).

Read: trace objects as the public API returns them with full details (``GET
/api/public/traces/{id}``: ``{"id", "name", "input", "output", "sessionId", "userId", "tags",
"latency", "observations": [...], "scores": [...]}``), one per line, an array of them, or a
``{"data": [...]}`` page; and flat observation records (``{"id", "traceId", "type",
"parentObservationId", "startTime", "endTime", "input", "output", ...}``), grouped by
``traceId``. Observations are assembled like spans: ``GENERATION`` observations are the model
calls that make the turns (``input`` messages, ``output`` message, ``usageDetails`` / ``usage``,
``calculatedTotalCost``, ``model``), ``TOOL`` observations the tool calls, ``AGENT`` observations
the agents, ``RETRIEVER`` outputs the turn's context; the trace's own ``input`` / ``output`` stand
in when no generation records messages. Every trace is held until the end of the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError
from ..model import InputIssue
from ._common import UNEXPECTED, Record, join, maybe_json, obj, unexpected
from ._errors import json_type
from ._otlp import any_time
from ._payload import normalise
from ._registry import Importer, register_importer
from ._sniff import inspect
from ._spans import LlmCall, Msg, Span, assemble, error_of, flatten
from ._stream import iter_values
from .otel import message

_KINDS = {"GENERATION": "llm", "TOOL": "tool", "AGENT": "agent", "RETRIEVER": "retriever", "CHAIN": "chain",
          "SPAN": "chain"}
_ROOT = "__trace__"
_USAGE = (("input_tokens", ("input", "promptTokens", "input_tokens", "prompt_tokens")),
          ("output_tokens", ("output", "completionTokens", "output_tokens", "completion_tokens")),
          ("total_tokens", ("total", "totalTokens", "total_tokens")))
_TEXT_KEYS = ("input", "query", "question", "message", "content", "text", "output", "answer", "response", "result")


def _text(value: Any, role: str | None = None) -> str | None:
    """An observation's or trace's input/output as text: the message inside a JSON payload (the last
    one of ``role`` when the payload holds messages)."""
    if value is None or isinstance(value, str):
        if role is not None and isinstance(value, str):
            msgs = normalise(value, role)
            if msgs and len(msgs) != 1 or msgs and msgs[0].get("content") != value:
                return _last_text(msgs, role) or value
        return value
    if role is not None:
        msgs = normalise(value, role)
        if msgs:
            found = _last_text(msgs, role)
            if found is not None:
                return found
    if isinstance(value, dict):
        for key in _TEXT_KEYS:
            if isinstance(value.get(key), str):
                return value[key]
        msgs = value.get("messages")
        if isinstance(msgs, list) and msgs and isinstance(msgs[-1], dict) and isinstance(msgs[-1].get("content"), str):
            return msgs[-1]["content"]
    if isinstance(value, list) and value and isinstance(value[-1], dict) and isinstance(value[-1].get("content"), str):
        return value[-1]["content"]
    return json.dumps(value, ensure_ascii=False)


def _last_text(msgs: list[dict[str, Any]], role: str) -> str | None:
    return next((m["content"] for m in reversed(msgs) if m.get("role") == role and isinstance(m.get("content"), str)
                 and m["content"]), None)


class LangfuseConvention:
    def kind(self, span: Span) -> str:
        if span.span_id == _ROOT:
            return "chain"
        kind = _KINDS.get(str(span.attrs.get("type", "")).upper(), "other")
        if kind == "chain" and (span.name.startswith(("tool.", "execute_tool ", "running tool"))
                                or "gen_ai.tool.name" in _attributes(span.attrs)):
            return "tool"  # a SPAN observation of a tool run (Koog's 'tool.NAME', gen_ai.tool.name)
        return kind

    def agent_name(self, span: Span) -> str | None:
        if self.kind(span) != "agent":
            return None
        attrs = _attributes(span.attrs)
        name = attrs.get("gen_ai.agent.name")
        if isinstance(name, str) and name:
            return name
        agent_id = attrs.get("gen_ai.agent.id")  # Koog: 'agent.<id>' and 'run.<id>' spans of one agent share it
        if isinstance(agent_id, str) and agent_id:
            return agent_id
        return span.name.removeprefix("invoke_agent ") or None

    def _msgs(self, value: Any, where: str, default_role: str) -> list[Msg]:
        if value == "None":  # str(None): a producer's empty answer
            return []
        msgs = normalise(value, default_role, where=where)
        if msgs is None:  # no message shape: the text inside the payload, or the payload itself
            text = _text(maybe_json(value))
            return [] if text is None else [Msg(default_role, text)]
        return [message(m, f"{where}[{i}]", default_role) for i, m in enumerate(msgs)]

    def llm(self, span: Span) -> LlmCall:
        o = span.attrs
        call = LlmCall(inputs=self._msgs(o.get("input"), f"{span.field}.input", "user"),
                       outputs=self._msgs(o.get("output"), f"{span.field}.output", "assistant"))
        call.system = "\n\n".join(m.text for m in call.inputs if m.role in ("system", "developer") and m.text) or None
        call.usage = self._usage(o, span.field)
        call.model = o.get("model") if isinstance(o.get("model"), str) else None
        return call

    def _usage(self, o: dict[str, Any], where: str) -> dict[str, Any] | None:
        """``usageDetails`` (v3), else ``usage`` (v2), else the v1 top-level token counts; cost in USD."""
        out: dict[str, Any] = {}
        sources = [(label, o[label]) for label in ("usageDetails", "usage") if isinstance(o.get(label), dict)]
        sources.append(("", {k: o[k] for k in ("promptTokens", "completionTokens", "totalTokens") if k in o}))
        for label, src in sources:
            for field, names in _USAGE:
                name = next((n for n in names if src.get(n) is not None), None)
                if field in out or name is None:
                    continue
                v = src[name]
                if isinstance(v, bool) or not isinstance(v, int):
                    raise DataError(f"expected an integer, got {json_type(v)}",
                                    field=f"{where}.{label}.{name}" if label else f"{where}.{name}")
                out[field] = v
        cost = o.get("calculatedTotalCost")
        if cost is None and isinstance(o.get("costDetails"), dict):
            cost = o["costDetails"].get("total")
        if cost is not None:
            if isinstance(cost, bool) or not isinstance(cost, (int, float)):
                raise DataError(f"expected a number, got {json_type(cost)}", field=f"{where}.calculatedTotalCost")
            out["cost_usd"] = cost
        return out or None

    def tool(self, span: Span) -> dict[str, Any]:
        o = span.attrs
        value = maybe_json(o.get("input"))
        args = value if isinstance(value, dict) else ({} if value is None else {"input": value})
        attrs = _attributes(o)
        name = attrs.get("gen_ai.tool.name")
        call_id = attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call_id")
        if isinstance(call_id, list):  # Microsoft Agent Framework: [run id, call id]
            call_id = call_id[-1] if call_id else None
        result = maybe_json(o.get("output"))
        if result in (None, "", {}):  # Google ADK keeps the result in an attribute of its own
            raw = maybe_json(o.get("metadata"))
            raw = maybe_json(raw.get("attributes")) if isinstance(raw, dict) else None
            if isinstance(raw, dict) and raw.get("gcp.vertex.agent.tool_response") not in (None, "", {}):
                result = maybe_json(raw["gcp.vertex.agent.tool_response"])
        if not value and isinstance(attrs.get("gen_ai.tool.call.arguments"), (str, dict)):
            args = maybe_json(attrs["gen_ai.tool.call.arguments"])
            args = args if isinstance(args, dict) else {"input": args}
        return {"name": name if isinstance(name, str) and name else _tool_name(span.name),
                "arguments": args, "result": result,
                "error": error_of(span), "id": str(call_id) if call_id is not None else None}

    def documents(self, span: Span) -> list[str]:
        value = maybe_json(span.attrs.get("output"))
        if isinstance(value, dict):
            value = value.get("documents") or value.get("results") or []
        if not isinstance(value, list):
            return []
        docs = []
        for d in value:
            if isinstance(d, str):
                docs.append(d)
            elif isinstance(d, dict):
                content = d.get("page_content") or d.get("content") or d.get("text")
                if isinstance(content, str):
                    docs.append(content)
        return docs

    def io(self, span: Span) -> tuple[str | None, str | None]:
        return (_text(maybe_json(span.attrs.get("input")), "user"),
                _text(maybe_json(span.attrs.get("output")), "assistant"))

    def trace_meta(self, spans: list[Span]) -> dict[str, Any]:
        return {}


_CONVENTION = LangfuseConvention()
_TOOL_PREFIXES = ("running tool: ", "running tool ", "execute_tool ", "execute tool ", "tool: ", "tool.")
"""How instrumentations name a tool's span around the tool's name (pydantic-ai / logfire, Google ADK, ...)."""


def _tool_name(span_name: str) -> str:
    """The tool's name in a span name: a known prefix removed (used when no gen_ai.tool.name is recorded)."""
    for prefix in _TOOL_PREFIXES:
        if span_name.lower().startswith(prefix) and len(span_name) > len(prefix):
            return span_name[len(prefix):].strip()
    return span_name or "tool"


def _attributes(o: dict[str, Any]) -> dict[str, Any]:
    """An observation's OpenTelemetry attributes, flat (``metadata.attributes`` when ingested over OTLP)."""
    meta = maybe_json(o.get("metadata"))
    if not isinstance(meta, dict):
        return {}
    attrs = meta.get("attributes")
    attrs = maybe_json(attrs) if attrs is not None else meta
    return flatten(attrs) if isinstance(attrs, dict) else {}


def _span(o: dict[str, Any], trace_id: str, path: str, line: int, parent_default: str | None) -> Span:
    oid = o.get("id")
    if not isinstance(oid, str) or not oid:
        raise DataError("required field is missing" if oid is None else f"expected a string, got {json_type(oid)}",
                        field=join(path, "id"))
    level = o.get("level")
    return Span(trace_id=trace_id, span_id=oid, parent_id=o.get("parentObservationId") or parent_default,
                name=str(o.get("name") or ""), start_ns=any_time(o.get("startTime"), join(path, "startTime")),
                end_ns=any_time(o.get("endTime"), join(path, "endTime")), attrs=o, events=[],
                status="ERROR" if level == "ERROR" else "UNSET", status_message=o.get("statusMessage") or None,
                resource={}, line=line, field=path)


class _Trace:
    def __init__(self) -> None:
        self.record: dict[str, Any] | None = None
        self.spans: list[Span] = []
        self.line = 0
        self.issue: InputIssue | None = None


def _root(rec: dict[str, Any], trace_id: str, line: int, path: str) -> Span:
    start = any_time(rec.get("timestamp"), join(path, "timestamp"))
    latency = rec.get("latency")
    end = start + int(latency * 1e9) if start is not None and isinstance(latency, (int, float)) else None
    return Span(trace_id=trace_id, span_id=_ROOT, parent_id=None, name=str(rec.get("name") or "trace"),
                start_ns=start, end_ns=end, attrs={"input": rec.get("input"), "output": rec.get("output")}, events=[],
                status="UNSET", status_message=None, resource={}, line=line, field=path)


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    traces: dict[str, _Trace] = {}
    order = 0

    def add(value: Any, path: str, line: int) -> Iterator[Record]:
        nonlocal order
        trace_id = ""
        try:
            d = obj(value, path, "a Langfuse trace or observation object")
            if isinstance(d.get("data"), list) and not ({"traceId", "observations"} & d.keys()):
                for i, v in enumerate(d["data"]):
                    yield from add(v, join(path, f"data[{i}]") if path else f"data[{i}]", line)
                return
            if isinstance(d.get("trace"), dict) and "observations" in d and "id" not in d:
                d = {**d["trace"], "observations": d["observations"]}  # the UI's "download trace" file
                if not d.get("id"):
                    raise DataError("required field is missing", field=join(path, "trace.id"))
            if "observations" in d:
                trace_id = str(d.get("id") or "")
                if not trace_id:
                    raise DataError("required field is missing", field=join(path, "id"))
                t = traces.setdefault(trace_id, _Trace())
                t.record, t.line = d, t.line or line
                t.spans.append(_root(d, trace_id, line, path))
                obs = d["observations"]
                if not isinstance(obs, list):
                    raise DataError(f"expected an array, got {json_type(obs)}", field=join(path, "observations"))
                for i, o in enumerate(obs):
                    opath = join(join(path, "observations"), i)
                    if isinstance(o, str):
                        raise DataError("observations are ids only: export the trace with its observations "
                                        "(GET /api/public/traces/{id})", field=opath)
                    order += 1
                    span = _span(obj(o, opath), trace_id, opath, line, _ROOT)
                    span.order = order
                    t.spans.append(span)
            elif "traceId" in d:
                trace_id = str(d["traceId"])
                t = traces.setdefault(trace_id, _Trace())
                t.line = t.line or line
                order += 1
                span = _span(d, trace_id, path, line, None)
                span.order = order
                t.spans.append(span)
            else:
                raise DataError("expected a Langfuse trace (with 'observations') or an observation (with 'traceId')",
                                field=path or None)
        except (DataError, *UNEXPECTED) as exc:
            issue = (InputIssue(source, line, exc.field, exc.detail) if isinstance(exc, DataError)
                     else InputIssue(source, line, path or None, unexpected(exc)))
            if trace_id:
                t = traces.setdefault(trace_id, _Trace())
                t.issue = t.issue or issue
                t.line = t.line or line
            else:
                yield f"{source}:{line}", issue

    for item in iter_values(stream, source, unwrap=("data",)):
        if isinstance(item, InputIssue):
            yield f"{source}:{item.line}", item
            continue
        yield from add(item.value, item.path if item.key else "", item.line)
    for trace_id, t in traces.items():
        if t.issue is not None:
            i = t.issue
            yield f"{source}:{i.line}", InputIssue(i.source, i.line, i.field, f"{i.message} (trace {trace_id} not imported)")
            continue
        try:
            trace = assemble(trace_id, t.spans, _CONVENTION)
        except DataError as exc:
            line = exc.line if exc.line is not None else t.line
            yield f"{source}:{line}", InputIssue(source, line, exc.field, f"{exc.detail} (trace {trace_id} not imported)")
            continue
        except UNEXPECTED as exc:
            yield f"{source}:{t.line}", InputIssue(source, t.line, None, f"{unexpected(exc)} (trace {trace_id} not imported)")
            continue
        yield f"{source}:{t.line}", _with_record(trace, t.record)


def _with_record(trace: Any, rec: dict[str, Any] | None) -> Any:
    if rec is None:
        return trace
    meta = dict(trace.metadata)
    meta.pop("root_span", None)
    for key, name in (("name", "name"), ("sessionId", "session_id"), ("userId", "user_id"), ("tags", "tags"),
                      ("release", "release"), ("version", "version"), ("environment", "environment")):
        if rec.get(key) not in (None, [], ""):
            meta[name] = rec[key]
    trace_meta = maybe_json(rec.get("metadata"))  # a JSON string in the UI's download
    if isinstance(trace_meta, dict) and trace_meta:
        meta["trace_metadata"] = trace_meta
    scores = rec.get("scores")
    if isinstance(scores, list) and scores:
        meta["scores"] = {s.get("name"): s.get("value") for s in scores if isinstance(s, dict) and s.get("name")}
    update: dict[str, Any] = {"metadata": meta}
    latency = rec.get("latency")
    if trace.latency_ms is None and isinstance(latency, (int, float)) and not isinstance(latency, bool):
        update["latency_ms"] = latency * 1000.0
    return trace.model_copy(update=update)


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    rec = h.record
    if isinstance(rec, list):
        rec = rec[0] if rec else None
    if isinstance(rec, dict) and isinstance(rec.get("data"), list) and rec["data"]:
        rec = rec["data"][0]
    if isinstance(rec, dict):
        if isinstance(rec.get("observations"), list):
            if isinstance(rec.get("trace"), dict):
                return True
            return "id" in rec and not ({"resourceSpans", "resource_spans"} & rec.keys())
        return "traceId" in rec and str(rec.get("type", "")).upper() in _KINDS | {"EVENT": "", "EMBEDDING": "",
                                                                                 "EVALUATOR": "", "GUARDRAIL": ""}
    if h.complete:
        return False
    return "observations" in h.keys and bool({"id", "trace"} & h.keys) or (
        "traceId" in h.keys and "parentObservationId" in h.keys)


register_importer(Importer("langfuse", "Langfuse exports: traces with observations, or observation records", read,
                           sniff))
