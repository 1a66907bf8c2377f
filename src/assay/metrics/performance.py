"""Performance metrics (UAEF) and turn efficiency: deterministic, from recorded numbers.

Quality for token and cost efficiency comes from ``trace.metadata["quality_score"]`` when given,
else from the response-quality metrics already computed on the trace (``after=``). Unlike UAEF,
``hallucination_score`` is used as is: it already means 1.0 = no hallucination (UAEF inverts
it, so that more hallucination raised the quality).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from ..errors import ConfigError
from ..model import MetricResult, Warning
from . import _memo
from ._base import MetricContext, metric

QUALITY_METRICS = ("answer_relevance", "completeness", "accuracy", "hallucination_score")
"""Response-quality metrics averaged into the quality score (all: 1.0 = best)."""
PENALTY_EXPONENTS = {"light": 0.5, "heavy": 1.0}


def _positive(metric_name: str, field: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ConfigError(f"metric {metric_name!r}: {field} must be a positive number, got {value!r}")


def _exponent(metric_name: str, penalty: str) -> float:
    try:
        return PENALTY_EXPONENTS[penalty]
    except KeyError:
        raise ConfigError(f"metric {metric_name!r}: penalty must be one of 'light', 'heavy', got {penalty!r}") from None


def quality_score(ctx: MetricContext) -> tuple[float | None, str, Warning | None]:
    """(quality, where it came from, warning if unusable) for the efficiency metrics."""
    meta = ctx.trace.metadata.get("quality_score")
    if meta is not None:
        if isinstance(meta, bool) or not isinstance(meta, (int, float)) or not 0.0 <= meta <= 1.0:
            return None, f"metadata.quality_score must be a number in [0, 1], got {meta!r}", Warning.INVALID_DATA
        return float(meta), "metadata.quality_score", None
    scores = {}
    for name in QUALITY_METRICS:
        r = ctx.results.get(name)
        if r is not None and r.score is not None:
            scores[name] = r.score
    if not scores:
        return None, ("no quality score: give metadata.quality_score or run one of "
                      + ", ".join(QUALITY_METRICS)), Warning.MISSING_DATA
    return sum(scores.values()) / len(scores), "mean of " + ", ".join(sorted(scores)), None


def efficiency(quality: float, used: float, expected: float, exponent: float) -> float:
    """quality if used <= expected, else quality / (used / expected) ** exponent."""
    return quality if used <= expected else quality / (used / expected) ** exponent


@metric("latency_score", dimension="performance", requires=("latency",),
        summary="1.0 if latency <= threshold_ms else threshold_ms / latency")
@dataclass(frozen=True, kw_only=True)
class LatencyScore:
    """End-to-end latency against a budget (UAEF); uses ``Trace.total_latency_ms``."""

    threshold: float = 0.7
    threshold_ms: float = 2000.0
    """Latency budget in milliseconds."""

    def __post_init__(self) -> None:
        _positive("latency_score", "threshold_ms", self.threshold_ms)

    def score(self, ctx: MetricContext) -> MetricResult:
        latency = ctx.trace.total_latency_ms()
        if latency is None:
            return ctx.null(Warning.MISSING_DATA, "no latency recorded (latency_ms on the trace or its turns)")
        if latency < 0 or not math.isfinite(latency):
            return ctx.null(Warning.INVALID_DATA, f"latency must be a non-negative number, got {latency!r}")
        budget = self.threshold_ms
        s = 1.0 if latency <= budget else budget / latency
        return ctx.result(s, _LATENCY_REASON % (latency, _budget_text(budget)), details={"latency_ms": latency})


_LATENCY_REASON = "%.0f ms against a %s ms budget"
"""f"{latency:.0f} ms against a {threshold_ms:.0f} ms budget", the budget formatted once per value (the
reason is built for every trace)."""


@lru_cache(maxsize=64)
def _budget_text(budget: float) -> str:
    return f"{budget:.0f}"


def _g(x: float) -> str:
    """``f"{x:g}"``; an int below a million (token counts) formats as ``str``, which is the same text."""
    return str(x) if type(x) is int and -1000000 < x < 1000000 else format(x, "g")


_USAGE_REASON = "quality %.2f (%s); %s %s = %.2fx expected"
"""f"quality {quality:.2f} ({source}); {what} {used:g} = {ratio:.2f}x expected" (%-formatting is the
same text, made faster)."""


def _usage_efficiency(ctx: MetricContext, key: str, used: Any, what: str, expected: float,
                      exponent: float) -> MetricResult:
    if used is None:
        return ctx.null(Warning.MISSING_DATA, f"no {what} recorded (usage on the trace, its turns or agents)")
    if type(used) is not int or used < 0:  # (a whole number of tokens, not negative, is finite)
        if used < 0 or not math.isfinite(used):
            return ctx.null(Warning.INVALID_DATA, f"{what} must be non-negative, got {used!r}")
    meta = ctx.trace.metadata.get("quality_score")
    if type(meta) is float and 0.0 <= meta <= 1.0:  # what quality_score gives for it, without the general checks
        quality, source = meta, "metadata.quality_score"
    else:
        q, source, warning = quality_score(ctx)
        if q is None:
            return ctx.null(warning or Warning.MISSING_DATA, source)
        quality = q
    ratio = used / expected
    s = quality if used <= expected else quality / ratio ** exponent  # efficiency(quality, used, expected, exponent)
    text = str(used) if type(used) is int and -1000000 < used < 1000000 else format(used, "g")  # _g(used)
    return ctx.result(s, _USAGE_REASON % (quality, source, what, text, ratio),
                      details={key: used, "quality_score": quality, "quality_source": source, "ratio": ratio})


@metric("token_efficiency", dimension="performance", requires=("usage",), after=QUALITY_METRICS,
        summary="quality if tokens <= expected_tokens else quality / (tokens / expected_tokens) ** p")
@dataclass(frozen=True, kw_only=True)
class TokenEfficiency:
    """Quality penalised by token overuse (UAEF); p = 0.5 (light) or 1.0 (heavy).

    Quality: ``metadata.quality_score`` or the mean of the response-quality metrics run on this
    trace (hallucination_score not inverted, unlike UAEF); neither gives null (missing_data).
    0 tokens are scored (quality, nothing over budget); UAEF gives null (missing_data) there, and
    so does assay.compat.uaef.
    """

    threshold: float = 0.7
    expected_tokens: float = 1000.0
    penalty: str = "light"
    """'light' (exponent 0.5) or 'heavy' (exponent 1.0)."""
    aliases: ClassVar[dict[str, str]] = {"penalty_mode": "penalty"}
    """UAEF calls the parameter penalty_mode."""

    def __post_init__(self) -> None:
        _positive("token_efficiency", "expected_tokens", self.expected_tokens)
        _exponent("token_efficiency", self.penalty)

    def score(self, ctx: MetricContext) -> MetricResult:
        usage = _memo.view(ctx).usage()
        return _usage_efficiency(ctx, "tokens", usage.tokens if usage else None, "tokens",
                                 self.expected_tokens, PENALTY_EXPONENTS[self.penalty])


@metric("cost_efficiency", dimension="performance", requires=("usage",), after=QUALITY_METRICS,
        summary="quality if cost <= expected_cost_usd else quality / (cost / expected_cost_usd) ** p")
@dataclass(frozen=True, kw_only=True)
class CostEfficiency:
    """Quality penalised by cost overrun (UAEF); same formula and quality as token_efficiency.

    A cost of 0 is scored (a free run is within budget) and a negative cost is invalid_data; UAEF
    gives null (missing_data) and 0.0 there, and so does assay.compat.uaef.
    """

    threshold: float = 0.7
    expected_cost_usd: float = 0.01
    penalty: str = "light"
    """'light' (exponent 0.5) or 'heavy' (exponent 1.0)."""
    aliases: ClassVar[dict[str, str]] = {"penalty_mode": "penalty"}
    """UAEF calls the parameter penalty_mode."""

    def __post_init__(self) -> None:
        _positive("cost_efficiency", "expected_cost_usd", self.expected_cost_usd)
        _exponent("cost_efficiency", self.penalty)

    def score(self, ctx: MetricContext) -> MetricResult:
        usage = _memo.view(ctx).usage()
        return _usage_efficiency(ctx, "cost_usd", usage.cost_usd if usage else None, "cost (USD)",
                                 self.expected_cost_usd, PENALTY_EXPONENTS[self.penalty])


@metric("throughput", dimension="performance", requires=("throughput",),
        summary="min(1, throughput_rps / target_rps)")
@dataclass(frozen=True, kw_only=True)
class Throughput:
    """Requests per second against a target (UAEF); reads ``trace.throughput_rps``.

    A negative throughput is invalid_data; UAEF gives 0.0 there, and so does assay.compat.uaef.
    """

    threshold: float = 0.7
    target_rps: float = 10.0

    def __post_init__(self) -> None:
        _positive("throughput", "target_rps", self.target_rps)

    def score(self, ctx: MetricContext) -> MetricResult:
        rps = ctx.trace.throughput_rps
        if rps is None:
            return ctx.null(Warning.MISSING_DATA, "no throughput_rps on the trace")
        if rps < 0 or not math.isfinite(rps):
            return ctx.null(Warning.INVALID_DATA, f"throughput_rps must be non-negative, got {rps!r}")
        return ctx.result(min(1.0, rps / self.target_rps), f"{rps:g} rps against a target of {self.target_rps:g}",
                            details={"throughput_rps": rps})


@metric("turn_efficiency", dimension="multi_turn", requires=("multi_turn",), after=("conversation_completeness",),
        summary="completeness x min(1, expected_turns / user turns)")
@dataclass(frozen=True, kw_only=True)
class TurnEfficiency:
    """Was the goal reached without needless back-and-forth? (UAEF).

    Counts user turns (turns with an input), not system or tool messages: UAEF counts every
    message, so one tool round trip used up a 'turn'. The expected count is the
    trace's ``expected.turns`` when given, else ``expected_turns``. Completeness is the
    ``conversation_completeness`` result on this trace when it has a score, else 1.0; details
    say which.
    """

    threshold: float = 0.7
    expected_turns: int = 5
    """Default when the trace has no expected.turns."""

    def __post_init__(self) -> None:
        _positive("turn_efficiency", "expected_turns", self.expected_turns)

    def score(self, ctx: MetricContext) -> MetricResult:
        trace = ctx.trace
        turns = sum(1 for t in trace.turns if t.input is not None)
        if turns == 0:
            return ctx.null(Warning.MISSING_DATA, "no user turns (turns with an input)")
        exp_turns = trace.expected.turns if trace.expected is not None and trace.expected.turns else None
        expected = exp_turns if exp_turns is not None else self.expected_turns
        r = ctx.results.get("conversation_completeness")
        if r is not None and r.score is not None:
            completeness, source = r.score, "conversation_completeness"
        else:
            completeness, source = 1.0, "assumed 1.0 (no conversation_completeness score)"
        eff = min(1.0, expected / turns)
        return ctx.result(completeness * eff, f"{turns} user turns, {expected} expected; completeness {source}",
                            details={"user_turns": turns, "expected_turns": expected, "turn_efficiency": eff,
                                   "completeness": completeness, "completeness_source": source})
