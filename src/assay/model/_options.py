"""Every setting of a judge, typed, with its default written once and checked once.

The CLI flags, a config file's ``[judge]`` table, ``make_judge(**options)`` and
``assay.evaluate(**judge_options)`` all become one :class:`JudgeOptions`; the stack
(:func:`assay.judge.compose`), the backend factories and a distributed run's workers read its
fields and parse nothing again. A field marked ``backend`` goes to the backend factory when it is
set (``None`` leaves the backend's own default); the others configure the stack's layers.
A new judge setting is a field here, its CLI option (``cli/_judge_options.py``) and its use.
The type lives in ``model`` (plain data, no judge machinery) so that the engine and the CLI
can hold one without loading the judge package.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ConfigError

PROMPT_STYLES = ("auto", "full", "compact")
"""``full``: the whole rubric, quoted evidence and a reasoned verdict. ``compact``: a short rubric,
a one-sentence rationale, turn numbers instead of free-text quotes where the metric has them, and
``max_tokens`` bounded by the verdict schema - what a small local model can follow, fast."""
ORDINAL_ORDERS = ("auto", "natural", "reversed", "shuffled")
"""How options of an ordinal scale are listed: as the rubric lists them, reversed, or in a
per-request order (labels shuffled; a numeric scale keeps its numbers in sequence and only its
direction changes per request)."""

CONCURRENCY = 16
"""Judge calls in flight at the start of a run (the only place this default is written)."""
GROWTH = 4
"""Default ``max_concurrency``: this many times ``concurrency``, for backends that serve many calls
at once (``Backend.elastic``: the HTTP providers, not a single-slot local server or an in-process
model)."""
RETRIES = 5
"""Retries of a call that failed transiently (429, 5xx, a timeout)."""
REMOTE_TIMEOUT, LOCAL_TIMEOUT = 60.0, 600.0
"""Default seconds per call: a local server on a CPU often needs minutes for one verdict."""
MAX_REPLY_MB = 16
"""MiB of one reply, decompressed: a verdict is a few KB; a 16 MiB one is already a broken server."""
N_CTX = 8192
"""Context size in tokens of an in-process (local:PATH.gguf) judge."""

# Every judge default is written above or in the fields below, once; the CLI's help texts, the
# stack and the backends read them from here.

_BACKEND = {"backend": True}


@dataclass(frozen=True, kw_only=True)
class JudgeOptions:
    """A judge's settings: the stack's layers, then (``backend`` metadata) what the backend is built with."""

    # -- the stack (see compose) ---------------------------------------------------------------
    concurrency: int = CONCURRENCY
    max_concurrency: int | None = None
    """How far the concurrency limit may grow; None: GROWTH x concurrency for elastic backends."""
    rpm: float | None = None
    tpm: float | None = None
    adaptive: bool = True
    retries: int = RETRIES
    base_delay: float = 0.5
    max_delay: float = 20.0
    reasks: int = 2
    trip_after: int | None = 32
    trip_grace_s: float = 30.0
    budget_usd: float | None = None
    budget_tokens: int | None = None
    cache: Any = True
    """True: the default file; a path or JudgeCache; False/None: no cache."""
    prompt_style: str = "auto"
    ordinal_order: str = "auto"
    dry_run: bool = False
    """Send nothing: estimate calls, tokens and cost."""
    thresholds: Mapping[str, float] | None = None
    """Per-question decision thresholds, ``{"failure_rate.admits": 0.35}``: a yes/no answer is yes when the
    judge's P(yes) (from token log-probabilities, ``logprobs``) reaches its threshold; without
    probabilities, or for a question not listed, the judge's own token decides (the default)."""

    # -- the backend (passed to its factory when set) ------------------------------------------
    base_url: str | None = field(default=None, metadata=_BACKEND)
    api_key: str | None = field(default=None, metadata=_BACKEND, repr=False)
    timeout: float | str | None = field(default=None, metadata=_BACKEND)
    """Seconds per call; None: the backend's default (60 s remote, 600 s local server)."""
    prices: Mapping[str, Any] | None = field(default=None, metadata=_BACKEND)
    max_tokens: int | None = field(default=None, metadata=_BACKEND)
    temperature: float | None = field(default=None, metadata=_BACKEND)
    seed: int | None = field(default=None, metadata=_BACKEND)
    threads: int | None = field(default=None, metadata=_BACKEND)
    n_ctx: int | None = field(default=None, metadata=_BACKEND)
    max_reply_mb: float | None = field(default=None, metadata=_BACKEND)
    """The largest reply accepted, in MiB decompressed; None: the backend's default."""
    logprobs: int | bool | None = field(default=None, metadata=_BACKEND)
    """Ask the backend for token log-probabilities (OpenAI-compatible servers, local:PATH.gguf): True, or
    the alternatives per token (1-20); None: not asked, requests unchanged."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Other keyword arguments for the backend factory (``structured``, ``api_version``, a plugin's own)."""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "prompt_style", check_choice("prompt style", self.prompt_style, PROMPT_STYLES))
        set_(self, "ordinal_order", check_choice("ordinal order", self.ordinal_order, ORDINAL_ORDERS))
        set_(self, "thresholds", check_thresholds(self.thresholds))
        for name in ("concurrency", "max_concurrency", "retries", "reasks", "budget_tokens", "max_tokens", "threads",
                     "n_ctx", "trip_after"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ConfigError(f"judge option {name}: expected a whole number, got {value!r}")
        if self.concurrency < 1:
            raise ConfigError(f"judge option concurrency: expected at least 1, got {self.concurrency!r}")
        if self.max_concurrency is not None and self.max_concurrency < self.concurrency:
            raise ConfigError(f"--max-concurrency ({self.max_concurrency}) is below --concurrency ({self.concurrency})")
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and not (_number(value) and value > 0):
                raise ConfigError(f"judge option {name}: expected a number > 0, got {value!r}")
        for name in ("retries", "reasks", "budget_usd", "budget_tokens", "base_delay", "max_delay", "trip_grace_s",
                     "temperature"):
            value = getattr(self, name)
            if value is not None and not (_number(value) and value >= 0):
                raise ConfigError(f"judge option {name}: expected a number >= 0, got {value!r}")

    @classmethod
    def of(cls, options: Mapping[str, Any] | JudgeOptions | None = None, **more: Any) -> JudgeOptions:
        """Options from keyword arguments (``make_judge``'s, a ``[judge]`` table): the fields by name,
        anything else into ``extra`` for the backend. A JudgeOptions is returned as it is (``more``
        replaces its fields)."""
        if isinstance(options, JudgeOptions):
            return options.replace(**more) if more else options
        given = {**(options or {}), **more}
        known = {k: given.pop(k) for k in list(given) if k in _FIELDS}
        if given:
            known["extra"] = {**dict(known.get("extra") or {}), **given}
        return cls(**known)

    def replace(self, **changes: Any) -> JudgeOptions:
        """These options with some fields changed (``extra`` keys merge), checked again."""
        known = {k: changes.pop(k) for k in list(changes) if k in _FIELDS}
        if changes:
            known["extra"] = {**dict(self.extra), **dict(known.get("extra") or {}), **changes}
        return dataclasses.replace(self, **known)

    def given(self) -> dict[str, Any]:
        """The options that differ from the defaults, as keyword arguments (``extra`` spread out)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name != "extra" and getattr(self, f.name) != _DEFAULTS[f.name]}
        return {**out, **self.extra}

    def backend(self) -> dict[str, Any]:
        """Keyword arguments for the backend factory: the backend fields that are set, and ``extra``."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.metadata.get("backend") and getattr(self, f.name) is not None}
        return {**out, **self.extra}

    def stack(self) -> dict[str, Any]:
        """Keyword arguments of the stack's layers (``compose``), every one."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if not f.metadata.get("backend") and f.name not in ("extra", "dry_run")}

    def split(self, slots: int, processes: int) -> JudgeOptions:
        """One worker's share when *slots* shards score at once on *processes* processes: concurrency,
        rpm and tpm divided by the slots, the budget by the processes."""
        share = max(1, self.concurrency // slots)
        return dataclasses.replace(
            self, concurrency=share,
            max_concurrency=None if self.max_concurrency is None else max(share, self.max_concurrency // slots),
            rpm=None if self.rpm is None else self.rpm / slots, tpm=None if self.tpm is None else self.tpm / slots,
            budget_usd=None if self.budget_usd is None else self.budget_usd / processes,
            budget_tokens=None if self.budget_tokens is None else self.budget_tokens // processes)


def check_thresholds(value: Any) -> dict[str, float] | None:
    """Decision thresholds as ``{"metric.question": p}`` (or ``"metric.sheet.question"``: a question asked on
    several sheets, decided on one), from a mapping or ``"metric.question=p"`` strings (the CLI's); None or
    empty: none."""
    if not value:
        return None
    if isinstance(value, str):
        value = [value]
    items: list[tuple[Any, Any]] = []
    if isinstance(value, Mapping):
        items = list(value.items())
    else:
        for entry in value:
            key, sep, p = str(entry).partition("=")
            if not sep:
                raise ConfigError(f"judge threshold {entry!r}: expected METRIC.QUESTION=P, e.g. failure_rate.admits=0.35")
            items.append((key.strip(), p.strip()))
    out: dict[str, float] = {}
    for key, p in items:
        parts = str(key).split(".")  # metric.question, or metric.sheet.question
        if len(parts) not in (2, 3) or not all(parts):
            raise ConfigError(f"judge threshold {key!r}: expected METRIC.QUESTION or METRIC.SHEET.QUESTION "
                              "(e.g. failure_rate.admits, goal_achievement_rate.delivery.got_everything)")
        try:
            number = float(p) if not isinstance(p, bool) else math.nan
        except (TypeError, ValueError):
            number = math.nan
        if not 0.0 <= number <= 1.0:
            raise ConfigError(f"judge threshold {key}: expected a probability between 0 and 1, got {p!r}")
        out[str(key)] = number
    return dict(sorted(out.items()))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def check_choice(kind: str, value: Any, allowed: tuple[str, ...]) -> str:
    text = str(value).strip().lower() if value is not None else "auto"
    if text not in allowed:
        raise ConfigError.unknown(kind, str(value), allowed)
    return text


_FIELDS = frozenset(f.name for f in dataclasses.fields(JudgeOptions))
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(JudgeOptions) if f.name != "extra"}
