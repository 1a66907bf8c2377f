"""LangSmith runs: exported run objects and the SDK's ``{"post": [...], "patch": [...]}`` payloads.

A run is ``{"id", "trace_id", "parent_run_id", "name", "run_type", "start_time", "end_time",
"inputs", "outputs", "error", "extra", "tags", "child_runs"}``; a trace is the runs sharing a
``trace_id``. Read: run objects one per line or in an array (``child_runs`` nested inside too), a
``{"runs": [...]}`` page, and the batch-ingest body the SDKs send, ``{"post": [runs], "patch":
[updates]}``, where each update (outputs, end time, error) is merged into the run it names (by
``id``, else by ``dotted_order``). Runs are assembled like spans: ``llm`` runs are the model calls
(their ``inputs`` / ``outputs`` read by the provider-neutral payload reader: chat messages, a
``chat.completion``, LangChain's ``generations``), ``tool`` runs the tool calls, ``retriever`` runs
the context; ``usage_metadata`` (or ``usage``) in the outputs is the usage.
"""

from __future__ import annotations

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
from ._spans import LlmCall, Span, assemble, error_of
from ._stream import iter_values
from .otel import message

_KINDS = {"llm": "llm", "tool": "tool", "retriever": "retriever", "chain": "chain", "prompt": "chain",
          "parser": "chain", "embedding": "other"}


def _text(value: Any, role: str) -> str | None:
    value = maybe_json(value)
    if value is None:
        return None
    msgs = normalise(value, role)
    if msgs:
        found = next((m["content"] for m in reversed(msgs) if m.get("role") == role and m.get("content")), None)
        if isinstance(found, str):
            return found
    if isinstance(value, dict):
        for key in ("input", "question", "query", "output", "answer", "text"):
            if isinstance(value.get(key), str):
                return value[key]
    return value if isinstance(value, str) else None


class LangSmithConvention:
    def kind(self, span: Span) -> str:
        return _KINDS.get(str(span.attrs.get("run_type", "")).lower(), "other")

    def agent_name(self, span: Span) -> str | None:
        return None

    def llm(self, span: Span) -> LlmCall:
        o = span.attrs
        call = LlmCall()
        for label, role, target in (("inputs", "user", call.inputs), ("outputs", "assistant", call.outputs)):
            value = maybe_json(o.get(label))
            msgs = normalise(value, role, where=join(span.field, label)) if value is not None else []
            if msgs is None:
                text = _text(value, role)
                msgs = [] if text is None else [{"role": role, "content": text}]
            target += [message(m, f"{span.field}.{label}[{i}]", role) for i, m in enumerate(msgs)]
        call.system = "\n\n".join(m.text for m in call.inputs if m.role in ("system", "developer") and m.text) or None
        out = o.get("outputs") if isinstance(o.get("outputs"), dict) else {}
        u = out.get("usage_metadata") or out.get("usage") or (out.get("llm_output") or {}).get("token_usage")
        if isinstance(u, dict):
            tokens = {"input_tokens": u.get("input_tokens", u.get("prompt_tokens")),
                      "output_tokens": u.get("output_tokens", u.get("completion_tokens")),
                      "total_tokens": u.get("total_tokens")}
            call.usage = {k: v for k, v in tokens.items() if isinstance(v, int) and not isinstance(v, bool)} or None
        meta = (o.get("extra") or {}).get("metadata") if isinstance(o.get("extra"), dict) else None
        model = out.get("model") or (meta or {}).get("ls_model_name")
        call.model = model if isinstance(model, str) else None
        return call

    def tool(self, span: Span) -> dict[str, Any]:
        o = span.attrs
        args = maybe_json(o.get("inputs"))
        if isinstance(args, dict) and set(args) == {"input"}:
            args = maybe_json(args["input"])
        result = maybe_json(o.get("outputs"))
        if isinstance(result, dict) and set(result) == {"output"}:
            result = maybe_json(result["output"])
        return {"name": span.name or "tool", "arguments": args if isinstance(args, dict) else (
                    {} if args is None else {"input": args}),
                "result": result, "error": error_of(span), "id": None}

    def documents(self, span: Span) -> list[str]:
        out = maybe_json(span.attrs.get("outputs"))
        docs = out.get("documents") if isinstance(out, dict) else out
        return [d.get("page_content") for d in docs or [] if isinstance(d, dict) and isinstance(d.get("page_content"), str)]

    def io(self, span: Span) -> tuple[str | None, str | None]:
        return _text(span.attrs.get("inputs"), "user"), _text(span.attrs.get("outputs"), "assistant")

    def trace_meta(self, spans: list[Span]) -> dict[str, Any]:
        return {}


_CONVENTION = LangSmithConvention()


def _span(run: dict[str, Any], path: str, line: int, order: int) -> Span:
    rid = run.get("id")
    if not isinstance(rid, str) or not rid:
        raise DataError("required field is missing" if rid is None else f"expected a string, got {json_type(rid)}",
                        field=join(path, "id"))
    error = run.get("error")
    return Span(trace_id=str(run.get("trace_id") or rid), span_id=rid, parent_id=run.get("parent_run_id") or None,
                name=str(run.get("name") or ""), start_ns=any_time(run.get("start_time"), join(path, "start_time")),
                end_ns=any_time(run.get("end_time"), join(path, "end_time")), attrs=run, events=[],
                status="ERROR" if error else "UNSET", status_message=str(error) if error else None, resource={},
                line=line, field=path, order=order)


def _runs(value: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every run in a value: a run (and its ``child_runs``), a list of runs, a page, a post/patch body."""
    if isinstance(value, list):
        for i, v in enumerate(value):
            yield from _runs(v, f"{path}[{i}]")
        return
    d = obj(value, path or "", "a LangSmith run object")
    if "post" in d or "patch" in d:
        posts = [obj(r, f"{join(path, 'post')}[{i}]") for i, r in enumerate(d.get("post") or [])]
        by_id = {r.get("id"): r for r in posts if r.get("id")}
        by_order = {r.get("dotted_order"): r for r in posts if r.get("dotted_order")}
        for i, upd in enumerate(d.get("patch") or []):
            upd = obj(upd, f"{join(path, 'patch')}[{i}]")
            target = by_id.get(upd.get("id")) or by_order.get(upd.get("dotted_order"))
            if target is None:
                posts.append(upd)  # an update of a run posted elsewhere: read what it holds
            else:
                target.update({k: v for k, v in upd.items() if v is not None})
        for i, r in enumerate(posts):
            yield from _runs(r, f"{join(path, 'post')}[{i}]")
        return
    if isinstance(d.get("runs"), list) and "run_type" not in d:
        yield from _runs(d["runs"], join(path, "runs"))
        return
    if "run_type" not in d:
        raise DataError("expected a LangSmith run (with 'run_type'), a {post, patch} body or a {runs} page",
                        field=path or None)
    yield path, d
    for i, child in enumerate(d.get("child_runs") or []):
        if isinstance(child, dict):
            child = {**child, "parent_run_id": child.get("parent_run_id") or d.get("id"),
                     "trace_id": child.get("trace_id") or d.get("trace_id") or d.get("id")}
            yield from _runs(child, f"{join(path, 'child_runs')}[{i}]")


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    traces: dict[str, list[Span]] = {}
    lines: dict[str, int] = {}
    order = 0
    for item in iter_values(stream, source):
        if isinstance(item, InputIssue):
            yield f"{source}:{item.line}", item
            continue
        try:
            for path, run in _runs(item.value, item.path if item.key else ""):
                order += 1
                span = _span(run, path, item.line, order)
                traces.setdefault(span.trace_id, []).append(span)
                lines.setdefault(span.trace_id, item.line)
        except DataError as exc:
            yield f"{source}:{item.line}", InputIssue(source, item.line, exc.field, exc.detail)
        except UNEXPECTED as exc:
            yield f"{source}:{item.line}", InputIssue(source, item.line, None, unexpected(exc))
    for trace_id, spans in traces.items():
        line = lines[trace_id]
        try:
            yield f"{source}:{line}", assemble(trace_id, spans, _CONVENTION)
        except DataError as exc:
            at = exc.line if exc.line is not None else line
            yield f"{source}:{at}", InputIssue(source, at, exc.field, f"{exc.detail} (trace {trace_id} not imported)")
        except UNEXPECTED as exc:
            yield f"{source}:{line}", InputIssue(source, line, None, f"{unexpected(exc)} (trace {trace_id} not imported)")


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    rec = h.first
    if isinstance(rec, dict):
        if isinstance(rec.get("post"), list) or isinstance(rec.get("patch"), list):
            first = (rec.get("post") or rec.get("patch") or [None])[0]
            return isinstance(first, dict) and ("run_type" in first or "dotted_order" in first)
        if isinstance(rec.get("runs"), list) and rec["runs"] and isinstance(rec["runs"][0], dict):
            rec = rec["runs"][0]
        return "run_type" in rec and "inputs" in rec and ("trace_id" in rec or "id" in rec)
    if h.complete:
        return False
    return (("post" in h.keys or "patch" in h.keys) and h.has('"run_type"')) or {"run_type", "inputs"} <= h.keys


register_importer(Importer("langsmith", "LangSmith runs: exported run objects and {post, patch} payloads", read,
                           sniff))
