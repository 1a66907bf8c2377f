"""What each built-in judge backend takes: one typed options class per backend, checked where the
backend is built, so an option a backend does not read is a ConfigError naming both (never a
TypeError three frames down, never silently dropped).

A plugin's or a registered factory declares what it takes by its signature: keyword parameters,
or ``**options`` for anything.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from assay.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class HTTPOptions:
    """Options of every backend that calls a provider over HTTP."""

    base_url: str | None = None
    api_key: str | None = None
    timeout: float | str | None = None
    prices: Mapping[str, Any] | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    structured: str | None = None
    """How the verdict's schema is asked for (json_schema, json_object, tools, text)."""


@dataclass(frozen=True, kw_only=True)
class OpenAIOptions(HTTPOptions):
    """OpenAI's chat completions and every compatible server (vLLM, llama.cpp, Ollama, LiteLLM, Azure ...)."""

    max_reply_mb: float | None = None
    """The largest reply read, in MiB decompressed (enforced while reading)."""
    api_version: str | None = None
    extra_body: Mapping[str, Any] | None = None
    default_headers: Mapping[str, str] | None = None
    logprobs: int | bool | None = None
    """Ask for token log-probabilities (``logprobs``/``top_logprobs``): True, or alternatives per token."""


@dataclass(frozen=True, kw_only=True)
class AnthropicOptions(HTTPOptions):
    """Anthropic's messages API (through its SDK, whose replies are read through the bounded path)."""

    max_reply_mb: float | None = None
    """The largest reply read, in MiB decompressed (enforced while reading)."""


@dataclass(frozen=True, kw_only=True)
class LocalOptions:
    """An in-process GGUF judge (``local:PATH.gguf``, xllamacpp)."""

    threads: int | None = None
    n_ctx: int | None = None
    gpu_layers: int | None = None
    timeout: float | str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    text_limit: int | None = None
    """Characters of each evaluated text shown to the model."""
    quote_limit: int | None = None
    """Characters of each quote the model may return."""
    base_url: str | None = None  # ASSAY_JUDGE_BASE_URL reaches every backend: a local judge has no URL to use
    api_key: str | None = None
    prices: Mapping[str, Any] | None = None
    structured: str | None = None
    logprobs: int | bool | None = None
    """Ask llama.cpp for token log-probabilities: True, or alternatives per token."""


OPTIONS: dict[str, type] = {"openai": OpenAIOptions, "anthropic": AnthropicOptions, "local": LocalOptions}
"""Options class by backend kind."""

_WHY = {
    ("local", "max_reply_mb"): "an in-process judge has no reply to download: bound what it writes with "
                               "--max-tokens (max_tokens)",
    ("anthropic", "api_version"): "it is an Azure OpenAI setting",
    ("anthropic", "extra_body"): "it is an OpenAI-compatible setting",
    ("anthropic", "default_headers"): "it is an OpenAI-compatible setting",
    ("anthropic", "logprobs"): "Anthropic's messages API returns no token log-probabilities",
}
_LOCAL_ONLY = ("threads", "n_ctx", "gpu_layers")


def accepted(kind: str) -> frozenset[str]:
    """The options the ``kind`` backend takes."""
    return frozenset(f.name for f in dataclasses.fields(OPTIONS[kind]))


def check_options(kind: str, label: str, options: Mapping[str, Any]) -> None:
    """ConfigError for the first option the ``kind`` backend (``label``: its model string) does not take."""
    takes = accepted(kind)
    for name in options:
        if name in takes:
            continue
        if name in _LOCAL_ONLY:
            raise ConfigError(f"judge option {name} applies only to an in-process judge (local:PATH.gguf), "
                              f"not to {label}")
        why = _WHY.get((kind, name))
        raise ConfigError(f"judge backend {label} does not take option {name!r}" + (f": {why}" if why else
                          f"{_did_you_mean(name, takes)}; it takes: {', '.join(sorted(takes))}"))


def _did_you_mean(name: str, takes: frozenset[str]) -> str:
    """' (did you mean 'concurrency'?)' for a slip of a backend's option or of a judge option every backend has
    (``[judge] concurency = 4`` listed only the backend's, without the one meant)."""
    import difflib

    from ..model._options import JudgeOptions

    every = takes | {f.name for f in dataclasses.fields(JudgeOptions) if f.name != "extra"}
    close = difflib.get_close_matches(name, sorted(every), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_factory(factory: Callable[..., Any], label: str, options: Mapping[str, Any], *, positional: int = 1) -> None:
    """ConfigError when a plugin's or registered factory's signature (or an adapter class's) does not take one
    of ``options``; its first ``positional`` parameters (the model, the object adapted) are not options."""
    try:
        params = list(inspect.signature(factory).parameters.values())[positional:]
    except (TypeError, ValueError):  # a builtin or C callable: it will say for itself
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    takes = {p.name for p in params if p.kind in (inspect.Parameter.KEYWORD_ONLY,
                                                   inspect.Parameter.POSITIONAL_OR_KEYWORD)}
    for name in options:
        if name not in takes:
            raise ConfigError(f"{label} does not take option {name!r}; it takes: "
                              f"{', '.join(sorted(takes)) or 'none'}")
