"""One redaction step for secrets, applied to every error message and raw judge reply before it is
stored, printed or written (and ``clip``, which bounds those texts).

Some providers and proxies echo the request's Authorization header in error bodies; a key that
reaches an exception message would otherwise end up in results files, the run store, reports,
stderr and ``--debug`` tracebacks. ``redact`` removes the exact values of the configured keys
(registered by the judge backends, and read from ``*_API_KEY``-style environment variables) and
anything shaped like a bearer token or a provider key.
"""

from __future__ import annotations

import os
import re
from typing import Any, TypeVar

REDACTED = "[REDACTED]"
_MIN_SECRET = 8  # shorter values ("none", "x") would redact ordinary words

_known: set[str] = set()
"""Exact secret values seen by this process (API keys given to backends, read from clients)."""

_ENV_NAME = re.compile(r"(API_?KEY|_TOKEN|_SECRET|_PASSWORD|ACCESS_KEY)$", re.IGNORECASE)
_PATTERNS = re.compile(
    r"(?i)\b(?P<scheme>bearer)\s+(?=[A-Za-z._~+/=-]*\d)[A-Za-z0-9._~+/=-]{8,}"  # Bearer <token with a digit>
    r"|(?P<label>[\"']?\b(?:x-api-key|api-key|api_key|apikey|access_token)[\"']?\s*[:=]\s*[\"']?)"
    r"[A-Za-z0-9._~+/-]{8,}"                                           # api_key=<value>, "x-api-key": "<value>"
    r"|\bsk-[A-Za-z0-9_-]{8,}"                                          # OpenAI / Anthropic (sk-ant-...) keys
    r"|\bAIza[0-9A-Za-z_-]{30,}"                                        # Google API keys
    r"|\b(?:gsk|xai|pplx|hf|ghp|gho|ghs|github_pat)_[A-Za-z0-9_]{16,}"  # Groq, xAI, Perplexity, HF, GitHub
)
T = TypeVar("T")


def register_secret(value: Any) -> None:
    """Remember an exact secret (an API key) so that ``redact`` removes it wherever it appears."""
    text = _plain(value)
    if text and len(text) >= _MIN_SECRET:
        _known.add(text)


def _plain(value: Any) -> str | None:
    if value is None:
        return None
    getter = getattr(value, "get_secret_value", None)  # pydantic SecretStr (LangChain models)
    if callable(getter):
        value = getter()
    return value if isinstance(value, str) else None


_memo: tuple[Any, int, list[str]] | None = None
"""(environment snapshot, number of known secrets, the sorted list): redact runs on every judge
reply, and decoding the environment each time cost more than the reply's own parsing."""


def _secrets() -> list[str]:
    global _memo
    data = getattr(os.environ, "_data", None)  # the raw mapping on POSIX: comparing it needs no decoding
    if _memo is not None and data is not None and _memo[1] == len(_known) and _memo[0] == data:
        return _memo[2]
    env = [v for k, v in os.environ.items() if _ENV_NAME.search(k) and len(v) >= _MIN_SECRET]
    found = sorted({*_known, *env}, key=len, reverse=True)  # longest first: a key that contains another
    _memo = (dict(data), len(_known), found) if data is not None else None
    return found


_HINTS = ("bearer", "api", "access_token", "sk-", "aiza", "gsk_", "xai_", "pplx_", "hf_", "ghp_", "gho_", "ghs_",
          "github_pat_")
"""A substring (lower case) that each alternative of _PATTERNS needs: text with none of them skips the regex."""


def redact(text: T) -> T:
    """``text`` with every known secret and anything key-shaped replaced by ``[REDACTED]``.

    Non-strings are returned unchanged; so is a string with nothing to redact (no copy).
    """
    if not isinstance(text, str) or not text:
        return text
    out = text
    for secret in _secrets():
        if secret in out:
            out = out.replace(secret, REDACTED)
    low = out.lower()
    if any(h in low for h in _HINTS):
        out = _PATTERNS.sub(_replace, out)
    return out  # type: ignore[return-value]


def _replace(match: re.Match[str]) -> str:
    if match.group("scheme"):
        return f"{match.group('scheme')} {REDACTED}"
    return (match.group("label") or "") + REDACTED


KEEP = 4000
"""Characters kept of a provider's text (an error message, a body, a raw reply): enough to read
what went wrong; a 50 MB error message would otherwise be copied into every result and the store."""


def clip(text: T, limit: int = KEEP) -> T:
    """*text* cut to *limit* characters, saying how long it was; non-strings unchanged.

    A text cut once (its note adds under 200 characters) is not cut again, so the length stated
    stays the original's as the text passes from an error to a verdict.
    """
    if not isinstance(text, str) or len(text) <= limit + 200:
        return text
    return f"{text[:limit]}... [cut: {len(text):,} characters in all]"  # type: ignore[return-value]


def redact_data(value: T) -> T:
    """``redact`` applied to every string inside dicts, lists and tuples (results' ``details``)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, (list, tuple)):
        return type(value)(redact_data(v) for v in value)  # type: ignore[return-value]
    return value
