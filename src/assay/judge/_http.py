"""JSON over HTTP for the chat-completions backend: httpx (the OpenAI SDK's own HTTP client), no SDK.

The backend sends one route with a plain JSON body and reads the reply as plain JSON, so the SDK
added nothing but cost: importing it takes ~1 s (thousands of pydantic types) and building its
client ~0.3 s, both before the first verdict of every ``assay run``, and ~0.5 ms per call. httpx
keeps what matters from it: connection pooling, TLS with certifi, proxies and certificates from
the environment, redirects. Errors are classified as the SDK's were: the status, the provider's
``error.message`` as the message, the body, and ``Retry-After``.
"""

from __future__ import annotations

import json
from typing import Any

from assay.errors import ConfigError, ProviderError

from ._base import RETRYABLE_STATUSES, parse_retry_after

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


def status_error(status: int, text: str, headers: Any, *, backend: str, model: str) -> ProviderError:
    """A ProviderError for an HTTP error reply, with the provider's own message where it gave one."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    error = body.get("error", body) if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return ProviderError(str(message) if message else text.strip()[:500] or f"HTTP {status}", backend=backend,
                         model=model, status=status, body=text[:2000],
                         retryable=status in RETRYABLE_STATUSES or status >= 500,
                         retry_after=parse_retry_after(headers))


class JsonClient:
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
        text = response.text
        if response.status_code >= 400:
            raise status_error(response.status_code, text, response.headers, backend=self.backend, model=self.model)
        try:
            return json.loads(text)
        except ValueError:
            raise ProviderError(f"reply is not a chat completion: {text[:200]!r}", backend=self.backend,
                                model=self.model, body=text[:2000], retryable=True) from None

    async def close(self) -> None:
        await self._client.aclose()
