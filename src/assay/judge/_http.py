"""JSON over HTTP for the chat-completions backend: httpx (the OpenAI SDK's own HTTP client), no SDK.

The backend sends one route with a plain JSON body and reads the reply as plain JSON, so the SDK
added nothing but cost: importing it takes ~1 s (thousands of pydantic types) and building its
client ~0.3 s, both before the first verdict of every ``assay run``, and ~0.5 ms per call. httpx
keeps what matters from it: connection pooling, TLS with certifi, proxies and certificates from
the environment, redirects. ``http://`` servers on this machine get :class:`LoopbackClient`
instead, a small HTTP/1.1 client on asyncio streams (see its docstring). Errors are classified
as the SDK's were: the status, the provider's ``error.message`` as the message, the body, and
``Retry-After``.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from typing import Any
from urllib.parse import urlencode, urlsplit

from assay.errors import ConfigError, ProviderError

from ._base import status_error

USER_AGENT = "assay (OpenAI-compatible chat completions)"


def import_httpx() -> Any:
    """httpx2 (what recent openai releases depend on), else httpx (older ones)."""
    try:
        import httpx2 as httpx  # imported here so that assay works without the extra
    except ImportError:
        try:
            import httpx
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
                query: dict[str, str] | None = None, backend: str, model: str) -> "HttpxClient | LoopbackClient":
    """The client for *base_url*: :class:`LoopbackClient` for ``http://`` on this machine, else httpx.

    The loopback client sets no timeout of its own: the backend bounds every call (``wait_for``).
    """
    if is_loopback(base_url):
        return LoopbackClient(base_url, headers=headers, query=query, backend=backend, model=model)
    return HttpxClient(base_url, headers=headers, timeout=timeout, query=query, backend=backend, model=model)


class HttpxClient:
    """POST JSON to ``base_url + path``; one instance per event loop (httpx pools are loop-bound)."""

    def __init__(self, base_url: str, *, headers: dict[str, str], timeout: float | None,
                 query: dict[str, str] | None = None, backend: str, model: str) -> None:
        httpx = import_httpx()
        self._httpx, self._query, self.backend, self.model = httpx, query, backend, model
        self._base = base_url.rstrip("/")
        self._client = httpx.AsyncClient(
            headers={"User-Agent": USER_AGENT, "Accept": "application/json", **headers},
            timeout=httpx.Timeout(timeout), follow_redirects=True,
            # As the SDK's default client: the Limited layer decides how many calls are in flight.
            limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100))

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        """The reply's JSON; ProviderError for HTTP errors, timeouts, lost connections and non-JSON bodies."""
        httpx = self._httpx
        data = json.dumps(body, ensure_ascii=False).encode()
        try:
            response = await self._client.post(self._base + path, content=data, params=self._query,
                                               headers={"Content-Type": "application/json"})
        except httpx.TimeoutException as exc:
            raise ProviderError(f"request timed out ({type(exc).__name__})", backend=self.backend, model=self.model,
                                retryable=True) from exc
        except httpx.TransportError as exc:
            raise ProviderError(f"connection error: {type(exc).__name__}: {exc}", backend=self.backend,
                                model=self.model, retryable=True) from exc
        return read_reply(response.status_code, response.text, response.headers, backend=self.backend,
                          model=self.model)

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
    answers in milliseconds, so httpx's own cost shows: ~0.35 s to import it and build a client
    (TLS context included, which plain HTTP never uses) and ~1 ms per call. This speaks just what
    a JSON POST needs: Content-Length or chunked bodies, gzip/deflate, keep-alive, and one retry
    when a kept-alive connection turns out closed by the server before it read anything. No proxy
    is used for loopback addresses; a redirect is an error that names where it points.
    """

    def __init__(self, base_url: str, *, headers: dict[str, str], query: dict[str, str] | None = None,
                 backend: str, model: str) -> None:
        parts = urlsplit(base_url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self._query = f"?{urlencode(query)}" if query else ""
        fixed = {"Host": parts.netloc.rpartition("@")[2], "User-Agent": USER_AGENT, "Accept": "application/json",
                 "Accept-Encoding": "gzip, deflate", **headers, "Content-Type": "application/json"}
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.backend, self.model = backend, model

    def _error(self, message: str, **kw: Any) -> ProviderError:
        return ProviderError(message, backend=self.backend, model=self.model, **kw)

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        data = json.dumps(body, ensure_ascii=False).encode()
        request = (f"POST {self._prefix}{path}{self._query} HTTP/1.1\r\n{self._head}"
                   f"Content-Length: {len(data)}\r\n\r\n").encode("latin-1") + data
        for attempt in range(2):
            reused = bool(self._idle)
            try:
                reader, writer = self._idle.pop() if reused else \
                    await asyncio.open_connection(self._host, self._port)
            except OSError as exc:
                raise self._error(f"connection error: {type(exc).__name__}: {exc}", retryable=True) from exc
            try:
                writer.write(request)
                status, headers, content, keep = await self._read(reader)
            except _Stale:
                writer.close()
                if reused and attempt == 0:
                    continue  # the server closed a kept-alive connection before reading: send again
                raise self._error("connection error: the server closed the connection without a reply",
                                  retryable=True) from None
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                writer.close()
                raise self._error(f"connection error: {type(exc).__name__}: {exc}", retryable=True) from exc
            except BaseException:
                writer.close()  # cancelled (a timeout): the connection is mid-reply, so never reused
                raise
            if keep:
                self._idle.append((reader, writer))
            else:
                writer.close()
            break
        text = content.decode("utf-8", "replace")
        if 300 <= status < 400:
            where = headers.get("location", "?")
            raise self._error(f"redirected (HTTP {status}) to {where}; use that address as the base URL",
                              status=status)
        return read_reply(status, text, headers, backend=self.backend, model=self.model)

    async def _read(self, reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes, bool]:
        while True:
            try:
                line = await reader.readline()
            except (ConnectionResetError, BrokenPipeError):
                raise _Stale from None
            if not line:
                raise _Stale
            version, _, rest = line.decode("latin-1").partition(" ")
            status = int(rest[:3])
            headers: dict[str, str] = {}
            while (field := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = field.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            if status >= 200:
                break  # 1xx: an interim reply; the real one follows
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks = []
            while size := int((await reader.readline()).split(b";")[0].strip() or b"0", 16):
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
            while await reader.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            content = b"".join(chunks)
        elif "content-length" in headers:
            content = await reader.readexactly(int(headers["content-length"]))
        else:
            content, keep = await reader.read(), False  # until the server closes
        encoding = headers.get("content-encoding", "").lower()
        if encoding in ("gzip", "deflate"):
            content = zlib.decompress(content, 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
        return status, headers, content, keep

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()


class _Stale(Exception):
    """The connection closed before a status line arrived."""
