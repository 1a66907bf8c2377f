"""One redaction step for secrets, applied to every error message and raw judge reply before it is
stored, printed or written (and ``clip``, which bounds those texts).

Some providers and proxies echo the request's Authorization header in error bodies; a key that
reaches an exception message would otherwise end up in results files, the run store, reports,
stderr and ``--debug`` tracebacks. ``redact`` removes the exact values of the configured keys
(registered by the judge backends, and read from ``*_API_KEY``-style environment variables) and
anything shaped like a bearer token or a provider key. A server can echo a key in another form,
so each known secret is also removed JSON-escaped, URL-encoded, in hex (lower and upper case)
and in base64 (standard and URL-safe, at any alignment inside a longer base64 text); the credentials of a URL
(``http://user:password@host``) are removed wherever a URL is printed, and ``register_url``
adds such a password to the known secrets.
"""

from __future__ import annotations

import base64
import json
import os
import re
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus, urlsplit

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
    r"|(?P<url>\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#@\"'<>]+@"          # scheme://user:password@ -> scheme://[REDACTED]@
)
T = TypeVar("T")


def register_secret(value: Any) -> None:
    """Remember an exact secret (an API key) so that ``redact`` removes it wherever it appears."""
    text = _plain(value)
    if text and len(text) >= _MIN_SECRET:
        _known.add(text)


def register_url(url: Any) -> None:
    """Remember the password (and a user name long enough to be one) in *url*'s credentials."""
    if not isinstance(url, str) or "@" not in url:
        return
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return
    for value in (password, user):
        register_secret(value)


def without_credentials(url: T) -> T:
    """*url* with any ``user:password@`` taken out (for identities and messages that name a server)."""
    if not isinstance(url, str) or "@" not in url:
        return url
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@", r"\1", url)  # type: ignore[return-value]


def _forms(secret: str) -> set[str]:
    """*secret* as it may come back: as sent, JSON-escaped, URL-encoded, hex, base64 at each alignment."""
    out = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
           json.dumps(secret)[1:-1].replace("/", "\\/"), quote(secret, safe=""), quote_plus(secret)}
    raw = secret.encode()
    out |= {raw.hex(), raw.hex().upper()}  # a byte dump, a hex-encoded header
    for shift in range(3):  # inside a longer base64 text the secret starts at byte 0, 1 or 2 of a group
        full = (len(raw) + shift) // 3 * 4  # the characters of whole groups: the tail depends on what follows
        skip = (0, 2, 3)[shift]  # the characters that still encode the bytes before it
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            out.add(encode(b"\0" * shift + raw)[skip:full].decode())
    out |= {json.dumps(form)[1:-1] for form in out}  # and once more: a reply is JSON text inside JSON
    return {form for form in out if len(form) >= _MIN_SECRET}


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
    forms = {form for secret in {*_known, *env} for form in _forms(secret)}
    found = sorted(forms, key=len, reverse=True)  # longest first: a key that contains another
    _memo = (dict(data), len(_known), found) if data is not None else None
    return found


_HINTS = ("bearer", "api", "access_token", "sk-", "aiza", "gsk_", "xai_", "pplx_", "hf_", "ghp_", "gho_", "ghs_",
          "github_pat_", "://")
"""A substring (lower case) that each alternative of _PATTERNS needs: text with none of them skips the regex."""


def redact(text: T) -> T:
    """``text`` with every known secret and anything key-shaped replaced by ``[REDACTED]``.

    Non-strings are returned unchanged; so is a string with nothing to redact (no copy).
    """
    if not isinstance(text, str) or not text:
        return text
    out: str = text  # a str here (checked above); T for the callers
    for secret in _secrets():
        if secret in out:
            out = out.replace(secret, REDACTED)
    low = out.lower()
    if any(h in low for h in _HINTS):
        out = _PATTERNS.sub(_replace, out)
    return out  # type: ignore[return-value]


def _replace(match: re.Match[str]) -> str:
    if match.group("url"):
        return f"{match.group('url')}{REDACTED}@"
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
