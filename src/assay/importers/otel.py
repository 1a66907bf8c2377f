"""OpenTelemetry traces with the GenAI semantic conventions, as OTLP JSON.

Files are what the collector's file exporter and the OTLP JSON exporters write: one
``{"resourceSpans": [...]}`` export, or one per line. Spans are grouped by ``traceId`` into one
Trace each. What a span did comes from ``gen_ai.operation.name``: ``chat`` (also
``text_completion``, ``generate_content``) spans are model calls and make the turns,
``execute_tool`` spans the tool calls, ``invoke_agent`` spans the agents (nested ones become
``agents`` and ``handoffs``), ``create_agent`` spans are listed in the metadata.

Message content is read from ``gen_ai.input.messages`` / ``gen_ai.output.messages`` /
``gen_ai.system_instructions`` (JSON strings or structured values, on the span or on a
``gen_ai.client.inference.operation.details`` event), or from the older forms: ``gen_ai.prompt``
/ ``gen_ai.completion`` (JSON, as attributes or ``gen_ai.content.*`` events, or flattened as
``gen_ai.prompt.0.role``) and the per-message ``gen_ai.{system,user,assistant,tool}.message`` and
``gen_ai.choice`` events.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError
from ._common import Record, arguments, maybe_json
from ._errors import json_type
from ._registry import Importer, register_importer
from ._limits import RecordError, loads
from ._sniff import inspect
from ._otlp import read_spans
from ._payload import normalise
from ._spans import Event, LlmCall, Msg, Span, error_of, indexed

_OPS = {"chat": "llm", "text_completion": "llm", "generate_content": "llm", "completion": "llm",
        "execute_tool": "tool", "invoke_agent": "agent", "create_agent": "create_agent", "retrieval": "retriever",
        "invoke_workflow": "chain"}
_DETAILS = "gen_ai.client.inference.operation.details"
_MESSAGE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                   "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}


def _json(value: Any, where: str) -> Any:
    if isinstance(value, str):
        try:
            return loads(value)
        except RecordError as exc:
            raise DataError(exc.message, field=where) from None
        except ValueError as exc:
            raise DataError(f"not valid JSON ({exc})", field=where) from None
    return value


def messages(value: Any, where: str, default_role: str = "user") -> list[Msg]:
    """Messages in the GenAI JSON shape (role + parts), or the older role + content shape."""
    value = _json(value, where)
    if isinstance(value, dict) and not ("role" in value or "parts" in value or "content" in value):
        msgs = normalise(value, default_role, where=where)  # a provider's payload: a request, a response
        if msgs is not None:
            return [message(m, f"{where}[{i}]", default_role) for i, m in enumerate(msgs)]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise DataError(f"expected an array of messages, got {json_type(value)}", field=where)
    return [message(m, f"{where}[{i}]", default_role) for i, m in enumerate(value)]


_PLAIN_BLOCKS = (None, "text", "input_text", "output_text")


def message(m: Any, where: str, default_role: str) -> Msg:
    if not isinstance(m, dict):
        raise DataError(f"expected a message object, got {json_type(m)}", field=where)
    content = m.get("content")
    if "parts" not in m and isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") not in _PLAIN_BLOCKS for b in content):
        return _merged(normalise([m], default_role, where=where) or [], where, default_role, m)
    msg = Msg(str(m.get("role") or default_role))
    texts: list[str] = []
    thoughts: list[str] = []
    parts = m.get("parts")
    if isinstance(parts, list):
        for j, part in enumerate(parts):
            if not isinstance(part, dict):
                continue
            kind, ppath = part.get("type"), f"{where}.parts[{j}]"
            if kind == "text" and isinstance(part.get("content"), str):
                texts.append(part["content"])
            elif kind == "reasoning" and isinstance(part.get("content"), str):
                thoughts.append(part["content"])
            elif kind == "tool_call":
                msg.calls.append(_call(part, ppath))
            elif kind == "tool_call_response":
                msg.results.append((part.get("id"), maybe_json(part.get("response", part.get("result")))))
    else:
        content = m.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [b.get("text") or b.get("content") for b in content
                      if isinstance(b, dict) and isinstance(b.get("text") or b.get("content"), str)]
            texts += [b for b in content if isinstance(b, str)]
        calls = _json(m.get("tool_calls"), f"{where}.tool_calls") or []
        if not isinstance(calls, list):
            raise DataError(f"expected an array, got {json_type(calls)}", field=f"{where}.tool_calls")
        for j, c in enumerate(calls):
            msg.calls.append(_call(c, f"{where}.tool_calls[{j}]"))
        if msg.role == "tool":
            msg.results.append((m.get("tool_call_id") or m.get("id"), maybe_json("\n".join(texts) if texts else None)))
            texts = []
        if isinstance(m.get("reasoning_content"), str) and m["reasoning_content"]:
            thoughts.append(m["reasoning_content"])
    msg.text = "\n".join(texts) if texts else None
    msg.reasoning = "\n".join(thoughts) if thoughts else None
    return msg


def _merged(msgs: list[dict[str, Any]], where: str, default_role: str, original: dict[str, Any]) -> Msg:
    """One message whose content blocks the payload reader split (Anthropic tool_use / tool_result,
    Vercel tool-call / tool-result parts) as one Msg: its text, calls and the results it carries."""
    out = Msg(str(original.get("role") or default_role))
    texts: list[str] = []
    for i, m in enumerate(msgs):
        part = message(m, f"{where}[{i}]", default_role)
        if part.text and m.get("role") != "tool":
            texts.append(part.text)
        out.calls += part.calls
        out.results += part.results
        if part.reasoning:
            out.reasoning = part.reasoning if out.reasoning is None else out.reasoning + "\n" + part.reasoning
    out.text = "\n".join(texts) if texts else None
    if out.role == "model":
        out.role = "assistant"
    return out


def _call(c: Any, where: str) -> dict[str, Any]:
    if not isinstance(c, dict):
        raise DataError(f"expected a tool call object, got {json_type(c)}", field=where)
    fn = c.get("function") if isinstance(c.get("function"), dict) else c
    if not isinstance(fn.get("name"), str):
        raise DataError("required field is missing", field=f"{where}.name")
    return {"name": fn["name"], "arguments": arguments(fn.get("arguments"), f"{where}.arguments"),
            "id": str(c["id"]) if c.get("id") is not None else None}


def _events(span: Span) -> list[Event]:
    """The span's events, and those pydantic-ai / logfire's first instrumentation version keeps in
    one ``events`` attribute (a JSON array of ``{"event.name", ...}`` objects) instead."""
    packed = span.attrs.get("events", span.attrs.get("all_messages_events"))
    if packed is None:
        return span.events
    packed = maybe_json(packed)
    if not isinstance(packed, list):
        return span.events
    return span.events + [Event(str(e.get("event.name")), None, {k: v for k, v in e.items() if k != "event.name"})
                          for e in packed if isinstance(e, dict) and e.get("event.name")]


def _flattened(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``gen_ai.prompt.0.role`` style attributes as message dicts."""
    out = []
    for item in indexed(attrs, prefix):
        calls = indexed(item, "tool_calls")
        m = {k: v for k, v in item.items() if not k.startswith("tool_calls.")}
        if calls:
            m["tool_calls"] = calls
        out.append(m)
    return out


_LLM_REQUESTS = {"chat", "completion"}
_TRACELOOP_KINDS = {"tool": "tool", "agent": "agent", "workflow": "chain", "task": "other"}
_ENTITY_KEYS = ("input", "query", "question", "message", "content", "text", "output", "answer", "response", "result")


def _entity_text(value: Any) -> str | None:
    """``traceloop.entity.input`` / ``output`` as text: the message inside the SDK's JSON payload."""
    if value is None:
        return None
    parsed = maybe_json(value) if isinstance(value, str) else value
    if isinstance(parsed, dict):
        inner = parsed.get("kwargs") if isinstance(parsed.get("kwargs"), dict) else parsed
        for key in _ENTITY_KEYS:
            if isinstance(inner.get(key), str):
                return inner[key]
        args = parsed.get("args")
        if isinstance(args, list) and len(args) == 1 and isinstance(args[0], str):
            return args[0]
    return value if isinstance(value, str) else json.dumps(value)


class OtelConvention:
    """The GenAI semantic conventions (current and older attribute names)."""

    def kind(self, span: Span) -> str:
        op = span.attrs.get("gen_ai.operation.name")
        if not isinstance(op, str):
            first = span.name.split(" ", 1)[0]
            op = first if first in _OPS else None
        if op in _OPS:
            return _OPS[op]
        request = span.attrs.get("llm.request.type")  # OpenLLMetry: 'openai.chat' spans
        if request in _LLM_REQUESTS:
            return "llm"
        entity = span.attrs.get("traceloop.span.kind")
        if entity in _TRACELOOP_KINDS:
            return _TRACELOOP_KINDS[entity]
        return "tool" if "gen_ai.tool.name" in span.attrs else "other"

    def agent_name(self, span: Span) -> str | None:
        name = span.attrs.get("gen_ai.agent.name")
        if isinstance(name, str) and name:
            return name
        if span.attrs.get("traceloop.span.kind") == "agent":
            name = span.attrs.get("traceloop.entity.name")
            return name if isinstance(name, str) and name else span.name.removesuffix(".agent")
        head, _, rest = span.name.partition(" ")
        return rest.strip() or None if head in ("invoke_agent", "create_agent") else None

    def _find(self, span: Span, attr: str, legacy: str, legacy_event: str) -> tuple[Any, str] | None:
        if attr in span.attrs:
            return span.attrs[attr], span.at(attr)
        for e in span.events:
            if e.name == _DETAILS and attr in e.attrs:
                return e.attrs[attr], f"{span.field}.events[{e.name}].attributes[{attr}]"
        if not legacy:
            return None
        if legacy in span.attrs:
            return span.attrs[legacy], span.at(legacy)
        for e in span.events:
            if e.name == legacy_event and legacy in e.attrs:
                return e.attrs[legacy], f"{span.field}.events[{e.name}].attributes[{legacy}]"
        return None

    def llm(self, span: Span) -> LlmCall:
        call = LlmCall()
        found = self._find(span, "gen_ai.input.messages", "gen_ai.prompt", "gen_ai.content.prompt")
        if found is not None:
            call.inputs = messages(found[0], found[1])
        elif flat := _flattened(span.attrs, "gen_ai.prompt"):
            call.inputs = [message(m, span.at(f"gen_ai.prompt.{i}"), "user") for i, m in enumerate(flat)]
        elif flat := _flattened(span.attrs, "llm.prompts"):  # OpenLLMetry before the gen_ai.* names
            call.inputs = [message(m, span.at(f"llm.prompts.{i}"), "user") for i, m in enumerate(flat)]
        else:
            for e in _events(span):
                if e.name in _MESSAGE_EVENTS:
                    call.inputs.append(message({"role": _MESSAGE_EVENTS[e.name], **e.attrs},
                                               f"{span.field}.events[{e.name}]", "user"))
        found = self._find(span, "gen_ai.output.messages", "gen_ai.completion", "gen_ai.content.completion")
        if found is not None:
            call.outputs = messages(found[0], found[1], "assistant")
        elif flat := _flattened(span.attrs, "gen_ai.completion"):
            call.outputs = [message(m, span.at(f"gen_ai.completion.{i}"), "assistant") for i, m in enumerate(flat)]
        elif flat := _flattened(span.attrs, "llm.completions"):
            call.outputs = [message(m, span.at(f"llm.completions.{i}"), "assistant") for i, m in enumerate(flat)]
        else:
            for e in _events(span):
                if e.name == "gen_ai.choice":
                    body = _json(e.attrs.get("message"), f"{span.field}.events[gen_ai.choice].message") or e.attrs
                    call.outputs.append(message(body, f"{span.field}.events[gen_ai.choice]", "assistant"))
        system = [m.text for m in call.inputs if m.role in ("system", "developer") and m.text]
        found = self._find(span, "gen_ai.system_instructions", "", "")
        if found is not None:
            value = _json(found[0], found[1]) if isinstance(found[0], str) and found[0].lstrip()[:1] in "[{" else found[0]
            if isinstance(value, str):
                system.insert(0, value)
            elif isinstance(value, list):
                system[:0] = [p.get("content") for p in value if isinstance(p, dict) and isinstance(p.get("content"), str)]
        call.system = "\n\n".join(system) or None
        call.usage = self._usage(span)
        model = span.attrs.get("gen_ai.response.model") or span.attrs.get("gen_ai.request.model")
        call.model = model if isinstance(model, str) else None
        return call

    def _usage(self, span: Span) -> dict[str, Any] | None:
        out = {}
        for field, names in (("input_tokens", ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                                               "llm.usage.prompt_tokens")),
                             ("output_tokens", ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                                                "llm.usage.completion_tokens")),
                             ("total_tokens", ("gen_ai.usage.total_tokens", "llm.usage.total_tokens"))):
            for name in names:
                v = span.attrs.get(name)
                if v is None:
                    continue
                if isinstance(v, bool) or not isinstance(v, int):
                    raise DataError(f"expected an integer, got {json_type(v)}", field=span.at(name))
                out[field] = v
                break
        return out or None

    def tool(self, span: Span) -> dict[str, Any]:
        if "gen_ai.tool.name" not in span.attrs and span.attrs.get("traceloop.span.kind") == "tool":
            return self._traceloop_tool(span)
        name = span.attrs.get("gen_ai.tool.name")
        if not isinstance(name, str) or not name:
            head, _, rest = span.name.partition(" ")
            name = rest.strip() if head == "execute_tool" and rest.strip() else span.name
        call_id = span.attrs.get("gen_ai.tool.call.id")
        return {"name": name,
                "arguments": arguments(span.attrs.get("gen_ai.tool.call.arguments"), span.at("gen_ai.tool.call.arguments")),
                "result": maybe_json(span.attrs.get("gen_ai.tool.call.result")), "error": error_of(span),
                "id": str(call_id) if call_id is not None else None}

    def _traceloop_tool(self, span: Span) -> dict[str, Any]:
        """A ``@tool`` span of the Traceloop SDK: the entity's name, input and output."""
        name = span.attrs.get("traceloop.entity.name")
        name = name if isinstance(name, str) and name else span.name.removesuffix(".tool")
        where = span.at("traceloop.entity.input")
        value = span.attrs.get("traceloop.entity.input")
        args: Any = _json(value, where) if isinstance(value, str) and value.lstrip()[:1] == "{" else value
        if isinstance(args, dict) and set(args) <= {"args", "kwargs"}:  # the SDK records the Python call
            kwargs = args.get("kwargs") if isinstance(args.get("kwargs"), dict) else {}
            positional = args.get("args") or []
            args = {**({"args": positional} if positional else {}), **kwargs}
        if args is None:
            args = {}
        elif not isinstance(args, dict):
            args = {"input": args}
        output = maybe_json(span.attrs.get("traceloop.entity.output"))
        return {"name": name, "arguments": args, "result": output, "error": error_of(span), "id": None}

    def documents(self, span: Span) -> list[str]:
        value = span.attrs.get("gen_ai.retrieval.documents")
        if value is None:
            return []
        value = _json(value, span.at("gen_ai.retrieval.documents"))
        if not isinstance(value, list):
            raise DataError(f"expected an array, got {json_type(value)}", field=span.at("gen_ai.retrieval.documents"))
        return [d if isinstance(d, str) else str(d.get("content") or d.get("text") or "")
                for d in value if isinstance(d, (str, dict))]

    def io(self, span: Span) -> tuple[str | None, str | None]:
        if "traceloop.entity.input" in span.attrs or "traceloop.entity.output" in span.attrs:
            return _entity_text(span.attrs.get("traceloop.entity.input")), _entity_text(
                span.attrs.get("traceloop.entity.output"))
        first = last = None
        if "gen_ai.input.messages" in span.attrs:
            ins = messages(span.attrs["gen_ai.input.messages"], span.at("gen_ai.input.messages"))
            first = next((m.text for m in reversed(ins) if m.role == "user" and m.text), None)
        if "gen_ai.output.messages" in span.attrs:
            outs = messages(span.attrs["gen_ai.output.messages"], span.at("gen_ai.output.messages"), "assistant")
            last = next((m.text for m in reversed(outs) if m.text), None)
        return first, last

    def trace_meta(self, spans: list[Span]) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        for s in spans:
            for attr, key in (("gen_ai.conversation.id", "conversation_id"), ("gen_ai.provider.name", "provider"),
                              ("gen_ai.system", "provider"), ("traceloop.workflow.name", "workflow_name")):
                if key not in meta and s.attrs.get(attr) is not None:
                    meta[key] = s.attrs[attr]
            if "service_name" not in meta and s.resource.get("service.name") is not None:
                meta["service_name"] = s.resource["service.name"]
        created = []
        for s in spans:
            if self.kind(s) == "create_agent":
                entry = {"name": self.agent_name(s), "id": s.attrs.get("gen_ai.agent.id"),
                         "description": s.attrs.get("gen_ai.agent.description"),
                         "model": s.attrs.get("gen_ai.request.model")}
                created.append({k: v for k, v in entry.items() if v is not None})
        if created:
            meta["created_agents"] = created
        return meta


_CONVENTION = OtelConvention()


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    return read_spans(stream, source, _CONVENTION, flat=False)


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    return bool({"resourceSpans", "resource_spans"} & h.keys) and not h.has("openinference.span.kind")


register_importer(Importer("otel", "OpenTelemetry OTLP JSON with GenAI semantic conventions (gen_ai.*)", read, sniff))

__all__ = ["OtelConvention"]
