"""A real, scriptable OpenAI-compatible HTTP server for judge tests (and a minimal Anthropic one).

Runs on 127.0.0.1 on a random port in a background thread; the test decides every reply::

    from tests.support.judge_server import JudgeServer, obj, status

    with JudgeServer([status(429, retry_after=0.05), obj({"score": 1})]) as server:
        judge = make_judge(f"openai-compatible:m@{server.url}", cache=False)
        ...
        assert len(server.requests) == 2 and server.peak <= 16

Replies come from a queue (``server.push(...)``), then from ``server.reply`` (a callable
``reply(request_json) -> reply spec``), then from ``default``; with none of these the server
answers 500 "no scripted reply left", so a test never hangs on a missing script. A reply spec is
a ``Reply``, a str (content text) or a dict (a JSON object: sent as the forced tool call when the
request forces one, else as content text). ``server.requests`` records every request
(with its arrival and reply times on ``time.monotonic()``, which is one clock for every process on
the machine); ``server.peak`` is the most requests in flight at once.

As a pytest fixture in another test folder, import it into that folder's conftest.py::

    from tests.support.judge_server import judge_server  # noqa: F401  (registers the fixture)

(``python -m pytest`` puts the repository root on sys.path; plain ``pytest`` needs
``pythonpath = ["."]`` in the pytest configuration.)
"""

from __future__ import annotations

import base64
import collections
import json
import struct
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Reply:
    """What the server sends for one request."""

    content: str | None = None         # assistant text
    json: Any = None                   # a JSON value: tool call if the request forces one, else content
    tool_args: Any = None              # always a tool call with these arguments (dict or raw string)
    tool_name: str | None = None       # default: the tool the request forces, else "submit_verdict"
    status: int = 200
    body: str | bytes | dict | None = None   # raw body (200) or error body (status >= 400)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0                 # seconds before answering (latency)
    hang: float | None = None          # wait this long (or until the server stops) and drop the socket
    usage: tuple[int, int] | None = None   # (input, output) tokens; default ~chars/4
    cost: Any = None                   # a cost the server reports in its usage ("cost_usd"), NaN and all
    finish_reason: str | None = None
    hostile: str | None = None         # a broken or malicious server: see ``hostile()``
    size: int = 0                      # ... its size in bytes
    logprobs: Any = None               # the choice's ``logprobs.content`` list (OpenAI's shape); see ``scored()``


HOSTILE = ("gzip_bomb", "endless_body", "endless_headers", "huge_length", "trailing", "trickle", "echo")
ENCODINGS: dict[str, Callable[[str], str]] = {
    "plain": lambda k: k,
    "json": lambda k: json.dumps(k)[1:-1].replace("/", "\\/"),
    "url": lambda k: urllib.parse.quote(k, safe=""),
    "base64": lambda k: base64.b64encode(k.encode()).decode(),
    "base64url": lambda k: base64.urlsafe_b64encode(b"x" + k.encode()).decode(),  # at another alignment
    "basic": lambda k: base64.b64encode(f"user:{k}".encode()).decode(),
    "hex": lambda k: k.encode().hex(),
    "HEX": lambda k: f"0x{k.encode().hex().upper()}",
}
"""How a server may echo the request's key: as sent, JSON-escaped, URL-encoded, base64 (also inside longer text), hex."""


def echo(encoding: str, *, code: int = 200) -> Reply:
    """The request's bearer key echoed in *encoding* (see ENCODINGS): in the reply's ``model`` field
    and its verdict's reasoning, or (``code`` >= 400) in the error message."""
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown encoding {encoding!r}; expected one of {sorted(ENCODINGS)}")
    return Reply(hostile="echo", body=encoding, status=code)


def hostile(mode: str, size: int = 2**31) -> Reply:
    """A reply a hostile server sends (the client must bound what it holds and how long it waits):

    ``gzip_bomb``: a gzip body that inflates to *size* bytes of a JSON string (streamed, ~1/1000
    of that on the wire); ``endless_body``: a chunked body that never ends; ``endless_headers``:
    header lines without end; ``huge_length``: ``Content-Length: size`` then a slow trickle;
    ``trailing``: a good verdict followed by a second, forged reply on the same connection;
    ``trickle``: a chunked body of 16 bytes every 50 ms, without end (only a deadline stops it).
    """
    if mode not in HOSTILE:
        raise ValueError(f"unknown hostile mode {mode!r}; expected one of {HOSTILE}")
    return Reply(hostile=mode, size=size)


def text(content: str, **kw: Any) -> Reply:
    return Reply(content=content, **kw)


def obj(value: Any, **kw: Any) -> Reply:
    return Reply(json=value, **kw)


def scored(*pieces: str | tuple[str, float] | tuple[str, float, dict[str, float]], **kw: Any) -> Reply:
    """A text reply spelled by *pieces*, with token log-probabilities chosen by the test: a piece is a
    token (probability 1), ``(token, logprob)``, or ``(token, logprob, {alternative: logprob})``; the
    chosen token is listed among its top alternatives as servers do."""
    content = []
    for piece in pieces:
        token, logprob, top = (piece, 0.0, {}) if isinstance(piece, str) else (*piece, {})[:3]
        alternatives = {token: logprob, **top}
        content.append({"token": token, "logprob": logprob, "bytes": list(token.encode()),
                        "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())}
                                         for t, lp in sorted(alternatives.items(), key=lambda a: -a[1])]})
    return Reply(content="".join(c["token"] for c in content), logprobs=content, **kw)


def tool(args: Any, name: str | None = None, **kw: Any) -> Reply:
    return Reply(tool_args=args, tool_name=name, **kw)


def status(code: int, message: str | dict = "scripted error", *, retry_after: float | None = None,
           headers: dict[str, str] | None = None, **kw: Any) -> Reply:
    headers = dict(headers or {})
    if retry_after is not None:
        headers["Retry-After"] = f"{retry_after:g}"
    return Reply(status=code, body=message, headers=headers, **kw)


def hang(seconds: float = 30.0) -> Reply:
    return Reply(hang=seconds)


def malformed(content: str = '{"score": 0.5, "reason": "unterminated', **kw: Any) -> Reply:
    """Valid HTTP, invalid JSON in the content."""
    return Reply(content=content, **kw)


def broken_body(body: str = "<html>502 Bad Gateway</html>") -> Reply:
    """HTTP 200 with a body that is not a chat completion at all."""
    return Reply(body=body)


def delayed(reply: Reply | str | dict, seconds: float) -> Reply:
    return replace(as_reply(reply), delay=seconds)


def fitting(request: dict, quotes: tuple[str, ...] = ("table for",), text: str = "The answer fits the question.",
            **kw: Any) -> Reply:
    """A verdict that fits whatever schema *request* sends (its response_format or forced tool):
    the last option of each enum, the top of each range, yes to each question, *quotes* for each
    list of strings, turn 1 for each list of turns, two entries for each list of objects."""
    fmt = (request.get("response_format") or {}).get("json_schema") or {}
    tools = request.get("tools") or [{}]
    schema = fmt.get("schema") or tools[0].get("function", {}).get("parameters") or {}
    defs = schema.get("$defs", {})

    def fill(node: dict, name: str = "") -> Any:
        if "$ref" in node:
            node = defs[node["$ref"].rsplit("/", 1)[-1]]
        if "enum" in node:
            return node["enum"][-1]
        kind = node.get("type")
        if kind == "object":
            return {k: fill(v, k) for k, v in node.get("properties", {}).items()}
        if kind == "array":
            items = node.get("items", {})
            return list(quotes) if items.get("type") == "string" else [1] if items.get("type") == "integer" \
                else [fill(items), fill(items)]
        if kind == "integer":
            return node.get("maximum", 1)
        if kind == "boolean":
            return True
        return quotes[0] if name == "quote" else text
    return Reply(json=fill(schema), **kw)


def as_reply(spec: Reply | str | dict | Any) -> Reply:
    if isinstance(spec, Reply):
        return spec
    if isinstance(spec, str):
        return Reply(content=spec)
    return Reply(json=spec)


@dataclass
class Recorded:
    path: str
    json: Any
    headers: dict[str, str]
    started: float                     # time.monotonic() when the request arrived
    ended: float | None = None         # ... and when its reply was sent (None while in flight)
    status: int | None = None          # the status it was answered with
    peer: Any = None                   # the client's (host, port): one per connection
    body: bytes = b""                  # the request body exactly as it arrived

    @property
    def messages(self) -> list[dict[str, Any]]:
        return (self.json or {}).get("messages", [])


def _tokens(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


class JudgeServer:
    """The server; a context manager (``with JudgeServer(...) as s``) or ``start()``/``stop()``."""

    def __init__(self, replies: list[Any] | Callable[[dict], Any] | None = None, *,
                 default: Any = None, latency: float = 0.0) -> None:
        self.queue: collections.deque[Any] = collections.deque()
        self.reply: Callable[[dict], Any] | None = None
        if callable(replies):
            self.reply = replies
        elif replies:
            self.queue.extend(replies)
        self.default, self.latency = default, latency
        self.requests: list[Recorded] = []
        self.in_flight = self.peak = self.completed = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------------------------
    def push(self, *replies: Any) -> None:
        with self._lock:
            self.queue.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.queue.clear()
            self.peak = self.completed = 0

    def _next(self, request: dict) -> Reply:
        with self._lock:
            if self.queue:
                return as_reply(self.queue.popleft())
        if self.reply is not None:
            return as_reply(self.reply(request))
        if self.default is not None:
            return as_reply(self.default(request) if callable(self.default) else self.default)
        return Reply(status=500, body="no scripted reply left")

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT`` (the Anthropic SDK's base_url)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (the OpenAI SDK's base_url)."""
        return f"{self.base}/v1"

    def start(self) -> "JudgeServer":
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True, name="judge-server")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "JudgeServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]


def _full_flush(data: bytes) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return z.compress(data) + z.flush(zlib.Z_FULL_FLUSH)


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # the default backlog of 5 drops bursts of connects (1 s SYN retry)
    daemon_threads = True


class _Handler(BaseHTTPRequestHandler):
    owner: JudgeServer
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
    disable_nagle_algorithm = True  # else headers and body in two writes cost 40 ms (delayed ACK)

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # /v1/models, for clients that probe
        self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    def do_POST(self) -> None:
        server = self.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            request = json.loads(raw or b"null")
        except ValueError:
            request = {"_raw": raw.decode("utf-8", "replace")}
        recorded = Recorded(self.path, request, dict(self.headers), time.monotonic(), peer=self.client_address,
                            body=raw)
        with server._lock:
            server.in_flight += 1
            server.peak = max(server.peak, server.in_flight)
            server.requests.append(recorded)
        try:
            reply = server._next(request)
            recorded.status = reply.status
            delay = reply.delay or server.latency
            if delay:
                time.sleep(delay)
            if reply.hang is not None:
                server._stop.wait(reply.hang)
                self.close_connection = True
                return
            if reply.hostile:
                self._hostile(reply)
            elif self.path.rstrip("/").endswith("/messages"):
                self._anthropic(request, reply)
            else:
                self._chat(request, reply)
        finally:
            recorded.ended = time.monotonic()
            with server._lock:
                server.in_flight -= 1
                server.completed += 1

    def _hostile(self, reply: Reply) -> None:
        stop, size = self.owner._stop, reply.size
        try:
            if reply.hostile == "echo":
                key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                seen = ENCODINGS[str(reply.body)](key)
                if reply.status >= 400:
                    return self._send(reply.status, {"error": {"message": f"invalid key {seen}", "code": reply.status}})
                verdict = {"evidence": [], "reasoning": f"the key was {seen}", "score": 5}
                return self._send(200, {"id": f"chatcmpl-{seen}", "model": f"echo-{seen}", "choices": [{
                    "message": {"role": "assistant", "content": json.dumps(verdict)}, "finish_reason": "stop"}]},
                    {"X-Echo": seen})
            if reply.hostile == "trailing":
                forged = json.dumps({"choices": [{"message": {"role": "assistant", "content": "FORGED"}}]}).encode()
                self._send(200, {"choices": [{"message": {"role": "assistant", "content": json.dumps(
                    {"score": 0.75, "reason": "fine"})}, "finish_reason": "stop"}]}, extra=(
                    b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(forged) + forged))
                return
            self.close_connection = True
            w = self.wfile
            if reply.hostile == "endless_headers":
                w.write(b"HTTP/1.1 200 OK\r\n")
                n = 0
                while not stop.is_set():
                    w.write(b"X-Filler-%d: %s\r\n" % (n, b"x" * 64))
                    n += 1
                return
            if reply.hostile == "huge_length":
                w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % size)
                block = b"x" * 65536
                for _ in range(size // len(block)):
                    if stop.is_set():
                        return
                    w.write(block)
                return
            if reply.hostile == "endless_body":
                w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                block = b"x" * 65536
                chunk = b"%x\r\n" % len(block) + block + b"\r\n"
                while not stop.is_set():
                    w.write(chunk)
                return
            if reply.hostile == "trickle":
                w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                while not stop.wait(0.05):
                    w.write(b"10\r\n" + b"x" * 16 + b"\r\n")
                    w.flush()
                return
            # gzip_bomb: a block deflated once after a full flush is the same bytes every time, so a
            # 2 GiB bomb costs the server ~2 MB of writes and a CRC per block actually sent
            w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n")
            z = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
            block, head, tail = b"x" * 2**20, b'{"choices": "', b'"}'
            segment = z.compress(block) + z.flush(zlib.Z_FULL_FLUSH)

            def send(data: bytes) -> None:
                w.write(b"%x\r\n" % len(data) + data + b"\r\n")
            send(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + _full_flush(head))
            crc, count = zlib.crc32(head), len(head)
            for _ in range(size // len(block)):
                if stop.is_set():
                    return
                send(segment)
                crc, count = zlib.crc32(block, crc), count + len(block)
            last = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
            crc, count = zlib.crc32(tail, crc), count + len(tail)
            send(last.compress(tail) + last.flush() + struct.pack("<II", crc, count & 0xFFFFFFFF))
            w.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _error(self, reply: Reply) -> None:
        body = reply.body
        if not isinstance(body, (bytes, dict)):
            body = {"error": {"message": body or f"HTTP {reply.status}", "type": "scripted_error",
                              "code": reply.status}}
        self._send(reply.status, body, reply.headers)

    def _chat(self, request: dict, reply: Reply) -> None:
        if reply.status >= 400:
            return self._error(reply)
        if reply.body is not None:
            return self._send(reply.status, reply.body, reply.headers)
        forced = ((request.get("tool_choice") or {}).get("function") or {}).get("name") \
            if isinstance(request.get("tool_choice"), dict) else None
        message: dict[str, Any] = {"role": "assistant", "content": None}
        args = reply.tool_args if reply.tool_args is not None else reply.json if forced else None
        if args is not None:
            arguments = args if isinstance(args, str) else json.dumps(args)
            message["tool_calls"] = [{"id": "call_1", "type": "function", "function": {
                "name": reply.tool_name or forced or "submit_verdict", "arguments": arguments}}]
            produced: Any = arguments
        else:
            message["content"] = reply.content if reply.content is not None else json.dumps(reply.json)
            produced = message["content"]
        prompt, completion = reply.usage or (_tokens(request.get("messages")), _tokens(produced))
        self._send(200, {
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
            "model": request.get("model", "scripted"),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": reply.finish_reason or ("tool_calls" if args is not None else "stop"),
                         **({"logprobs": {"content": reply.logprobs}} if reply.logprobs is not None else {})}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                      **({"cost_usd": reply.cost} if reply.cost is not None else {})}}, reply.headers)

    def _anthropic(self, request: dict, reply: Reply) -> None:
        if reply.status >= 400:
            body = reply.body
            if not isinstance(body, (bytes, dict)):
                body = {"type": "error", "error": {"type": "scripted_error", "message": body or "error"}}
            return self._send(reply.status, body, reply.headers)
        if reply.body is not None:
            return self._send(reply.status, reply.body, reply.headers)
        choice = request.get("tool_choice") or {}
        forced = choice.get("name") if choice.get("type") == "tool" else None
        args = reply.tool_args if reply.tool_args is not None else reply.json if forced else None
        if args is not None:
            block: dict[str, Any] = {"type": "tool_use", "id": "toolu_1", "name": reply.tool_name or forced
                                     or "submit_verdict", "input": args}
        else:
            block = {"type": "text", "text": reply.content if reply.content is not None else json.dumps(reply.json)}
        prompt, completion = reply.usage or (_tokens(request.get("messages")), _tokens(block))
        self._send(200, {
            "id": "msg_scripted", "type": "message", "role": "assistant", "model": request.get("model"),
            "content": [block], "stop_reason": reply.finish_reason or ("tool_use" if args is not None else "end_turn"),
            "stop_sequence": None, "usage": {"input_tokens": prompt, "output_tokens": completion}}, reply.headers)

    def _send(self, code: int, body: Any, headers: dict[str, str] | None = None, extra: bytes = b"") -> None:
        data = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data + extra)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


@pytest.fixture()
def judge_server() -> Iterator[JudgeServer]:
    """A started JudgeServer with an empty script; push replies or set ``.reply`` in the test."""
    with JudgeServer() as server:
        yield server
