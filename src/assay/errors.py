"""The exception tree; imports nothing else from assay.

AssayError
 ├── ConfigError    bad flags, unknown metric or judge, bad parameters   (CLI exit 2)
 ├── DataError      unreadable or invalid input: carries file, line, field (CLI exit 2)
 └── ProviderError  a judge backend refused or failed: backend, model, status, body

A metric that raises is not an error of the run: its result carries the failure (warning
``metric_error``, the exception in its reason), and the other metrics and traces are scored.

InputWarning (a UserWarning): input that is read but suspicious (a duplicate trace id); the
CLI prints it as one 'Warning: ...' line.

Messages say what was wrong, where, and the fix, and repr the bad value.
"""

from __future__ import annotations

from collections.abc import Iterable


class AssayError(Exception):
    """Root of every error assay raises on purpose."""


class ConfigError(AssayError):
    """A configuration value is wrong: unknown name, bad parameter, missing extra."""

    @classmethod
    def unknown(cls, kind: str, name: str, choices: Iterable[str]) -> "ConfigError":
        """An unknown *kind* called *name*, listing the closest valid choices."""
        import difflib  # here: only an error pays for it, not every start-up

        choices = sorted(choices)
        close = difflib.get_close_matches(name, choices, n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        return cls(f"unknown {kind} {name!r}.{hint} Choices: {', '.join(choices)}")

    @classmethod
    def missing_extra(cls, what: str, extra: str, package: str) -> "ConfigError":
        return cls(f"{what} needs the optional package {package!r}: pip install 'assay[{extra}]'")


class DataError(AssayError):
    """Input data that cannot be read or does not match the trace format."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.source, self.line, self.field, self.detail = source, line, field, message
        where = ":".join(str(p) for p in (source, line) if p is not None)
        parts = [p for p in (where, field) if p]
        super().__init__(": ".join([*parts, message]))


class ProviderError(AssayError):
    """A judge backend failed; ``retryable`` says whether trying again may help."""

    def __init__(self, message: str, *, backend: str = "", model: str = "", status: int | None = None,
                 body: str = "", retryable: bool = False, retry_after: float | None = None) -> None:
        from ._secrets import clip, redact  # a provider's error body may echo the request's API key
        message, body = clip(redact(message), 2000), clip(redact(body))
        self.backend, self.model, self.status, self.body = backend, model, status, body
        self.retryable, self.retry_after = retryable, retry_after
        head = " ".join(p for p in (backend, model) if p)
        code = f" (HTTP {status})" if status is not None else ""
        super().__init__(f"{head}{code}: {message}" if head else f"{message}{code}")


class InputWarning(UserWarning):
    """Input that is read but probably wrong: ``file:line: what``."""


class CacheWarning(UserWarning):
    """The judge cache could not be written (a full disk): the run goes on, its verdicts kept but not cached."""


__all__ = ["AssayError", "CacheWarning", "ConfigError", "DataError", "InputWarning", "ProviderError"]
