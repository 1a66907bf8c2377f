"""Claude as a judge through the official ``anthropic`` SDK, the schema forced with tool use.

The SDK reads replies itself, whole; its HTTP client gets a response hook that reads each body
first, through the same bounded path as the chat-completions clients (:mod:`assay.judge._http`):
at most ``max_reply_mb``, decompressed in slices, refused (not retried) past it.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from assay._secrets import register_secret, register_url, without_credentials
from assay.errors import ConfigError, ProviderError

from ._base import Backend, Completion, LoopLocal
from ._http import DEFAULT_MAX_REPLY, TooLarge, read_bounded, too_large
from ._parse import json_schema, schema_instruction
from ._prices import Price, is_local_url, resolve_price
from ._protocol import JudgeRequest

TOOL_NAME = "submit_verdict"
MODES = ("tools", "json")


class AnthropicJudge(Backend):
    """A Claude model via the Messages API.

    System messages become the ``system`` parameter (the API has no system role); the verdict
    comes back as the input of a forced ``submit_verdict`` tool call ("tools"), or as text
    ("json", for proxies without tool use). ``max_tokens`` is required by the API.
    ``max_reply_mb``: the most a reply may be, decompressed (a larger one is refused, not retried).
    """

    backend = "anthropic"
    elastic = True

    def __init__(self, name: str, *, api_key: str | None = None, base_url: str | None = None,
                 timeout: float | None = 60.0, max_tokens: int | None = 1024, structured: str = "tools",
                 price: Price | None = None, temperature: float | None = None, seed: int | None = None,
                 max_reply_mb: float = DEFAULT_MAX_REPLY / 2**20) -> None:
        if structured not in MODES:
            raise ConfigError.unknown("structured-output mode for anthropic", structured, MODES)
        if not max_reply_mb > 0:
            raise ConfigError(f"max_reply_mb must be > 0, got {max_reply_mb!r}")
        self.max_reply = int(max_reply_mb * 2**20)
        if price is None:  # looked up here too, so a backend built by hand is priced like make_judge's
            price = resolve_price(name, local=is_local_url(base_url))
        super().__init__(name, timeout=timeout, price=price)
        try:
            import anthropic  # imported here so that assay works without the extra
        except ImportError:
            raise ConfigError.missing_extra("an Anthropic judge", "anthropic", "anthropic") from None
        self._anthropic = anthropic
        self.base_url, self.max_tokens, self.mode = base_url, max_tokens or 1024, structured
        self.temperature = temperature  # seed: the Messages API has none, so it is accepted and unused
        self._api_key = api_key
        register_secret(api_key)
        register_url(base_url)
        # Recent SDKs dropped `temperature` (newer models fix it); send it only where it still exists.
        create = anthropic.resources.messages.AsyncMessages.create
        self._takes_temperature = "temperature" in inspect.signature(create).parameters
        self._client = LoopLocal(self._new_client, lambda client: client.close(), eager=True)

    @property
    def identity(self) -> dict[str, Any]:
        return {"backend": "anthropic", "base_url": without_credentials((self.base_url or "").rstrip("/")) or None}

    def _new_client(self) -> Any:
        cap = self.max_reply

        async def bounded(response: Any) -> None:
            await read_bounded(response, cap)
        # The SDK's own client class (its defaults, on whichever httpx it was built for), plus the hook.
        http = self._anthropic.DefaultAsyncHttpxClient(event_hooks={"response": [bounded]})
        client = self._anthropic.AsyncAnthropic(api_key=self._api_key or "not-needed", base_url=self.base_url,
                                                timeout=self.timeout, max_retries=0, http_client=http)
        client.messages  # noqa: B018  (the SDK imports its resource modules on first access)
        return client

    def _params(self, request: JudgeRequest) -> dict[str, Any]:
        system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
        messages = [{"role": m["role"], "content": m["content"]} for m in request.messages if m["role"] != "system"]
        max_tokens = min(request.max_tokens or self.max_tokens, self.max_tokens)  # the tighter of the two
        params: dict[str, Any] = {"model": self.name, "max_tokens": max_tokens}
        if self._takes_temperature:
            params["temperature"] = request.temperature if self.temperature is None or request.temperature \
                else self.temperature
        if system:
            params["system"] = system
        if self.mode == "tools":
            params["tools"] = [{"name": TOOL_NAME, "description": "Record the verdict.",
                                "input_schema": json_schema(request.schema)}]
            params["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        else:
            messages.append({"role": "user", "content": schema_instruction(request.schema)})
        params["messages"] = _alternate(messages)
        return params

    async def _complete(self, request: JudgeRequest) -> Completion:
        try:
            response = await self._client.get().messages.create(**self._params(request))
        except self._anthropic.APIConnectionError as exc:  # the SDK wraps what the response hook raised
            cause = exc.__cause__
            if isinstance(cause, TooLarge):
                raise too_large(cause, self.max_reply, backend=self.backend, model=self.name) from None
            if isinstance(cause, ValueError):
                raise ProviderError(f"unreadable reply: {cause}", backend=self.backend, model=self.name,
                                    retryable=True) from exc
            raise
        text, structured = "", False
        for block in response.content:
            if block.type == "tool_use":
                text, structured = json.dumps(block.input, ensure_ascii=False), True
                break
            if block.type == "text":
                text += block.text
        usage = response.usage
        note = "truncated at max_tokens" if response.stop_reason == "max_tokens" else None
        return Completion(text=text, input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0,
                          model=f"anthropic:{response.model}" if response.model else None, note=note,
                          structured=structured, truncated=note is not None)


def _alternate(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """Merge consecutive same-role messages: the Messages API wants user and assistant to alternate."""
    merged: list[dict[str, str]] = []
    for message in messages:
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1] = {"role": message["role"], "content": f"{merged[-1]['content']}\n\n{message['content']}"}
        else:
            merged.append(dict(message))
    return merged
