"""The judge seam: what a metric sends (JudgeRequest), what it gets back (Verdict), and who answers.

Metrics see only these three names. Backends, parsing, retries, limits, budget and cache all live
behind ``Judge.judge`` so a metric never knows which model or transport produced its verdict.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .._secrets import clip, redact
from ..errors import ConfigError

if TYPE_CHECKING:
    import pydantic

    from ._parse import Schema


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """One question to a judge model; every field feeds the cache key."""

    messages: tuple[dict[str, str], ...]  # {"role": "system"|"user"|"assistant", "content": str}
    schema: Schema                        # the verdict must validate against it (a model, or one in an option order)
    key: str = ""          # "metric_name@rubric_version": feeds the cache key
    repeat: int = 0        # repeat index: independent cache entries for --repeats
    temperature: float = 0.0
    max_tokens: int | None = None
    content_key: str = ""  # digest of what the request says with fence nonces left out (see content_digest)


def content_digest(parts: Iterable[str]) -> str:
    """A digest of a request's content before fencing: the cache key uses it instead of the messages.

    Fence nonces carry a per-run secret, so messages differ between runs; the content does not.
    """
    # One update of the parts joined, each followed by the separator: the same bytes as one update
    # per part and per separator (UTF-8 encodes each character on its own, lone surrogates included).
    parts = list(parts)
    if not parts:
        return hashlib.sha256().hexdigest()
    return hashlib.sha256(("\x1e".join(parts) + "\x1e").encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One token of a reply with its log-probability and the most likely tokens at its place."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()   # (token, logprob) alternatives, the chosen one usually among them


@dataclass(frozen=True, slots=True)
class Verdict:
    """A judge's answer, or the reason there is none; failures are data, not exceptions."""

    parsed: pydantic.BaseModel | None     # None iff error is set
    raw: str                              # the judge's raw text (kept on errors too)
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None         # None = unknown price
    latency_s: float = 0.0
    cached: bool = False
    attempts: int = 1
    error: str | None = None              # why no verdict: parse failure, timeout, HTTP 500 x5 ...
    skipped: bool = False                 # not attempted (budget reached, dry run)
    queued_s: float = 0.0                 # waiting for a one-slot backend's slot (not in latency_s, not timed out)
    tokens: tuple[TokenLogprob, ...] | None = None  # the reply's tokens with log-probabilities, when asked for
                                                    # (logprobs=N) and the backend returns them; else None


@runtime_checkable
class Judge(Protocol):
    """Anything that turns a JudgeRequest into a Verdict.

    ``judge()`` never raises for a per-call failure (that is a Verdict with ``error``); it raises
    ``ProviderError`` only when every call is doomed (authentication refused, unknown model).
    """

    model: str

    async def judge(self, request: JudgeRequest) -> Verdict: ...


def errored(model: str, error: str, *, raw: str = "", skipped: bool = False, attempts: int = 1,
            **usage: float | int | None) -> Verdict:
    """A Verdict that carries only the reason there is no verdict (secrets redacted from both texts, both clipped)."""
    return Verdict(parsed=None, raw=clip(redact(raw)), model=model, error=clip(redact(error)), skipped=skipped,
                   attempts=attempts, **usage)  # type: ignore[arg-type]


def read_logprobs(choice: Any) -> tuple[TokenLogprob, ...] | None:
    """The tokens of an OpenAI-shaped chat completion choice's ``logprobs.content``, or None when it has none."""
    data = choice.get("logprobs") if isinstance(choice, dict) else None
    content = data.get("content") if isinstance(data, dict) else None
    if not isinstance(content, list) or not content:
        return None
    out = []
    for item in content:
        if not isinstance(item, dict) or not isinstance(item.get("token"), str):
            return None
        try:
            top = tuple((str(t["token"]), float(t["logprob"])) for t in item.get("top_logprobs") or ()
                        if isinstance(t, dict) and "token" in t)
            out.append(TokenLogprob(item["token"], float(item["logprob"]), top))
        except (KeyError, TypeError, ValueError):
            return None
    return tuple(out)


TOP_LOGPROBS = 10
"""Alternatives per token asked for by ``logprobs=True`` (OpenAI allows up to 20)."""


def check_logprobs(value: Any) -> int | None:
    """The ``logprobs`` option as a count of alternatives per token (True: TOP_LOGPROBS; None/False/0: off)."""
    if value is None or value is False or value == 0:
        return None
    if value is True:
        return TOP_LOGPROBS
    if isinstance(value, int) and 1 <= value <= 20:
        return value
    raise ConfigError(f"judge option logprobs: expected true or a whole number of alternatives 1-20, got {value!r}")
