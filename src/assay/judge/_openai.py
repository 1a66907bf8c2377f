"""Judges behind any OpenAI-compatible chat-completions endpoint.

One class serves OpenAI, Azure, Gemini's compatibility endpoint, Groq, Together, OpenRouter, a
LiteLLM proxy and local servers (Ollama, vLLM, llama.cpp, LM Studio). Structured output degrades
on its own: strict ``json_schema`` first, tool calling when the server rejects ``response_format``,
then a plain JSON request in the prompt; the working mode is remembered for later calls. Requests
go out as plain JSON through httpx (:mod:`assay.judge._http`), as the official SDK would send
them, without the SDK's start-up cost.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from typing import Any
from urllib.parse import quote, urlsplit

import msgspec

from assay._secrets import register_secret, register_url, without_credentials
from assay.errors import ConfigError, ProviderError

from ._base import Backend, Completion, LoopLocal, provider_error
from ._http import DEFAULT_MAX_REPLY, HttpxClient, LoopbackClient, import_httpx, is_loopback, json_client
from ._parse import VerdictSchema, _enums, _with_enum, base_of, json_schema, schema_instruction, strict_schema
from ._prices import Price, is_local_url, resolve_price
from ._protocol import JudgeRequest, check_logprobs, read_logprobs

MODES = ("json_schema", "tools", "json")
TOOL_NAME = "submit_verdict"
# Servers that build a grammar from the schema and need no OpenAI strict-mode rewriting.
_LOOSE_SCHEMA = frozenset({"ollama", "llamacpp", "vllm", "lmstudio"})
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def _fallback(mode: str, error: ProviderError) -> str | None:
    """The next mode to try after *error*, when the server rejected the structured-output request."""
    if error.status not in (400, 422):
        return None
    text = f"{error} {error.body}".lower()
    if mode == "json_schema" and any(w in text for w in ("response_format", "json_schema", "schema",
                                                        "structured", "strict")):
        return "tools"
    if mode == "tools" and any(w in text for w in ("tool", "function")):
        return "json"
    return None


def endpoint_identity(backend: str, base_url: str | None, api_version: str | None = None) -> dict[str, Any]:
    """The cache identity of a backend at ``base_url`` (None: the SDK's default endpoint)."""
    out: dict[str, Any] = {"backend": backend, "base_url": without_credentials((base_url or "").rstrip("/")) or None}
    if api_version:
        out["api_version"] = api_version
    return out


class OpenAICompatible(Backend):
    """A judge model behind ``/chat/completions``.

    ``model`` is reported as ``"provider:name"``; ``structured`` picks the first mode to try
    ("json_schema" | "tools" | "json"). The client retries nothing: Retrying does.
    ``max_reply_mb``: the most a reply may be, decompressed (a larger one is refused, not retried).
    """

    backend = "openai-compatible"

    def __init__(self, name: str, *, base_url: str | None = None, api_key: str | None = None,
                 provider: str = "openai", timeout: float | None = 60.0, structured: str = "json_schema",
                 max_tokens: int | None = None, seed: int | None = None, price: Price | None = None,
                 api_version: str | None = None, extra_body: dict[str, Any] | None = None,
                 default_headers: dict[str, str] | None = None, temperature: float | None = None,
                 max_reply_mb: float = DEFAULT_MAX_REPLY / 2**20, logprobs: int | None = None) -> None:
        if structured not in MODES:
            raise ConfigError.unknown("structured-output mode", structured, MODES)
        if price is None:  # looked up here too, so a backend built by hand is priced like make_judge's
            price = resolve_price(name, local=is_local_url(base_url))
        super().__init__(name, backend=provider, timeout=timeout, price=price)
        try:
            urlsplit(base_url or DEFAULT_BASE_URL).port  # noqa: B018 - reading .port checks it (ValueError)
        except ValueError as exc:
            raise ConfigError(f"bad judge base URL {without_credentials(base_url)!r}: {exc}") from None
        if not is_loopback(base_url or DEFAULT_BASE_URL):
            import_httpx()  # a missing extra is an error now, not at the first call
        self.provider, self.base_url = provider, base_url
        # Ollama and llama.cpp serve one request per slot, usually one slot on a laptop.
        self.single_slot = provider in ("ollama", "llamacpp", "lmstudio")
        self.elastic = not self.single_slot
        self.mode, self.max_tokens, self.seed, self.temperature = structured, max_tokens, seed, temperature
        self._api_key, self._api_version = api_key, api_version
        register_secret(api_key)
        register_url(base_url)
        self._extra_body, self._headers = extra_body, default_headers
        if not max_reply_mb > 0:
            raise ConfigError(f"max_reply_mb must be > 0, got {max_reply_mb!r}")
        self.max_reply = int(max_reply_mb * 2**20)
        self.logprobs = check_logprobs(logprobs)
        self._client = LoopLocal(self._new_client, lambda client: client.close(), eager=True)
        self._bodies: dict[tuple[Any, ...], Body] = {}

    @property
    def identity(self) -> dict[str, Any]:
        out = endpoint_identity(self.provider, self.base_url, self._api_version if self.provider == "azure" else None)
        if self.logprobs:  # a verdict with probabilities is not one without: keyed apart, only when asked for
            out["logprobs"] = self.logprobs
        return out

    def _new_client(self) -> HttpxClient | LoopbackClient:
        """The headers, URL and query the SDK would use (``AsyncOpenAI`` / ``AsyncAzureOpenAI``)."""
        key = self._api_key or "not-needed"
        query = None
        if self.provider == "azure":
            base, headers, query = f"{(self.base_url or '').rstrip('/')}/openai", {"api-key": key}, \
                {"api-version": self._api_version or ""}
        else:
            base, headers = self.base_url or DEFAULT_BASE_URL, {"Authorization": f"Bearer {key}"}
            for header, env in (("OpenAI-Organization", "OPENAI_ORG_ID"), ("OpenAI-Project", "OPENAI_PROJECT_ID")):
                if os.environ.get(env):
                    headers[header] = os.environ[env]
        return json_client(base, headers={**headers, **(self._headers or {})}, timeout=self.timeout, query=query,
                           backend=self.backend, model=self.name, max_reply=self.max_reply)

    def _path(self) -> str:
        # Azure routes by deployment, which is the model name the request carries.
        return f"/deployments/{quote(self.name, safe='')}/chat/completions" if self.provider == "azure" \
            else "/chat/completions"

    def _params(self, request: JudgeRequest, mode: str, *, schema_json: Any = None,
                messages: Any = None) -> dict[str, Any]:
        """The request's JSON body; *schema_json* and *messages*, when given, stand in for the schema
        the request carries and its messages (see :meth:`_body`)."""
        messages = [dict(m) for m in request.messages] if messages is None else messages
        params: dict[str, Any] = {"model": self.name}
        reasoning = self.provider in ("openai", "azure") and self.name.startswith(_REASONING_PREFIXES)
        if not reasoning:  # reasoning models accept only the default temperature
            # The judge's --temperature replaces the requests' default 0; a re-ask's own stays.
            params["temperature"] = request.temperature if self.temperature is None or request.temperature \
                else self.temperature
        # The request's bound (a compact prompt's, a re-ask's) and the judge's --max-tokens: the tighter.
        max_tokens = min(filter(None, (request.max_tokens, self.max_tokens)), default=None)
        if max_tokens:
            params["max_completion_tokens" if reasoning else "max_tokens"] = max_tokens
        if self.seed is not None:
            params["seed"] = self.seed
        if self.logprobs:
            params["logprobs"], params["top_logprobs"] = True, self.logprobs
        schema = request.schema
        if mode == "json_schema":
            loose = self.provider in _LOOSE_SCHEMA
            if schema_json is None:
                schema_json = json_schema(schema) if loose else strict_schema(schema)
            params["response_format"] = {"type": "json_schema", "json_schema": {
                "name": schema.__name__, "schema": schema_json, "strict": not loose}}
        elif mode == "tools":
            params["tools"] = [{"type": "function", "function": {
                "name": TOOL_NAME, "description": "Record the verdict.",
                "parameters": json_schema(schema) if schema_json is None else schema_json}}]
            params["tool_choice"] = {"type": "function", "function": {"name": TOOL_NAME}}
        else:
            messages.append({"role": "user", "content": schema_instruction(schema)})
        params["messages"] = messages
        if self._extra_body:
            params.update(self._extra_body)
        return params

    def _body(self, request: JudgeRequest, mode: str) -> bytes:
        """``json.dumps(self._params(request, mode), ensure_ascii=False).encode()``, byte for byte, with
        all but the messages and the option orders encoded once per schema and settings (see :class:`Body`)."""
        if self._extra_body or mode == "json":
            return json.dumps(self._params(request, mode), ensure_ascii=False).encode()
        schema = request.schema
        key = (mode, base_of(schema), isinstance(schema, VerdictSchema),
               request.temperature, request.max_tokens)
        body = self._bodies.get(key)
        if body is None:
            if len(self._bodies) >= _BODIES:
                self._bodies.clear()
            body = self._bodies[key] = Body(self, request, mode)
        return body.fill(request)

    async def _complete(self, request: JudgeRequest) -> Completion:
        while True:
            mode = self.mode
            try:
                return await self._send(request, mode)
            except Exception as exc:
                error = provider_error(exc, self.backend, self.name)
                nxt = _fallback(mode, error)
                if nxt is None:
                    raise error from exc
                if self.mode == mode:  # another call may have stepped down already
                    self.mode = nxt

    async def _send(self, request: JudgeRequest, mode: str) -> Completion:
        # The reply is read as plain JSON, which also tolerates compatible servers that omit fields.
        reply = await self._client.get().post(self._path(), self._body(request, mode))
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not choices or not isinstance(choices[0], dict):
            raise ProviderError(f"reply is not a chat completion: {str(reply)[:200]!r}", backend=self.backend,
                                model=self.name, body=str(reply)[:2000], retryable=True)
        choice = choices[0]
        message = choice.get("message") or {}
        text = message.get("content") or ""
        structured = mode == "json_schema"
        for call in message.get("tool_calls") or ():
            arguments = (call.get("function") or {}).get("arguments") if isinstance(call, dict) else None
            if arguments:
                text, structured = arguments, True
                break
        if not text and message.get("refusal"):
            text = f"refused: {message['refusal']}"
        usage = reply.get("usage") or {}
        truncated = choice.get("finish_reason") == "length"
        note = "truncated at max_tokens" if truncated else None
        model = reply.get("model")
        return Completion(text=text if isinstance(text, str) else json.dumps(text),
                          input_tokens=int(usage.get("prompt_tokens") or 0),
                          output_tokens=int(usage.get("completion_tokens") or 0),
                          model=f"{self.provider}:{model}" if model else None, note=note,
                          structured=structured and isinstance(text, str), truncated=truncated,
                          tokens=read_logprobs(choice) if self.logprobs and text == message.get("content") else None)


_BODIES = 256
"""Request layouts kept per backend (schema, mode, temperature, max_tokens): a run uses a handful."""
_SLOT = re.compile(r'"\\u0000slot(m|\d+)\\u0000"')
_encode = msgspec.json.encode
"""A str as JSON: the same bytes as ``json.dumps(s, ensure_ascii=False).encode()`` (every code point
checked), and the same UnicodeEncodeError for a lone surrogate."""


@lru_cache(maxsize=4096)
def _encoded_options(options: tuple[Any, ...]) -> bytes:
    return json.dumps(list(options), ensure_ascii=False).encode()


def _encoded_messages(messages: Any) -> bytes:
    """``json.dumps(messages)`` of role/content dicts: each string encoded by msgspec (ten times faster
    on a long conversation), the separators as ``json.dumps`` writes them."""
    out = []
    for m in messages:
        items = dict(m).items()
        if all(type(k) is str and type(v) is str for k, v in items):
            out.append(b"{" + b", ".join([_encode(k) + b": " + _encode(v) for k, v in items]) + b"}")
        else:
            out.append(json.dumps(dict(m), ensure_ascii=False).encode())
    return b"[" + b", ".join(out) + b"]"


class Body:
    """One request layout encoded once: the body's bytes with slots for the messages and for each
    option list (enum) of the schema, filled per request. The slots are placeholder strings put
    where those values go before ``json.dumps``; since ``json.dumps`` encodes a value the same
    wherever it stands, the filled bytes are what ``json.dumps`` of the whole body gives."""

    __slots__ = ("pieces", "enums", "_backend", "_mode")

    def __init__(self, backend: OpenAICompatible, request: JudgeRequest, mode: str) -> None:
        self._backend, self._mode = backend, mode
        schema = request.schema
        ordered = isinstance(schema, VerdictSchema)
        model = base_of(schema)  # the same in every option order: the orders go in the slots
        loose = mode == "tools" or backend.provider in _LOOSE_SCHEMA
        base = json_schema(model) if loose else strict_schema(model)
        self.enums: list[tuple[frozenset[str], bytes]] = []
        if ordered:
            for i, (path, values) in enumerate(_enums(model)):
                node: Any = base
                try:
                    for step in path:
                        node = node[step]
                    original = node["enum"] if isinstance(node, dict) else None
                except (KeyError, IndexError, TypeError):
                    original = None
                self.enums.append((values, _encoded_options(tuple(original or ()))))
                base = _with_enum(base, path, f"\x00slot{i}\x00")  # type: ignore[arg-type]
        params = backend._params(request, mode, schema_json=base, messages="\x00slotm\x00")
        text = json.dumps(params, ensure_ascii=False)
        split = _SLOT.split(text)
        slots = split[1::2]
        self.pieces: list[bytes | str] | None = [piece.encode() if k % 2 == 0 else piece
                                                 for k, piece in enumerate(split)]
        if slots.count("m") != 1 or len(set(slots)) != len(slots):  # a placeholder's text in the settings
            self.pieces = None

    def fill(self, request: JudgeRequest) -> bytes:
        if self.pieces is None:
            return json.dumps(self._backend._params(request, self._mode), ensure_ascii=False).encode()
        schema = request.schema
        orders = schema.orders if isinstance(schema, VerdictSchema) else ()
        out: list[bytes] = []
        for piece in self.pieces:
            if type(piece) is bytes:
                out.append(piece)
            elif piece == "m":
                out.append(_encoded_messages(request.messages))
            else:  # an option list: in the first order that lists its values (as VerdictSchema.reorder)
                values, original = self.enums[int(piece)]
                order = next((o for o in orders if len(o) == len(values) and set(o) == values), None)
                out.append(original if order is None else _encoded_options(tuple(order)))
        return b"".join(out)
