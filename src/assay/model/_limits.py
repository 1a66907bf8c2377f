"""Bounds on one input record, and the text hygiene applied to it before anything else sees it.

Every JSON value an importer reads passes through here (``depth_exceeds`` and friends on native JSON Lines,
``check_value`` for decoded values, ``loads`` for JSON nested in strings), so that no record
downstream is nested deeper than ``max_depth``, larger than ``max_record_bytes``, holds a string
longer than ``max_string_bytes``, or holds text that cannot be written out again (a lone UTF-16
surrogate, invalid UTF-8). A record over a limit, or with bad text under ``on_bad_text="error"``,
becomes a located error for that record only; the rest of the file is read.

The checks cost almost nothing on ordinary records: each starts with a test at C speed that
can only pass (fewer brackets than the depth limit, no ``\\ud8..`` escape, no byte over 0x7f)
and walks the record only when that test cannot decide.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

MAX_DEPTH_CEILING = 512
"""The highest nesting limit allowed: deeper data could exhaust Python's stack in the writers."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one input record may hold (CLI: ``--max-depth``, ``--max-record-mb``, ``--on-bad-text``)."""

    max_depth: int = 256
    """Nesting of arrays and objects, counting the record itself as level 1."""
    max_record_bytes: int = 128 << 20
    """Size of one record (a JSON Lines line, an array element, a document) as read."""
    max_string_bytes: int = 64 << 20
    """Length of one string value or key, in UTF-8 bytes (approximately: characters)."""
    on_bad_text: Literal["error", "replace"] = "error"
    """'error': a record with invalid UTF-8 or a lone surrogate is rejected with its location;
    'replace': each bad byte or surrogate becomes U+FFFD and the record is kept."""

    def __post_init__(self) -> None:
        if not 1 <= self.max_depth <= MAX_DEPTH_CEILING:
            raise ValueError(f"max_depth must be between 1 and {MAX_DEPTH_CEILING}, got {self.max_depth!r}")
        if self.max_record_bytes < 1 or self.max_string_bytes < 1:
            raise ValueError("size limits must be positive")
        if self.on_bad_text not in ("error", "replace"):
            raise ValueError(f"on_bad_text must be 'error' or 'replace', got {self.on_bad_text!r}")


DEFAULT = Limits()
_current: ContextVar[Limits] = ContextVar("assay_input_limits", default=DEFAULT)


def current() -> Limits:
    """The limits in force (``reading_limits`` sets them for a block of code)."""
    return _current.get()


@contextlib.contextmanager
def reading_limits(limits: Limits) -> Iterator[Limits]:
    """Read every input inside the block under ``limits`` (the CLI wraps a run in this)."""
    token = _current.set(limits)
    try:
        yield limits
    finally:
        _current.reset(token)


class RecordError(ValueError):
    """A record breaks a limit or holds bad text; ``field`` is where, when known."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message, self.field = message, field


def too_deep(limits: Limits) -> RecordError:
    return RecordError(f"nested deeper than {limits.max_depth} levels (the limit; see --max-depth)")


def too_large(size: int, limits: Limits) -> RecordError:
    return RecordError(f"record is {_mb(size)}, over the limit of {_mb(limits.max_record_bytes)} "
                       "(see --max-record-mb)")


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} bytes"


# --------------------------------------------------------------------------- depth

_QUOTE, _BACKSLASH = 34, 92
_NOT_OPENERS = bytes(c for c in range(256) if c not in b"[{")
_BLOCK = 1 << 20


def depth_exceeds(data: bytes | str, limit: int) -> bool:
    """Whether the JSON text ``data`` nests arrays/objects deeper than ``limit`` (strings ignored).

    Counting brackets is an upper bound on the depth, so most records stop at the first line.
    Otherwise the brackets outside strings are summed with numpy, a block at a time (memory
    stays small on a 100 MB line); numpy is imported only then.
    """
    if isinstance(data, str):
        if data.count("[") + data.count("{") <= limit:
            return False
        data = data.encode("utf-8", "surrogatepass")
    elif len(data.translate(None, _NOT_OPENERS)) <= limit:  # one pass: the cheapest bound on long lines
        return False
    import numpy as np

    lut = np.zeros(256, np.int32)
    lut[[ord("["), ord("{")]] = 1
    lut[[ord("]"), ord("}")]] = -1
    whole = np.frombuffer(data, np.uint8)
    in_string, backslashes, depth = 0, 0, 0
    for start in range(0, whole.size, _BLOCK):
        a = whole[start:start + _BLOCK]
        q = np.flatnonzero(a == _QUOTE)
        bs = a == _BACKSLASH
        if q.size and (backslashes or bs.any()):
            # a quote is escaped when an odd run of backslashes precedes it
            last = np.maximum.accumulate(np.where(bs, -1, np.arange(a.size)))
            prev = q - 1
            run = np.where(prev >= 0, prev - last[np.maximum(prev, 0)], 0)
            run = np.where(run == prev + 1, run + backslashes, run)  # the run reaches back into the last block
            q = q[run % 2 == 0]
        toggles = np.zeros(a.size, np.int32)
        toggles[q] = 1
        inside = (np.cumsum(toggles, dtype=np.int32) + in_string) & 1
        levels = np.cumsum(np.where(inside == 1, 0, lut[a]), dtype=np.int32) + depth
        if int(levels.max()) > limit:
            return True
        depth = int(levels[-1])
        in_string = (in_string + int(q.size)) & 1
        plain = np.flatnonzero(~bs)
        backslashes = a.size - 1 - int(plain[-1]) if plain.size else backslashes + a.size
    return False


def _value_depth_exceeds(value: Any, limit: int) -> bool:
    """The same test on a decoded value, without recursion."""
    if type(value) is not dict and type(value) is not list:
        return False
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            return True
        for child in (v.values() if type(v) is dict else v):
            if type(child) is dict or type(child) is list:
                stack.append((child, d + 1))
    return False


# --------------------------------------------------------------------------- text

_LONE = r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F]"
_LONE_ESCAPE = re.compile(_LONE.encode())
_LONE_ESCAPE_STR = re.compile(_LONE)
"""A JSON escape of a lone surrogate (a high one not followed by a low one, or a low one alone)."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def may_have_lone_surrogate(raw: bytes | str) -> bool:
    """Whether JSON text could decode to a string holding a lone surrogate (cheap; may say yes wrongly).

    In text, an actual surrogate character is one too: it is how an undecodable byte arrives
    when the text was decoded with 'surrogateescape'.
    """
    if isinstance(raw, str):
        if not raw.isascii():
            try:
                raw.encode("utf-8")
            except UnicodeEncodeError:
                return True
        return ("\\ud" in raw or "\\uD" in raw) and _LONE_ESCAPE_STR.search(raw) is not None
    return (b"\\ud" in raw or b"\\uD" in raw) and _LONE_ESCAPE.search(raw) is not None


def _path(parts: list[str | int]) -> str:
    out = ""
    for p in parts:
        out = f"{out}[{p}]" if isinstance(p, int) else (f"{out}.{p}" if out else p)
    return out


def _escaped(s: str) -> str:
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", s)


def _bad_text(s: str) -> str:
    m = _SURROGATE.search(s)
    code = ord(m.group()) if m else 0
    if 0xDC80 <= code <= 0xDCFF:  # how 'surrogateescape' carries an undecodable byte
        return f"not valid UTF-8: byte 0x{code - 0xDC00:02x}"
    return f"lone surrogate \\u{code:04x} (not valid Unicode)"


def check_value(value: Any, limits: Limits, *, raw: bytes | str | None = None) -> Any:
    """``value`` within the limits and with clean text (repaired under 'replace'), or RecordError.

    ``raw`` is the JSON text the value came from: the walk over the value is skipped when the
    text shows that nothing in it can break a limit.
    """
    if raw is not None:
        if depth_exceeds(raw, limits.max_depth):
            raise too_deep(limits)
        surrogates = may_have_lone_surrogate(raw)
        long_strings = len(raw) > limits.max_string_bytes
        if not (surrogates or long_strings):
            return value
    else:
        if _value_depth_exceeds(value, limits.max_depth):
            raise too_deep(limits)
        surrogates = long_strings = True
    return _walk(value, limits, surrogates, long_strings)


def _walk(value: Any, limits: Limits, surrogates: bool, long_strings: bool) -> Any:
    """Check (and under 'replace' repair) every string and key, without recursion; returns the value."""
    top = [value]
    stack: list[tuple[Any, Any, list[str | int]]] = [(top, 0, [])]
    while stack:
        parent, key, path = stack.pop()
        v = parent[key]
        t = type(v)
        if t is str:
            parent[key] = _clean(v, limits, surrogates, long_strings, path, False)
        elif t is list:
            stack.extend((v, i, [*path, i]) for i in range(len(v)))
        elif t is dict:
            keys = list(v)
            clean = [_clean(k, limits, surrogates, long_strings, [*path, k], True) for k in keys]
            if any(c is not k for c, k in zip(clean, keys)):
                values = list(v.values())
                v.clear()
                v.update(zip(clean, values))
            stack.extend((v, k, [*path, k]) for k in v)
    return top[0]


def _clean(s: str, limits: Limits, surrogates: bool, long_strings: bool, path: list[str | int],
           is_key: bool) -> str:
    where = _path(path[:-1] if is_key else path) or None
    if long_strings and len(s) > limits.max_string_bytes:
        raise RecordError(f"{'a key' if is_key else 'a string'} of {_mb(len(s))}, over the limit of "
                          f"{_mb(limits.max_string_bytes)}", where)
    if surrogates and _SURROGATE.search(s):
        if limits.on_bad_text == "replace":
            return _SURROGATE.sub("\ufffd", s)
        what = f"key \"{_escaped(s)}\": " if is_key else ""
        raise RecordError(f"{what}{_bad_text(s)}; use --on-bad-text=replace to keep the record with U+FFFD", where)
    return s


def reject_constant(name: str) -> Any:
    """``parse_constant`` for the stdlib decoder: NaN and Infinity are not JSON (msgspec agrees)."""
    raise RecordError(f"{name} is not valid JSON (numbers must be finite)")


def decode_text(line: bytes, limits: Limits) -> str:
    """UTF-8 bytes as text; invalid bytes are a RecordError, or U+FFFD under 'replace'."""
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        if limits.on_bad_text == "replace":
            return line.decode("utf-8", "replace")
        raise RecordError(f"not valid UTF-8: byte 0x{line[exc.start]:02x} at column {exc.start + 1}; "
                          "use --on-bad-text=replace to keep the record with U+FFFD") from None


def loads(text: str | bytes, limits: Limits | None = None) -> Any:
    """``json.loads`` within the limits, for JSON held inside a string (tool arguments, attributes).

    Raises ValueError (a RecordError for a limit or bad text) like ``json.loads``.
    """
    limits = limits or current()
    if len(text) > limits.max_record_bytes:
        raise too_large(len(text), limits)
    if isinstance(text, bytes):
        text = decode_text(text, limits)
    if depth_exceeds(text, limits.max_depth):
        raise too_deep(limits)
    try:
        value = json.loads(text, parse_constant=reject_constant)
    except RecursionError:
        raise too_deep(limits) from None
    if may_have_lone_surrogate(text) or len(text) > limits.max_string_bytes:
        return _walk(value, limits, True, True)
    return value
