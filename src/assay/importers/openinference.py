"""OpenInference spans (Arize Phoenix and the openinference-instrumentation-* packages).

Read from OTLP JSON (as for ``otel``) or from flat span records as Phoenix exports them (a JSON
array or JSON Lines of ``{"name", "context": {"trace_id", "span_id"}, "parent_id", "span_kind",
"start_time", "end_time", "status_code", "attributes"}``; attributes flat with dotted keys,
nested, or as ``attributes.*`` columns). Spans are grouped by trace id into one Trace each.

``openinference.span.kind`` says what a span is: ``LLM`` spans make the turns
(``llm.input_messages`` / ``llm.output_messages``, ``llm.token_count.*``, ``llm.model_name``),
``TOOL`` spans the tool calls (``tool.name``; arguments from ``input.value``, else
``tool.parameters``; result from ``output.value``), ``RETRIEVER`` spans the turn's context
(``retrieval.documents.N.document.content``), ``AGENT`` spans the agents, and a root ``CHAIN``
or ``AGENT`` span's ``input.value`` / ``output.value`` stand in for a turn's input and output
when no LLM span records messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError
from ._common import Record, arguments, maybe_json
from ._errors import json_type
from ._registry import Importer, register_importer
from ._sniff import inspect
from ._otlp import is_flat_span, read_spans
from ._spans import LlmCall, Msg, Span, error_of, flatten, indexed

_KINDS = {"LLM": "llm", "TOOL": "tool", "AGENT": "agent", "RETRIEVER": "retriever", "CHAIN": "chain"}
_TEXT_KEYS = ("input", "query", "question", "message", "content", "text", "user_input", "output", "answer",
              "response", "result")


class OpenInferenceConvention:
    def __init__(self) -> None:
        self._flat: dict[int, dict[str, Any]] = {}

    def flat(self, span: Span) -> dict[str, Any]:
        f = self._flat.get(id(span))
        if f is None:
            f = self._flat[id(span)] = flatten(span.attrs)
        return f

    def kind(self, span: Span) -> str:
        kind = self.flat(span).get("openinference.span.kind")
        return _KINDS.get(str(kind).upper(), "other") if kind is not None else "other"

    def agent_name(self, span: Span) -> str | None:
        f = self.flat(span)
        name = f.get("agent.name") or f.get("graph.node.name")
        if isinstance(name, str) and name:
            return name
        return span.name if self.kind(span) == "agent" else None

    def _message(self, m: dict[str, Any], where: str, default_role: str) -> Msg:
        msg = Msg(str(m.get("message.role") or default_role))
        content = m.get("message.content")
        texts: list[str] = [content] if isinstance(content, str) else []
        thoughts: list[str] = []
        for c in indexed(m, "message.contents"):
            kind, text = c.get("message_content.type"), c.get("message_content.text")
            if isinstance(text, str):
                (thoughts if kind == "reasoning" else texts).append(text)
        for j, c in enumerate(indexed(m, "message.tool_calls")):
            name = c.get("tool_call.function.name")
            if not isinstance(name, str):
                raise DataError("required field is missing", field=f"{where}.message.tool_calls.{j}.tool_call.function.name")
            call_id = c.get("tool_call.id")
            msg.calls.append({"name": name, "id": str(call_id) if call_id is not None else None,
                              "arguments": arguments(c.get("tool_call.function.arguments"),
                                                     f"{where}.message.tool_calls.{j}.tool_call.function.arguments")})
        text = "\n".join(texts) if texts else None
        if msg.role in ("tool", "function"):
            msg.results.append((m.get("message.tool_call_id"), maybe_json(text)))
            text = None
        msg.text = text
        msg.reasoning = "\n".join(thoughts) if thoughts else None
        return msg

    def _messages(self, span: Span, prefix: str, default_role: str) -> list[Msg]:
        f = self.flat(span)
        return [self._message(m, span.at(f"{prefix}.{i}"), default_role)
                for i, m in enumerate(indexed(f, prefix))]

    def llm(self, span: Span) -> LlmCall:
        f = self.flat(span)
        call = LlmCall(inputs=self._messages(span, "llm.input_messages", "user"),
                       outputs=self._messages(span, "llm.output_messages", "assistant"))
        if not call.inputs:
            prompts = [p.get("prompt.text") for p in indexed(f, "llm.prompts")] or (
                f.get("llm.prompts") if isinstance(f.get("llm.prompts"), list) else [])
            texts = [p for p in prompts if isinstance(p, str)]
            if not texts and (v := self.text(f, "input")) is not None:
                texts = [v]
            call.inputs = [Msg("user", t) for t in texts]
        if not call.outputs:
            texts = [c.get("completion.text") for c in indexed(f, "llm.choices")]
            texts = [t for t in texts if isinstance(t, str)]
            if not texts and (v := self.text(f, "output")) is not None:
                texts = [v]
            call.outputs = [Msg("assistant", t) for t in texts]
        call.system = "\n\n".join(m.text for m in call.inputs if m.role in ("system", "developer") and m.text) or None
        usage: dict[str, Any] = {}
        for field, attr in (("input_tokens", "llm.token_count.prompt"), ("output_tokens", "llm.token_count.completion"),
                            ("total_tokens", "llm.token_count.total"), ("cost_usd", "llm.cost.total")):
            v = f.get(attr)
            if v is None:
                continue
            ok = isinstance(v, (int, float)) if field == "cost_usd" else isinstance(v, int)
            if isinstance(v, bool) or not ok:
                want = "a number" if field == "cost_usd" else "an integer"
                raise DataError(f"expected {want}, got {json_type(v)}", field=span.at(attr))
            usage[field] = v
        call.usage = usage or None
        model = f.get("llm.model_name") or f.get("llm.response.model_name") or f.get("llm.request.model_name")
        call.model = model if isinstance(model, str) else None
        return call

    def tool(self, span: Span) -> dict[str, Any]:
        f = self.flat(span)
        name = f.get("tool.name")
        value = f.get("input.value")
        if value is not None:
            parsed = maybe_json(value)
            args = parsed if isinstance(parsed, dict) else {"input": parsed}
        else:
            args = arguments(f.get("tool.parameters"), span.at("tool.parameters"))
        call_id = f.get("tool.id") or f.get("tool_call.id")
        return {"name": name if isinstance(name, str) and name else span.name, "arguments": args,
                "result": maybe_json(f.get("output.value")), "error": error_of(span),
                "id": str(call_id) if call_id is not None else None}

    def documents(self, span: Span) -> list[str]:
        docs = []
        for i, d in enumerate(indexed(self.flat(span), "retrieval.documents")):
            content = d.get("document.content")
            if content is None:
                continue
            if not isinstance(content, str):
                raise DataError(f"expected a string, got {json_type(content)}",
                                field=span.at(f"retrieval.documents.{i}.document.content"))
            docs.append(content)
        return docs

    def text(self, f: dict[str, Any], prefix: str) -> str | None:
        """``input.value`` / ``output.value`` as text: the message inside a JSON payload when there is one."""
        v = f.get(f"{prefix}.value")
        if not isinstance(v, str):
            return None if v is None else str(v)
        parsed = maybe_json(v)
        if isinstance(parsed, dict):
            for key in _TEXT_KEYS:
                if isinstance(parsed.get(key), str):
                    return parsed[key]
            msgs = parsed.get("messages")
            if isinstance(msgs, list) and msgs and isinstance(msgs[-1], dict) and isinstance(msgs[-1].get("content"), str):
                return msgs[-1]["content"]
        return v

    def io(self, span: Span) -> tuple[str | None, str | None]:
        f = self.flat(span)
        return self.text(f, "input"), self.text(f, "output")

    def trace_meta(self, spans: list[Span]) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        for s in spans:
            f = self.flat(s)
            for attr, key in (("session.id", "session_id"), ("user.id", "user_id"), ("tag.tags", "tags"),
                              ("llm.provider", "provider"), ("llm.system", "provider")):
                if key not in meta and f.get(attr) is not None:
                    meta[key] = f[attr]
            if "span_metadata" not in meta and s.attrs.get("metadata") is not None:
                meta["span_metadata"] = maybe_json(s.attrs["metadata"])
            if "service_name" not in meta and s.resource.get("service.name") is not None:
                meta["service_name"] = s.resource["service.name"]
        return meta


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    return read_spans(stream, source, OpenInferenceConvention(), flat=True)


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    if {"resourceSpans", "resource_spans"} & h.keys:
        return h.has("openinference.span.kind")
    rec = h.first
    if isinstance(rec, dict):
        return is_flat_span(rec) and ("span_kind" in rec or h.has("openinference.span.kind"))
    if not h.complete:
        return h.has("openinference.span.kind") and bool({"context", "span_kind", "context.span_id"} & h.keys)
    return False


register_importer(Importer("openinference", "OpenInference spans (Phoenix): OTLP JSON or flat span records", read, sniff))

__all__ = ["OpenInferenceConvention"]
