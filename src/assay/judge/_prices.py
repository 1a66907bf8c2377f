"""Judge prices in USD per million tokens: a static table the user can override; never fetched.

Prices are list prices for standard (non-batch, non-cached) text tokens as published by the
providers in 2025; check them against your contract and pass ``prices={...}`` to override.
A model not in the table has an unknown cost (None), never 0; local servers cost 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from assay.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Price:
    """USD per 1M input and output tokens."""

    input: float
    output: float

    def __post_init__(self) -> None:
        for name in ("input", "output"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise ConfigError(f"price: {name}: expected a finite number >= 0 (USD per 1M tokens), got {value!r}")

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000


PRICES: Mapping[str, Price] = {
    # OpenAI
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4-turbo": Price(10.00, 30.00),
    "gpt-3.5-turbo": Price(0.50, 1.50),
    "o1": Price(15.00, 60.00),
    "o1-mini": Price(1.10, 4.40),
    "o3": Price(2.00, 8.00),
    "o3-mini": Price(1.10, 4.40),
    "o4-mini": Price(1.10, 4.40),
    # Anthropic
    "claude-3-haiku": Price(0.25, 1.25),
    "claude-3-5-haiku": Price(0.80, 4.00),
    "claude-haiku-4-5": Price(1.00, 5.00),
    "claude-3-5-sonnet": Price(3.00, 15.00),
    "claude-3-7-sonnet": Price(3.00, 15.00),
    "claude-sonnet-4": Price(3.00, 15.00),
    "claude-sonnet-4-5": Price(3.00, 15.00),
    "claude-3-opus": Price(15.00, 75.00),
    "claude-opus-4": Price(15.00, 75.00),
    "claude-opus-4-1": Price(15.00, 75.00),
    # Google (prompts up to 200k tokens)
    "gemini-1.5-flash": Price(0.075, 0.30),
    "gemini-1.5-pro": Price(1.25, 5.00),
    "gemini-2.0-flash": Price(0.10, 0.40),
    "gemini-2.0-flash-lite": Price(0.075, 0.30),
    "gemini-2.5-flash": Price(0.30, 2.50),
    "gemini-2.5-flash-lite": Price(0.10, 0.40),
    "gemini-2.5-pro": Price(1.25, 10.00),
}

_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "host.docker.internal"}


def is_local_url(url: str | None) -> bool:
    """True for a base URL on this machine, where calls cost nothing."""
    if not url:
        return False
    host = (urlsplit(url if "//" in url else f"//{url}").hostname or "").lower()
    return host in _LOCAL_HOSTS or host.startswith("127.") or host.endswith(".localhost")


def _normalise(model: str) -> str:
    model = model.lower().rsplit("/", 1)[-1]  # "models/gemini-2.0-flash", "openai/gpt-4o" (OpenRouter)
    head, sep, tail = model.partition(":")
    return tail if sep and head.isalpha() else model  # "openai:gpt-4o"; keeps "llama3:8b"


def _match(model: str, table: Mapping[str, Price]) -> Price | None:
    """The longest entry *model* starts with on a dash boundary.

    Maps dated and aliased names ("gpt-4o-2024-08-06", "claude-3-5-sonnet-latest") to their family
    without letting "gpt-4o" price "gpt-4o-mini".
    """
    name = _normalise(model)
    best = None
    for entry in table:
        if name == entry or name.startswith(entry + "-"):
            if best is None or len(entry) > len(best):
                best = entry
    return table[best] if best is not None else None


def lookup_price(model: str, overrides: Mapping[str, Price | tuple[float, float]] | None = None) -> Price | None:
    """The list price of *model*, with *overrides* (name -> Price or (input, output)) taking precedence."""
    return resolve_price(model, local=False, overrides=overrides)


def resolve_price(model: str, *, local: bool,
                  overrides: Mapping[str, Price | tuple[float, float]] | None = None) -> Price | None:
    """A user override wins; otherwise a local server is free and a known model has its list price."""
    custom = {_normalise(k): v if isinstance(v, Price) else Price(*v) for k, v in (overrides or {}).items()}
    price = _match(model, custom)
    if price is not None:
        return price
    if local:
        return Price(0.0, 0.0)
    return _match(model, PRICES)
