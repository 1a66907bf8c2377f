"""OTLP protobuf trace exports -> the OTLP JSON shape the span readers already take.

A small reader of the protobuf wire format for the messages of ``ExportTraceServiceRequest``
(opentelemetry-proto ``trace/v1``, ``common/v1``, ``resource/v1``), so that protobuf is not a
dependency of assay: the output is the dict that the JSON encoding of the same request parses to
(camelCase keys, hex ids, nanoseconds as integers), and ``importers._otlp.otlp_spans`` turns it into
spans as it does a file. Unknown fields are skipped, as protobuf readers do; a truncated or
malformed message raises DataError naming the byte offset and the message path.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Iterator
from typing import Any

from ..errors import DataError

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class _Bad(Exception):
    pass


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise _Bad("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _Bad("varint longer than 10 bytes")


def _fields(buf: bytes, pos: int, end: int) -> Iterator[tuple[int, int, Any, int]]:
    """(field number, wire type, value, offset) of each field in buf[pos:end]; LEN values as (start, stop)."""
    value: Any
    while pos < end:
        at = pos
        key, pos = _varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _Bad(f"field number 0 at byte {at}")
        if wire == _VARINT:
            value, pos = _varint(buf, pos, end)
        elif wire == _I64:
            if pos + 8 > end:
                raise _Bad(f"truncated 64-bit field {number} at byte {at}")
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == _LEN:
            size, pos = _varint(buf, pos, end)
            if pos + size > end:
                raise _Bad(f"field {number} at byte {at} says {size} bytes, {end - pos} are left")
            value, pos = (pos, pos + size), pos + size
        elif wire == _I32:
            if pos + 4 > end:
                raise _Bad(f"truncated 32-bit field {number} at byte {at}")
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise _Bad(f"wire type {wire} (field {number}) at byte {at} is not one OTLP uses")
        yield number, wire, value, at


def _text(buf: bytes, span: tuple[int, int]) -> str:
    try:
        return buf[span[0]:span[1]].decode("utf-8")
    except UnicodeDecodeError:
        raise _Bad(f"a string at byte {span[0]} is not UTF-8") from None


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _any(buf: bytes, at: tuple[int, int], depth: int) -> dict[str, Any]:
    start, end = at
    if depth > 32:
        raise _Bad(f"values nested more than 32 deep at byte {start}")
    out: dict[str, Any] = {}
    for number, wire, value, _ in _fields(buf, start, end):
        if number == 1 and wire == _LEN:
            out = {"stringValue": _text(buf, value)}
        elif number == 2 and wire == _VARINT:
            out = {"boolValue": bool(value)}
        elif number == 3 and wire == _VARINT:
            out = {"intValue": _signed(value)}
        elif number == 4 and wire == _I64:
            out = {"doubleValue": struct.unpack("<d", value)[0]}
        elif number == 5 and wire == _LEN:
            out = {"arrayValue": {"values": [_any(buf, v, depth + 1) for n, w, v, _ in _fields(buf, *value)
                                             if n == 1 and w == _LEN]}}
        elif number == 6 and wire == _LEN:
            out = {"kvlistValue": {"values": _kvs(buf, value, depth + 1)}}
        elif number == 7 and wire == _LEN:
            out = {"bytesValue": base64.b64encode(buf[value[0]:value[1]]).decode()}
    return out


def _kv(buf: bytes, at: tuple[int, int], depth: int) -> dict[str, Any]:
    start, end = at
    kv: dict[str, Any] = {"key": "", "value": {}}
    for number, wire, value, _ in _fields(buf, start, end):
        if number == 1 and wire == _LEN:
            kv["key"] = _text(buf, value)
        elif number == 2 and wire == _LEN:
            kv["value"] = _any(buf, value, depth)
    return kv


def _kvs(buf: bytes, span: tuple[int, int], depth: int) -> list[dict[str, Any]]:
    return [_kv(buf, v, depth) for n, w, v, _ in _fields(buf, *span) if n == 1 and w == _LEN]


def _u64(value: bytes) -> int:
    return struct.unpack("<Q", value)[0]


def _event(buf: bytes, start: int, end: int) -> dict[str, Any]:
    e: dict[str, Any] = {}
    attrs: list[dict[str, Any]] = []
    for number, wire, value, _ in _fields(buf, start, end):
        if number == 1 and wire == _I64:
            e["timeUnixNano"] = _u64(value)
        elif number == 2 and wire == _LEN:
            e["name"] = _text(buf, value)
        elif number == 3 and wire == _LEN:
            attrs.append(_kv(buf, value, 0))
    e["attributes"] = attrs
    return e


def _span(buf: bytes, start: int, end: int) -> dict[str, Any]:
    s: dict[str, Any] = {}
    attrs: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    for number, wire, value, _ in _fields(buf, start, end):
        if wire == _LEN and number in (1, 2, 4):
            raw = buf[value[0]:value[1]]
            if raw:
                s[{1: "traceId", 2: "spanId", 4: "parentSpanId"}[number]] = raw.hex()
        elif number == 5 and wire == _LEN:
            s["name"] = _text(buf, value)
        elif number == 6 and wire == _VARINT:
            s["kind"] = value
        elif number in (7, 8) and wire == _I64:
            s["startTimeUnixNano" if number == 7 else "endTimeUnixNano"] = _u64(value)
        elif number == 9 and wire == _LEN:
            attrs.append(_kv(buf, value, 0))
        elif number == 11 and wire == _LEN:
            events.append(_event(buf, *value))
        elif number == 15 and wire == _LEN:
            status: dict[str, Any] = {}
            for n, w, v, _ in _fields(buf, *value):
                if n == 2 and w == _LEN:
                    status["message"] = _text(buf, v)
                elif n == 3 and w == _VARINT:
                    status["code"] = v
            s["status"] = status
    s["attributes"] = attrs
    s["events"] = events
    return s


def decode_export(buf: bytes) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` as ``{"resourceSpans": [...]}``; DataError when it is malformed."""
    out: list[dict[str, Any]] = []
    where = "resourceSpans"
    try:
        for i, (_number, wire, value, _) in enumerate(f for f in _fields(buf, 0, len(buf)) if f[0] == 1):
            where = f"resourceSpans[{i}]"
            if wire != _LEN:
                raise _Bad("expected a message")
            rs: dict[str, Any] = {"resource": {"attributes": []}, "scopeSpans": []}
            for n, w, v, _ in _fields(buf, *value):
                if n == 1 and w == _LEN:
                    rs["resource"]["attributes"] = [_kv(buf, kv, 0) for m, x, kv, _ in _fields(buf, *v)
                                                    if m == 1 and x == _LEN]
                elif n == 2 and w == _LEN:
                    j = len(rs["scopeSpans"])
                    where = f"resourceSpans[{i}].scopeSpans[{j}]"
                    spans: list[dict[str, Any]] = []
                    for m, x, sv, _ in _fields(buf, *v):
                        if m == 2 and x == _LEN:
                            where = f"resourceSpans[{i}].scopeSpans[{j}].spans[{len(spans)}]"
                            spans.append(_span(buf, *sv))
                    rs["scopeSpans"].append({"spans": spans})
            out.append(rs)
    except _Bad as exc:
        raise DataError(f"malformed OTLP protobuf: {exc}", field=where) from None
    return {"resourceSpans": out}


def encode_partial_success(rejected: int, message: str) -> bytes:
    """An ``ExportTraceServiceResponse`` with ``partial_success`` set (empty when nothing was rejected)."""
    if not rejected and not message:
        return b""
    body = b""
    if rejected:
        body += b"\x08" + _put_varint(rejected)
    if message:
        raw = message.encode()
        body += b"\x12" + _put_varint(len(raw)) + raw
    return b"\x0a" + _put_varint(len(body)) + body


def _put_varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)
