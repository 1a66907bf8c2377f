"""Reading spans: OTLP JSON and flat span records (Phoenix) -> ``Span``, grouped into traces.

OTLP JSON is ``{"resourceSpans": [...]}``, one export per file or per line (camelCase or
snake_case keys, hex or base64 ids, nanosecond times as numbers or strings). Flat records are
Phoenix's ``{"name", "context": {"trace_id", "span_id"}, "parent_id", "span_kind", ...}``.
Spans are grouped by trace id, so every span of a file is held until its end (a trace's spans
may be anywhere in it). A span that cannot be read turns its whole trace into an InputIssue.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import IO, Any

from ..errors import DataError
from ..model import InputIssue
from ._common import UNEXPECTED, Record, join, obj, unexpected
from ._errors import json_type
from ._spans import EPOCH, Convention, Event, Span, assemble
from ._stream import iter_values

_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR", "STATUS_CODE_UNSET": "UNSET", "STATUS_CODE_OK": "OK",
           "STATUS_CODE_ERROR": "ERROR", "UNSET": "UNSET", "OK": "OK", "ERROR": "ERROR"}


# ---------------------------------------------------------------- time and ids

def nanos(value: Any, path: str) -> int | None:
    """OTLP times: nanoseconds since 1970, as a number or a decimal string."""
    if value is None or value == "" or value == "0" or value == 0:
        return None
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise DataError(f"expected nanoseconds since 1970 (an integer or a string of digits), got {value!r}", field=path)


def any_time(value: Any, path: str) -> int | None:
    """Flat-record times: ISO 8601 text, or a number in s, ms, us or ns since 1970 (told by size)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        if value.isdigit():
            return any_time(int(value), path)
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise DataError(f"not an ISO 8601 time: {value!r}", field=path) from None
        when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
        delta = when - EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for limit, scale in ((10**11, 10**9), (10**14, 10**6), (10**17, 10**3)):
            if abs(value) < limit:
                return value * scale if isinstance(value, int) else round(value * scale)
        return int(value)
    raise DataError(f"expected a time, got {json_type(value)}", field=path)


def hex_id(value: Any, path: str, size: int) -> str:
    """A trace or span id as lowercase hex (OTLP JSON uses hex; protobuf JSON, base64)."""
    if not isinstance(value, str) or not value:
        raise DataError("required field is missing" if value in (None, "") else f"expected a string, got {json_type(value)}",
                        field=path)
    if len(value) == size * 2:
        try:
            int(value, 16)
            return value.lower()
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value, validate=True)
        if len(raw) == size:
            return raw.hex()
    except (binascii.Error, ValueError):
        pass
    return value


# ---------------------------------------------------------------- OTLP JSON

def any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as plain Python (kvlists become dicts, arrays lists)."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "string_value"):
        if key in v:
            return v[key]
    for key in ("intValue", "int_value"):
        if key in v:
            x = v[key]
            return int(x) if isinstance(x, str) and x.lstrip("-").isdigit() else x
    for key in ("doubleValue", "double_value", "boolValue", "bool_value", "bytesValue", "bytes_value"):
        if key in v:
            return v[key]
    for key in ("arrayValue", "array_value"):
        if key in v:
            return [any_value(x) for x in (v[key] or {}).get("values", [])]
    for key in ("kvlistValue", "kvlist_value"):
        if key in v:
            return {kv.get("key"): any_value(kv.get("value")) for kv in (v[key] or {}).get("values", [])}
    return None


def attributes(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):  # some exporters write a plain map
        return dict(value)
    if not isinstance(value, list):
        raise DataError(f"expected an array of key/value pairs, got {json_type(value)}", field=path)
    out: dict[str, Any] = {}
    for i, kv in enumerate(value):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise DataError("expected {\"key\": ..., \"value\": {...}}", field=join(path, i))
        out[kv["key"]] = any_value(kv.get("value"))
    return out


def _array(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise DataError(f"expected an array, got {json_type(value)}", field=path)
    return value


def _get(d: dict[str, Any], camel: str, snake: str) -> Any:
    return d[camel] if camel in d else d.get(snake)


def otlp_spans(rs: Any, path: str, line: int) -> Iterator[Span | tuple[str, DataError]]:
    """The spans of one ``ResourceSpans``; a bad span yields (its trace id or '', DataError)."""
    try:
        rs = obj(rs, path)
        res = obj(rs.get("resource") or {}, join(path, "resource"))
        resource = attributes(res.get("attributes"), join(path, "resource.attributes"))
        key = next((k for k in ("scopeSpans", "scope_spans", "instrumentationLibrarySpans",
                                "instrumentation_library_spans") if k in rs), "scopeSpans")
        scopes = rs.get(key) or []
        if not isinstance(scopes, list):
            raise DataError(f"expected an array, got {json_type(scopes)}", field=join(path, key))
    except DataError as exc:
        yield "", exc
        return
    except UNEXPECTED as exc:
        yield "", DataError(unexpected(exc), field=path)
        return
    for i, ss in enumerate(scopes):
        spath = join(join(path, key), i)
        spans = ss.get("spans") if isinstance(ss, dict) else None
        if not isinstance(spans, list):
            yield "", DataError(f"expected {{\"spans\": [...]}}, got {json_type(ss)}", field=spath)
            continue
        for j, sp in enumerate(spans):
            fpath = join(join(spath, "spans"), j)
            trace_id = ""
            try:
                s = obj(sp, fpath)
                trace_id = hex_id(_get(s, "traceId", "trace_id"), join(fpath, "traceId"), 16)
                yield _otlp_span(s, fpath, line, trace_id, resource)
            except DataError as exc:
                yield trace_id, exc
            except UNEXPECTED as exc:
                yield trace_id, DataError(unexpected(exc), field=fpath)


def _otlp_span(s: dict[str, Any], path: str, line: int, trace_id: str, resource: dict[str, Any]) -> Span:
    parent = _get(s, "parentSpanId", "parent_span_id")
    status = s.get("status") or {}
    code = status.get("code", 0) if isinstance(status, dict) else 0
    events = []
    for k, e in enumerate(_array(s.get("events"), join(path, "events"))):
        epath = join(join(path, "events"), k)
        e = obj(e, epath)
        events.append(Event(str(e.get("name", "")), nanos(_get(e, "timeUnixNano", "time_unix_nano"), join(epath, "timeUnixNano")),
                            attributes(e.get("attributes"), join(epath, "attributes"))))
    return Span(trace_id=trace_id, span_id=hex_id(_get(s, "spanId", "span_id"), join(path, "spanId"), 8),
                parent_id=hex_id(parent, join(path, "parentSpanId"), 8) if parent else None,
                name=str(s.get("name", "")),
                start_ns=nanos(_get(s, "startTimeUnixNano", "start_time_unix_nano"), join(path, "startTimeUnixNano")),
                end_ns=nanos(_get(s, "endTimeUnixNano", "end_time_unix_nano"), join(path, "endTimeUnixNano")),
                attrs=attributes(s.get("attributes"), join(path, "attributes")), events=events,
                status=_STATUS.get(code, "UNSET") if isinstance(code, (int, str)) else "UNSET",
                status_message=(status.get("message") or None) if isinstance(status, dict) else None,
                resource=resource, line=line, field=path)


def is_flat_span(value: Any) -> bool:
    """A span record as Phoenix exports it (context.trace_id / span_id, span_kind, attributes)."""
    if not isinstance(value, dict):
        return False
    ctx = value.get("context")
    has_ids = (isinstance(ctx, dict) and "span_id" in ctx) or "context.span_id" in value or (
        "span_id" in value and "trace_id" in value)
    return has_ids and ("name" in value or "span_kind" in value)


def flat_trace_id(d: dict[str, Any], path: str) -> str:
    ctx = d.get("context") if isinstance(d.get("context"), dict) else {}
    return hex_id(ctx.get("trace_id", d.get("context.trace_id", d.get("trace_id"))), join(path, "context.trace_id"), 16)


def flat_span(value: Any, path: str, line: int) -> Span:
    d = obj(value, path)
    ctx = d.get("context") if isinstance(d.get("context"), dict) else {}
    trace_id = flat_trace_id(d, path)
    span_id = hex_id(ctx.get("span_id", d.get("context.span_id", d.get("span_id"))), join(path, "context.span_id"), 8)
    parent = d.get("parent_id", d.get("parent_span_id"))
    attrs = dict(d["attributes"]) if isinstance(d.get("attributes"), dict) else {}
    attrs.update({k[len("attributes."):]: v for k, v in d.items() if k.startswith("attributes.") and v is not None})
    if d.get("span_kind") is not None:
        attrs.setdefault("openinference.span.kind", d["span_kind"])
    events = []
    for k, e in enumerate(_array(d.get("events"), join(path, "events"))):
        epath = join(join(path, "events"), k)
        e = obj(e, epath)
        events.append(Event(str(e.get("name", "")), any_time(e.get("timestamp"), join(epath, "timestamp")),
                            attributes(e.get("attributes"), join(epath, "attributes"))))
    status = d.get("status_code") or "UNSET"
    return Span(trace_id=trace_id, span_id=span_id, parent_id=str(parent) if parent else None,
                name=str(d.get("name", "")), start_ns=any_time(d.get("start_time"), join(path, "start_time")),
                end_ns=any_time(d.get("end_time"), join(path, "end_time")), attrs=attrs, events=events,
                status=_STATUS.get(str(status).upper(), "UNSET"), status_message=d.get("status_message") or None,
                resource={}, line=line, field=path)


# ---------------------------------------------------------------- reading

_RS_KEYS = ("resourceSpans", "resource_spans")


def read_spans(stream: IO[bytes], source: str, convention: Convention, *, flat: bool) -> Iterator[Record]:
    """Every trace of the file; each needs all its spans, so traces come at the end of the file."""
    traces: dict[str, list[Span]] = {}
    broken: dict[str, InputIssue] = {}
    order = 0

    def take(items: Iterator[Any]) -> Iterator[Record]:
        nonlocal order
        for item in items:
            if isinstance(item, Span):
                order += 1
                item.order = order
                if item.trace_id not in broken:
                    traces.setdefault(item.trace_id, []).append(item)
            else:
                trace_id, exc, line = item
                issue = InputIssue(source, line, exc.field, exc.detail)
                if trace_id:
                    if trace_id not in broken:
                        broken[trace_id] = issue
                        traces.pop(trace_id, None)
                else:
                    yield f"{source}:{line}", issue

    for item in iter_values(stream, source, unwrap=_RS_KEYS):
        if isinstance(item, InputIssue):
            yield f"{source}:{item.line}", item
            continue
        yield from take(_spans_of(item.value, item.path if item.key else "", item.key, item.line, flat))
    for trace_id, spans in traces.items():
        first = min(spans, key=lambda s: s.order)
        try:
            trace = assemble(trace_id, spans, convention)
        except DataError as exc:
            line = exc.line if exc.line is not None else first.line
            yield f"{source}:{line}", InputIssue(source, line, exc.field, f"{exc.detail} (trace {trace_id} not imported)")
            continue
        except UNEXPECTED as exc:
            yield f"{source}:{first.line}", InputIssue(source, first.line, None,
                                                       f"{unexpected(exc)} (trace {trace_id} not imported)")
            continue
        yield f"{source}:{first.line}", trace
    for trace_id, issue in broken.items():
        yield f"{source}:{issue.line}", InputIssue(issue.source, issue.line, issue.field,
                                                    f"{issue.message} (trace {trace_id} not imported)")


def _spans_of(value: Any, path: str, key: str | None, line: int, flat: bool) -> Iterator[Any]:
    def located(items: Iterator[Any]) -> Iterator[Any]:
        for item in items:
            yield item if isinstance(item, Span) else (item[0], item[1], line)

    if key is not None:
        yield from located(otlp_spans(value, path, line))
    elif isinstance(value, dict) and any(k in value for k in _RS_KEYS):
        k = next(k for k in _RS_KEYS if k in value)
        items = value[k]
        if not isinstance(items, list):
            yield "", DataError(f"expected an array, got {json_type(items)}", field=join(path, k)), line
            return
        for i, rs in enumerate(items):
            yield from located(otlp_spans(rs, join(join(path, k), i), line))
    elif flat and isinstance(value, list):
        for i, v in enumerate(value):
            yield from _spans_of(v, join(path, i), None, line, flat)
    elif flat and is_flat_span(value):
        trace_id = ""
        try:
            trace_id = flat_trace_id(value, path)
            yield flat_span(value, path, line)
        except DataError as exc:  # with the trace id known, the whole trace is set aside
            yield trace_id, exc, line
        except UNEXPECTED as exc:
            yield trace_id, DataError(unexpected(exc), field=path or None), line
    else:
        what = "an OTLP export ({\"resourceSpans\": [...]}) or a span record" if flat else \
            "an OTLP export ({\"resourceSpans\": [...]})"
        yield "", DataError(f"expected {what}, got {json_type(value)}" + (
            f" with keys {sorted(value)[:5]}" if isinstance(value, dict) else ""), field=path or None), line
