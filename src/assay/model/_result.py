"""Result types. Plain slotted dataclasses: a run can produce millions of them.

A score is in [0, 1] or None. None never counts as 0: it is excluded from averages and
counted, and ``warning`` says why it is missing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Warning(StrEnum):  # noqa: A001 - the seed's name for the field
    """Why a metric produced no score (or a score to read with care)."""

    MISSING_DATA = "missing_data"
    INVALID_DATA = "invalid_data"
    NOT_APPLICABLE = "not_applicable"
    JUDGE_ERROR = "judge_error"
    """The judge failed or its verdict did not validate: an error, counted in n_errored."""
    METRIC_ERROR = "metric_error"
    """The metric raised: an error, counted in n_errored."""
    NOT_EVALUATED = "not_evaluated"
    """Not attempted: budget reached, dry run, or no judge configured."""


ERROR_WARNINGS = frozenset({Warning.JUDGE_ERROR, Warning.METRIC_ERROR})


@dataclass(slots=True)
class MetricResult:
    """One metric on one trace."""

    name: str = ""
    score: float | None = None
    passed: bool | None = None
    threshold: float | None = None
    reason: str = ""
    evidence: list[str] = field(default_factory=list)
    warning: Warning | None = None
    details: dict[str, Any] = field(default_factory=dict)
    judge_calls: int = 0
    tokens: int = 0
    cost_usd: float | None = None

    @property
    def errored(self) -> bool:
        return self.warning in ERROR_WARNINGS

    def to_dict(self) -> dict[str, Any]:
        d = {"score": self.score, "passed": self.passed, "threshold": self.threshold,
             "warning": None if self.warning is None else str(self.warning), "reason": self.reason}
        if self.evidence:
            d["evidence"] = self.evidence
        if self.details:
            d["details"] = self.details
        if self.judge_calls:
            d.update(judge_calls=self.judge_calls, tokens=self.tokens, cost_usd=self.cost_usd)
        return d

    @classmethod
    def from_dict(cls, name: str, d: dict[str, Any]) -> "MetricResult":
        w = d.get("warning")
        return cls(name=name, score=d.get("score"), passed=d.get("passed"), threshold=d.get("threshold"),
                   reason=d.get("reason") or "", evidence=list(d.get("evidence") or []),
                   warning=None if w is None else Warning(w), details=dict(d.get("details") or {}),
                   judge_calls=d.get("judge_calls", 0), tokens=d.get("tokens", 0), cost_usd=d.get("cost_usd"))


@dataclass(slots=True)
class DimensionScore:
    """Mean of the non-null metric scores of one dimension."""

    score: float | None
    passed: bool | None
    threshold: float
    weight: float
    n: int
    """Metrics that contributed a score."""


@dataclass(slots=True)
class TraceResult:
    """Every metric on one trace, grouped by dimension, with an overall verdict."""

    id: str
    task_id: str
    trial: int | None
    metrics: dict[str, MetricResult]
    dimensions: dict[str, DimensionScore] = field(default_factory=dict)
    overall: float | None = None
    passed: bool | None = None
    source: str | None = None
    """Where the trace came from: ``file:line``."""
    trace: Any = field(default=None, repr=False, compare=False)
    """The input Trace, when the engine was asked to attach it (``attach_traces``); never serialised."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "task_id": self.task_id, "trial": self.trial, "source": self.source,
            "overall": self.overall, "passed": self.passed,
            "dimensions": {k: asdict(v) for k, v in self.dimensions.items()},
            "metrics": {k: v.to_dict() for k, v in self.metrics.items()},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TraceResult":
        return cls(id=d["id"], task_id=d.get("task_id") or d["id"], trial=d.get("trial"),
                   metrics={k: MetricResult.from_dict(k, v) for k, v in d.get("metrics", {}).items()},
                   dimensions={k: DimensionScore(**v) for k, v in (d.get("dimensions") or {}).items()},
                   overall=d.get("overall"), passed=d.get("passed"), source=d.get("source"))


@dataclass(slots=True)
class MetricSummary:
    """Run-level aggregate of one metric."""

    name: str
    dimension: str
    threshold: float | None
    n: int = 0
    """Traces with a score."""
    n_null: int = 0
    """Traces without a score (any warning), errors included."""
    n_errored: int = 0
    """Of n_null, those that errored (judge or metric error)."""
    n_passed: int = 0
    mean: float | None = None
    pass_rate: float | None = None
    mean_ci: tuple[float, float] | None = None
    pass_rate_ci: tuple[float, float] | None = None
    warnings: dict[str, int] = field(default_factory=dict)
    judge_calls: int = 0
    tokens: int = 0
    cost_usd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("mean_ci", "pass_rate_ci"):
            if d[k] is not None:
                d[k] = list(d[k])
        return d


@dataclass(slots=True)
class InputIssue:
    """A line of input that could not be used, and why."""

    source: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = ":".join(str(p) for p in (self.source, self.line) if p is not None)
        return ": ".join(p for p in (where, self.field, self.message) if p)


@dataclass(slots=True)
class RunResult:
    """A whole evaluation: per-trace results, per-metric summaries, run information."""

    traces: list[TraceResult]
    summary: dict[str, MetricSummary]
    run: dict[str, Any] = field(default_factory=dict)
    input_issues: list[InputIssue] = field(default_factory=list)
    statistics: dict[str, Any] = field(default_factory=dict)
    """pass@k families and other run-level statistics, when computed."""

    @property
    def passed(self) -> bool:
        """True when no trace failed a threshold."""
        return all(t.passed is not False for t in self.traces) and all(
            s.n_passed == s.n for s in self.summary.values())

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunResult":
        """Inverse of ``to_dict`` (results files written by ``assay run --output``)."""
        summary = {}
        for name, s in (d.get("summary") or {}).items():
            s = dict(s)
            for key in ("mean_ci", "pass_rate_ci"):
                if s.get(key) is not None:
                    s[key] = tuple(s[key])
            summary[name] = MetricSummary(**s)
        return cls(traces=[TraceResult.from_dict(t) for t in d.get("traces") or []], summary=summary,
                   run=dict(d.get("run") or {}), input_issues=[InputIssue(**i) for i in d.get("input_issues") or []],
                   statistics=dict(d.get("statistics") or {}))

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "summary": {k: v.to_dict() for k, v in self.summary.items()},
            "statistics": self.statistics,
            "input_issues": [asdict(i) for i in self.input_issues],
            "traces": [t.to_dict() for t in self.traces],
        }
