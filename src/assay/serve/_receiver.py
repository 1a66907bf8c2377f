"""The OTLP/HTTP trace receiver: ``POST /v1/traces``, JSON or protobuf, optionally gzip-compressed.

As the OpenTelemetry Collector's receiver answers: ``200`` with an ``ExportTraceServiceResponse``
(``partialSuccess`` naming the spans refused), ``400`` for a body that cannot be read, ``413`` for
one too large, ``415`` for another content type, ``429``/``503`` with ``Retry-After`` when the
receiver is busy or its queue of unscored spans is full (the exporter retries those). The ``200``
is sent only once the spans are committed to the journal. Bound to a loopback address by default,
where the Host header must name that address (no DNS rebinding from a web page); on any other
address every request needs ``Authorization: Bearer TOKEN``.
"""

from __future__ import annotations

import hmac
import json
import sys
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import msgspec

from ..errors import DataError
from ..importers._common import join
from ..importers._otlp import otlp_spans
from ..importers._spans import Event, Span
from ..view import loopback_hosts
from ._journal import Journal
from ._protobuf import decode_export, encode_partial_success

PATH = "/v1/traces"


@dataclass
class Limits:
    """What one request, and the queue, may hold."""

    max_body: int = 16 * 1024 * 1024
    """Bytes of a request body after decompression (the Collector's default is 20 MiB)."""
    max_spans: int = 20_000
    """Spans in one request."""
    max_pending: int = 200_000
    """Spans journalled but not yet scored; past it the receiver answers 503 until the scorer catches up."""
    concurrency: int = 4
    """Requests read at once; more get 429 (each holds at most ``max_body`` bytes)."""
    retry_after_s: int = 2


@dataclass
class Counters:
    requests: int = 0
    spans: int = 0
    duplicates: int = 0
    rejected_spans: int = 0
    bad_requests: int = 0
    refused_busy: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def bump(self, **by: int) -> None:
        with self.lock:
            for k, v in by.items():
                setattr(self, k, getattr(self, k) + v)

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in ("requests", "spans", "duplicates", "rejected_spans", "bad_requests",
                                              "refused_busy")}


def journal_rows(export: Any, request: str) -> tuple[list[tuple[str, str, bool, str]], list[str]]:
    """The journal rows of an export's readable spans and one located message per span refused."""
    rows: list[tuple[str, str, bool, str]] = []
    problems: list[str] = []
    if not isinstance(export, dict):
        return rows, [f"{request}: expected {{\"resourceSpans\": [...]}}, got {type(export).__name__}"]
    key = "resourceSpans" if "resourceSpans" in export else "resource_spans"
    items = export.get(key) or []
    if not isinstance(items, list):
        return rows, [f"{request}: {key}: expected an array"]
    for i, rs in enumerate(items):
        path = join(key, i)
        for item in otlp_spans(rs, path, 0):
            if isinstance(item, Span):
                rows.append((item.trace_id, item.span_id, item.parent_id is None and item.end_ns is not None,
                             dump_span(item)))
            else:
                _, exc = item
                problems.append(f"{request}: {exc.field or path}: {exc.detail}")
    return rows, problems


_encode, _decode = msgspec.json.Encoder().encode, msgspec.json.Decoder().decode
_SPAN_FIELDS = ("trace_id", "span_id", "parent_id", "name", "start_ns", "end_ns", "attrs", "status", "status_message",
                "resource", "field")


def dump_span(span: Span) -> str:
    """A span as read (``otlp_spans``: the one conversion), as the journal keeps it."""
    d = {k: getattr(span, k) for k in _SPAN_FIELDS}
    d["events"] = [(e.name, e.time_ns, e.attrs) for e in span.events]
    return _encode(d).decode()


def load_span(body: str, order: int) -> Span:
    d = _decode(body)
    events = [Event(name, time_ns, attrs) for name, time_ns, attrs in d.pop("events")]
    return Span(**d, events=events, line=0, order=order)


class Receiver(ThreadingHTTPServer):
    """Accepts exports into ``journal``; ``token`` None only on a loopback address."""

    daemon_threads = True

    def __init__(self, journal: Journal, host: str, port: int, *, token: str | None, limits: Limits | None = None,
                 pending: Any = None, on_spans: Any = None, describe: Any = None, log: Any = None) -> None:
        super().__init__((host, port), _Handler)
        self.journal, self.token = journal, token
        self.limits = limits or Limits()
        self.counters = Counters()
        self.pending = pending or (lambda: 0)
        """Spans waiting to be scored (the scorer's count)."""
        self.on_spans = on_spans or (lambda added, roots: None)
        self.describe = describe or (lambda: {**self.counters.as_dict(), "pending_spans": self.pending()})
        """What ``GET /health`` answers."""
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.slots = threading.BoundedSemaphore(self.limits.concurrency)
        self._seq = 0
        self._seq_lock = threading.Lock()

    def next_request(self) -> int:
        with self._seq_lock:
            self._seq += 1
            return self._seq


class _Handler(BaseHTTPRequestHandler):
    server: Receiver
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    _slot_held = False
    """A reading slot taken by this request, not yet given back (``do_POST``)."""

    def _reply(self, status: int, body: bytes = b"", ctype: str = "application/json",
               headers: dict[str, str] | None = None) -> None:
        if self._slot_held:  # the request is read and handled: the next one may start before this reply is out
            self._slot_held = False
            self.server.slots.release()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str, *, drain: bool = False, **headers: str) -> None:
        if drain:
            self.close_connection = True  # the body was not read: the connection cannot be reused
        self._reply(status, json.dumps({"code": status, "message": message}).encode(), headers=headers)

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/health" and self._authorised():
            self._reply(200, json.dumps({"status": "ok", **self.server.describe()}).encode())
            return
        self._error(404, f"not found: {self.path} (POST OTLP traces to {PATH})", drain=True)

    def _authorised(self) -> bool:
        token = self.server.token
        if token is None:  # loopback: a web page cannot reach the receiver by rebinding a DNS name to 127.0.0.1
            if self.headers.get("Host", "") in loopback_hosts(self.server.server_address[1]):
                return True
            self._error(421, "unexpected Host header: send to 127.0.0.1, localhost or [::1] with the port",
                        drain=True)
            return False
        given = self.headers.get("Authorization", "")
        ok = given.startswith("Bearer ") and hmac.compare_digest(given[7:].strip().encode(), token.encode())
        if not ok:
            self._error(401, "a token is needed: send 'Authorization: Bearer TOKEN' (printed by assay serve)",
                        drain=True)
        return ok

    def do_POST(self) -> None:
        srv = self.server
        if self.path.split("?")[0] != PATH:
            self._error(404, f"not found: {self.path} (POST OTLP traces to {PATH})", drain=True)
            return
        if not self._authorised():
            return
        limits = srv.limits
        if srv.pending() >= limits.max_pending:
            srv.counters.bump(refused_busy=1)
            self._error(503, f"{srv.pending()} spans are waiting to be scored: retry later", drain=True,
                        **{"Retry-After": str(limits.retry_after_s)})
            return
        if not srv.slots.acquire(blocking=False):
            srv.counters.bump(refused_busy=1)
            self._error(429, f"{limits.concurrency} requests are being read: retry later", drain=True,
                        **{"Retry-After": str(limits.retry_after_s)})
            return
        self._slot_held = True
        try:
            self._export(srv.next_request())
        finally:
            if self._slot_held:  # (the reply gives it back first, so an exporter's next request is not refused)
                self._slot_held = False
                srv.slots.release()

    def _export(self, n: int) -> None:
        srv, limits = self.server, self.server.limits
        where = f"request {n} from {self.client_address[0]}"
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        proto = ctype in ("application/x-protobuf", "application/protobuf")
        if not proto and ctype != "application/json":
            srv.counters.bump(bad_requests=1)
            self._error(415, f"Content-Type {ctype or '(none)'!r}: send application/x-protobuf or application/json",
                        drain=True)
            return
        try:
            length = int(self.headers.get("Content-Length") or "")
        except ValueError:
            srv.counters.bump(bad_requests=1)
            self._error(411, "a Content-Length is required", drain=True)
            return
        if length > limits.max_body or length < 0:
            srv.counters.bump(bad_requests=1)
            srv.log(f"assay serve: {where}: body of {length} bytes refused (limit {limits.max_body})")
            self._error(413, f"body of {length} bytes; the limit is {limits.max_body}", drain=True)
            return
        body = self.rfile.read(length)
        try:
            body = _decompress(body, (self.headers.get("Content-Encoding") or "").strip().lower(), limits.max_body)
            export = decode_export(body) if proto else json.loads(body)
        except _TooLarge as exc:
            srv.counters.bump(bad_requests=1)
            srv.log(f"assay serve: {where}: {exc}")
            self._error(413, str(exc))
            return
        except (DataError, ValueError, zlib.error, EOFError) as exc:
            srv.counters.bump(bad_requests=1)
            message = str(exc) if isinstance(exc, DataError) else f"cannot read the body: {exc}"
            srv.log(f"assay serve: {where}: {message}")
            self._error(400, message)
            return
        rows, problems = journal_rows(export, where)
        if len(rows) + len(problems) > limits.max_spans:
            srv.counters.bump(bad_requests=1)
            self._error(413, f"{len(rows) + len(problems)} spans in one request; the limit is {limits.max_spans}")
            return
        for line in problems[:20]:
            srv.log(f"assay serve: span refused: {line}")
        if len(problems) > 20:
            srv.log(f"assay serve: {where}: {len(problems) - 20} more spans refused")
        added, dups = srv.journal.add(rows) if rows else (0, 0)  # committed before the reply
        srv.counters.bump(requests=1, spans=added, duplicates=dups, rejected_spans=len(problems))
        if added:
            srv.on_spans(added, sum(1 for r in rows if r[2]))
        message = "; ".join(problems[:5])
        if proto:
            self._reply(200, encode_partial_success(len(problems), message), "application/x-protobuf")
        else:
            reply: dict[str, Any] = {}
            if problems:
                reply["partialSuccess"] = {"rejectedSpans": len(problems), "errorMessage": message}
            self._reply(200, json.dumps(reply).encode())


class _TooLarge(Exception):
    pass


def _decompress(body: bytes, encoding: str, limit: int) -> bytes:
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise ValueError(f"Content-Encoding {encoding!r} is not supported (gzip, deflate or none)")
    d = zlib.decompressobj(wbits=47 if encoding == "gzip" else 15)  # 47: gzip or zlib header
    out = d.decompress(body, limit + 1)
    if len(out) > limit or d.unconsumed_tail:
        raise _TooLarge(f"the body decompresses to more than {limit} bytes")
    return out
