"""JSON over HTTP for the chat-completions backend: httpx (the OpenAI SDK's own HTTP client), no SDK.

The backend sends one route with a plain JSON body and reads the reply as plain JSON, so the SDK
added nothing but cost: importing it takes ~1 s (thousands of pydantic types) and building its
client ~0.3 s, both before the first verdict of every ``assay run``, and ~0.5 ms per call. httpx
keeps what matters from it: connection pooling, TLS with certifi, proxies and certificates from
the environment, redirects. ``http://`` servers on this machine get :class:`LoopbackClient`
instead, a small HTTP/1.1 client on asyncio streams (see its docstring). Errors are classified
as the SDK's were: the status, the provider's ``error.message`` as the message, the body, and
``Retry-After``.

Both clients read a reply through one :class:`Body`, which bounds what a broken or hostile
server can make assay hold: at most ``max_reply`` bytes (16 MiB unless ``--max-reply-mb``),
counted after decompression, which runs in 1 MiB slices between which the event loop runs (so a
gzip bomb is refused at the cap and ``--timeout`` stays a deadline), and never a body the
server says is larger. The loopback client also caps the header block and never reuses a
connection whose reply did not end where its framing said.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from typing import Any
from urllib.parse import urlencode, urlsplit

from assay.errors import ConfigError, ProviderError

from assay.model._options import MAX_REPLY_MB

from ._base import status_error

USER_AGENT = "assay (OpenAI-compatible chat completions)"
DEFAULT_MAX_REPLY = MAX_REPLY_MB * 2**20
"""Bytes of one reply, decompressed (``assay.model._options.MAX_REPLY_MB``)."""
MAX_HEADERS, MAX_HEADER_BYTES = 100, 64 * 1024
_SLICE = 2**20  # decompressed bytes per step: a gzip bomb yields the loop between steps
_READ = 64 * 1024
ENCODINGS = "gzip, deflate"


class TooLarge(ValueError):
    """The reply passed the size cap."""


class Body:
    """A reply body fed in pieces: decompressed in slices and refused past *cap* bytes."""

    def __init__(self, encoding: str, cap: int) -> None:
        encoding = encoding.strip().lower()
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            raise ValueError(f"the reply is in an encoding assay did not ask for: {encoding!r}")
        # deflate: zlib-wrapped as HTTP says (32 also takes gzip, which some servers send under that name)
        self._z = None if encoding in ("", "identity") else \
            zlib.decompressobj(16 + zlib.MAX_WBITS if "gzip" in encoding else 32 + zlib.MAX_WBITS)
        self.cap, self.size, self._parts = cap, 0, list[bytes]()

    def check_length(self, declared: int, *, chunk: bool = False) -> None:
        """Refuse up front a body (or the next chunk of one) its own framing says goes past the cap."""
        if declared > self.cap:
            raise TooLarge(f"the reply passed {self.cap:,} bytes" if chunk else
                           f"the reply says it is {declared:,} bytes long")

    async def feed(self, data: bytes) -> None:
        if self._z is None:
            return self._add(data)
        while data:
            try:
                out = self._z.decompress(data, _SLICE)
            except zlib.error as exc:
                raise ValueError(f"the reply's compressed body is corrupt ({exc})") from None
            self._add(out)
            data = self._z.unconsumed_tail
            if data:
                await asyncio.sleep(0)  # one slice per turn of the loop: deadlines and other calls keep running

    def _add(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.cap:
            raise TooLarge(f"the reply passed {self.cap:,} bytes" + (" once decompressed" if self._z else ""))
        if data:
            self._parts.append(data)

    def data(self) -> bytes:
        """The whole body, decompressed."""
        if self._z is not None:
            self._add(self._z.flush())
        return b"".join(self._parts)

    def text(self) -> str:
        return self.data().decode("utf-8", "replace")


async def read_bounded(response: Any, cap: int) -> None:
    """An httpx ``response`` hook: read the body through :class:`Body` before the client does.

    For an SDK that reads replies itself (anthropic): the body is held decompressed and capped,
    and the client's own read then finds it there (no decoding left, so no second copy).
    Raises TooLarge past *cap*, ValueError for an encoding or compressed body it cannot read.
    """
    body = Body(response.headers.get("content-encoding", ""), cap)
    length = response.headers.get("content-length", "")
    if length.isdigit():
        body.check_length(int(length))
    async for chunk in response.aiter_raw():
        await body.feed(chunk)
    response._content = body.data()  # what aread() returns when set: the read above is the only one


def too_large(exc: TooLarge, cap: int, *, backend: str, model: str) -> ProviderError:
    """Not retried: the same server would send the same reply again."""
    return ProviderError(f"reply over the {cap / 2**20:g} MiB limit (--max-reply-mb) refused: {exc}",
                         backend=backend, model=model, retryable=False)


def import_httpx() -> Any:
    """httpx2 (what recent openai releases depend on), else httpx (older ones)."""
    try:
        import httpx2 as httpx  # imported here so that assay works without the extra
    except ImportError:
        try:
            import httpx  # type: ignore[no-redef]  # the older name of the same client
        except ImportError:
            raise ConfigError.missing_extra("an OpenAI-compatible judge", "openai", "openai") from None
    return httpx


def read_reply(status: int, text: str, headers: Any, *, backend: str, model: str) -> Any:
    """The JSON of a reply (both clients): ProviderError for an HTTP error or a body that is not JSON."""
    if status >= 400:
        raise status_error(status, text, headers, backend=backend, model=model)
    try:
        return json.loads(text)
    except ValueError:
        raise ProviderError(f"reply is not a chat completion: {text[:200]!r}", backend=backend, model=model,
                            body=text[:2000], retryable=True) from None


def json_client(base_url: str, *, headers: dict[str, str], timeout: float | None,
                query: dict[str, str] | None = None, backend: str, model: str,
                max_reply: int = DEFAULT_MAX_REPLY) -> "HttpxClient | LoopbackClient":
    """The client for *base_url*: :class:`LoopbackClient` for ``http://`` on this machine, else httpx.

    The loopback client sets no timeout of its own: the backend bounds every call (``wait_for``).
    """
    if is_loopback(base_url):
        return LoopbackClient(base_url, headers=headers, query=query, backend=backend, model=model,
                              max_reply=max_reply)
    return HttpxClient(base_url, headers=headers, timeout=timeout, query=query, backend=backend, model=model,
                       max_reply=max_reply)


class HttpxClient:
    """POST JSON to ``base_url + path``; one instance per event loop (httpx pools are loop-bound)."""

    def __init__(self, base_url: str, *, headers: dict[str, str], timeout: float | None,
                 query: dict[str, str] | None = None, backend: str, model: str,
                 max_reply: int = DEFAULT_MAX_REPLY) -> None:
        httpx = import_httpx()
        self._httpx, self._query, self.backend, self.model = httpx, query, backend, model
        self._base, self.max_reply = base_url.rstrip("/"), max_reply
        self._client = httpx.AsyncClient(
            # Only encodings Body can decode: the body is read raw, so that its size is ours to bound.
            headers={"User-Agent": USER_AGENT, "Accept": "application/json", "Accept-Encoding": ENCODINGS,
                     **headers},
            timeout=httpx.Timeout(timeout), follow_redirects=True,
            # As the SDK's default client: the Limited layer decides how many calls are in flight.
            limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100))

    async def post(self, path: str, body: dict[str, Any] | bytes) -> Any:
        """The reply's JSON; ProviderError for HTTP errors, timeouts, lost connections and non-JSON bodies.

        *body*: the JSON to send, or its encoding already made (``bytes``)."""
        httpx = self._httpx
        data = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
        try:
            async with self._client.stream("POST", self._base + path, content=data, params=self._query,
                                           headers={"Content-Type": "application/json"}) as response:
                reply = Body(response.headers.get("content-encoding", ""), self.max_reply)
                length = response.headers.get("content-length", "")
                if length.isdigit():
                    reply.check_length(int(length))
                async for chunk in response.aiter_raw():
                    await reply.feed(chunk)
                text = reply.text()
        except TooLarge as exc:
            raise too_large(exc, self.max_reply, backend=self.backend, model=self.model) from None
        except ValueError as exc:
            raise ProviderError(f"unreadable reply: {exc}", backend=self.backend, model=self.model,
                                retryable=True) from exc
        except httpx.TimeoutException as exc:
            raise ProviderError(f"request timed out ({type(exc).__name__})", backend=self.backend, model=self.model,
                                retryable=True) from exc
        except httpx.TransportError as exc:
            raise ProviderError(f"connection error: {type(exc).__name__}: {exc}", backend=self.backend,
                                model=self.model, retryable=True) from exc
        return read_reply(response.status_code, text, response.headers, backend=self.backend, model=self.model)

    async def close(self) -> None:
        await self._client.aclose()


LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(base_url: str) -> bool:
    """``http://`` to this machine: the servers where client overhead is a large share of a call."""
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    return parts.scheme == "http" and (host in LOOPBACK_HOSTS or host.startswith("127."))


class LoopbackClient:
    """HTTP/1.1 with keep-alive over asyncio streams, for ``http://`` servers on this machine.

    A server on 127.0.0.1 (vLLM, a LiteLLM proxy, llama.cpp, the test suite's scripted server)
    answers in milliseconds, so httpx's own cost shows: measured against the scripted server
    (benchmarks/judge_clients.py, one run, loaded 2-core machine) a call costs 0.60 ms here and
    5.4 ms through httpx (9x), and importing httpx and building its client adds ~0.18 s to
    start-up (TLS context included, which plain HTTP never uses); httpx also comes only with the
    ``openai`` extra, which a local judge does not otherwise need. So this stays, made as safe:
    the reply bounded by :class:`Body`, at most ``MAX_HEADERS`` header lines and
    ``MAX_HEADER_BYTES`` of them, a connection reused only when its reply ended exactly where
    Content-Length or the last chunk said (no bytes left over, none arriving while idle). It speaks
    just what a JSON POST needs: Content-Length or chunked bodies, gzip/deflate, keep-alive, and
    one retry when a kept-alive connection turns out closed by the server before it read
    anything. No proxy is used for loopback addresses; a redirect is an error that names where it
    points.
    """

    def __init__(self, base_url: str, *, headers: dict[str, str], query: dict[str, str] | None = None,
                 backend: str, model: str, max_reply: int = DEFAULT_MAX_REPLY) -> None:
        parts = urlsplit(base_url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self._query = f"?{urlencode(query)}" if query else ""
        fixed = {"Host": parts.netloc.rpartition("@")[2], "User-Agent": USER_AGENT, "Accept": "application/json",
                 "Accept-Encoding": ENCODINGS, **headers, "Content-Type": "application/json"}
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.backend, self.model, self.max_reply = backend, model, max_reply

    def _error(self, message: str, **kw: Any) -> ProviderError:
        return ProviderError(message, backend=self.backend, model=self.model, **kw)

    def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """An idle connection with nothing unread on it (a server that sent more than one reply is not trusted)."""
        while self._idle:
            reader, writer = self._idle.pop()
            if not _pending(reader) and not reader.at_eof():
                return reader, writer
            writer.close()
        return None

    async def post(self, path: str, body: dict[str, Any] | bytes) -> Any:
        data = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
        request = (f"POST {self._prefix}{path}{self._query} HTTP/1.1\r\n{self._head}"
                   f"Content-Length: {len(data)}\r\n\r\n").encode("latin-1") + data
        for attempt in range(2):
            idle = self._connection()
            try:
                reader, writer = idle or await asyncio.open_connection(self._host, self._port, limit=MAX_HEADER_BYTES)
            except OSError as exc:
                raise self._error(f"connection error: {type(exc).__name__}: {exc}", retryable=True) from exc
            try:
                writer.write(request)
                status, headers, content, keep = await self._read(reader)
            except _Stale:
                writer.close()
                if idle and attempt == 0:
                    continue  # the server closed a kept-alive connection before reading: send again
                raise self._error("connection error: the server closed the connection without a reply",
                                  retryable=True) from None
            except TooLarge as exc:
                writer.close()
                raise too_large(exc, self.max_reply, backend=self.backend, model=self.model) from None
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                writer.close()
                raise self._error(f"connection error: {type(exc).__name__}: {exc}", retryable=True) from exc
            except BaseException:
                writer.close()  # cancelled (a timeout): the connection is mid-reply, so never reused
                raise
            if keep and not _pending(reader):
                self._idle.append((reader, writer))
            else:
                writer.close()  # bytes past the end of the reply: they must never be read as the next one
            break
        if 300 <= status < 400:
            where = headers.get("location", "?")
            raise self._error(f"redirected (HTTP {status}) to {where}; use that address as the base URL",
                              status=status)
        return read_reply(status, content, headers, backend=self.backend, model=self.model)

    async def _read(self, reader: asyncio.StreamReader) -> tuple[int, dict[str, str], str, bool]:
        while True:
            try:
                line = await reader.readline()
            except (ConnectionResetError, BrokenPipeError):
                raise _Stale from None
            if not line:
                raise _Stale
            version, _, rest = line.decode("latin-1").partition(" ")
            if not version.startswith("HTTP/1.") or not rest[:3].isdigit():
                raise ValueError(f"not an HTTP reply: {line[:80]!r}")
            status = int(rest[:3])
            block = _buffered_headers(reader)
            if block is not None:  # the header block has arrived whole: read at once, not line by line
                data = await reader.readexactly(block)
                headers = _header_lines(data[:-4].split(b"\r\n") if block > 2 else [])
            else:
                headers = await _headers(reader)
            if status >= 200:
                break  # 1xx: an interim reply; the real one follows
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        body = Body(headers.get("content-encoding", ""), self.max_reply)
        if "chunked" in headers.get("transfer-encoding", "").lower():
            while size := int((await reader.readline()).split(b";")[0].strip() or b"0", 16):
                body.check_length(body.size + size, chunk=True)  # compressed bytes too: never past the cap
                await _copy(reader, size, body)
                await reader.readexactly(2)
            await _headers(reader)  # trailers
        elif "content-length" in headers:
            length = int(headers["content-length"])
            body.check_length(length)
            await _copy(reader, length, body)
        else:
            keep = False  # until the server closes
            while chunk := await reader.read(_READ):
                await body.feed(chunk)
        return status, headers, body.text(), keep

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()


def _buffered_headers(reader: asyncio.StreamReader) -> int | None:
    """The length of the header block (through its empty line) when the reader holds all of it, with
    CRLF line ends only and within the bounds :func:`_headers` keeps; else None (read line by line)."""
    buffer = getattr(reader, "_buffer", None)
    if not buffer:
        return None
    if buffer[:2] == b"\r\n":
        return 2  # no headers
    end = buffer.find(b"\r\n\r\n", 0, MAX_HEADER_BYTES + 2)  # the lines, CRLF included, within MAX_HEADER_BYTES
    if end == -1:
        return None
    block = bytes(buffer[:end + 4])
    if block.count(b"\n") != block.count(b"\r\n") or block.count(b"\r\n") > MAX_HEADERS + 1:
        return None  # bare line feeds, or too many lines: the line reader decides (and refuses)
    return end + 4


def _header_lines(lines: list[bytes]) -> dict[str, str]:
    """:func:`_headers` of header lines already read (CRLF stripped)."""
    headers: dict[str, str] = {}
    for field in lines:
        name, _, value = field.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers


async def _headers(reader: asyncio.StreamReader) -> dict[str, str]:
    """A header block, at most MAX_HEADERS lines and MAX_HEADER_BYTES (the reader's line limit bounds each)."""
    headers: dict[str, str] = {}
    count = size = 0
    while (field := await reader.readline()) not in (b"\r\n", b"\n"):
        if not field:
            raise asyncio.IncompleteReadError(b"", None)
        count, size = count + 1, size + len(field)
        if count > MAX_HEADERS or size > MAX_HEADER_BYTES:
            raise ValueError(f"the reply's headers run past {MAX_HEADERS} lines or {MAX_HEADER_BYTES:,} bytes")
        name, _, value = field.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers


async def _copy(reader: asyncio.StreamReader, length: int, body: Body) -> None:
    while length > 0:
        chunk = await reader.read(min(length, _READ))
        if not chunk:
            raise asyncio.IncompleteReadError(b"", length)
        length -= len(chunk)
        await body.feed(chunk)


def _pending(reader: asyncio.StreamReader) -> int:
    """Bytes received but not read (asyncio has no public call for it)."""
    return len(getattr(reader, "_buffer", b""))


class _Stale(Exception):
    """The connection closed before a status line arrived."""
