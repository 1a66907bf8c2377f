"""What a run has accumulated before its summaries are computed: a part that merges with others.

``Evaluation.run`` is ``finish(accumulate(source))``; a distributed run accumulates one part per
shard on the workers and merges them, in input order, on the driver before the same ``finish``.
Every field merges associatively (counts add, exact sums add, columns and lists concatenate), so
the result does not depend on how the input was split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..model import InputIssue, TraceResult
from ._aggregate import RunTotals

if TYPE_CHECKING:  # a run without a judge does not load the judge package
    from ..judge._stats import JudgeStats

FAILED_KEPT = 10
"""Failed traces a run keeps when it keeps no per-trace results (what the terminal table lists)."""


@dataclass(slots=True)
class RunPartial:
    """The accumulated state of a run over a consecutive part of its input."""

    totals: RunTotals
    traces: list[TraceResult] = field(default_factory=list)
    """Per-trace results (only when the run keeps them)."""
    failed: list[TraceResult] = field(default_factory=list)
    """The first FAILED_KEPT failed traces (when per-trace results are not kept)."""
    issues: list[InputIssue] = field(default_factory=list)
    n: int = 0
    n_passed: int = 0
    n_failed: int = 0
    n_failed_runs: int = 0
    """Traces whose run failed (``status: "failed"``), counted in n_failed too."""
    excluded: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Harness faults by kind: ``{"n": count, "reason": the first one's}`` (excluded from every statistic)."""
    interrupted: bool = False
    judge: JudgeStats | None = None
    """Counters of the judge that scored this part, for parts scored elsewhere (``JudgeStats.merge`` adds them)."""
    retest: Any = None
    """Test-retest totals (``--repeats`` with judge metrics); they do not merge yet."""
    jury: Any = None
    """Jury agreement totals; they do not merge yet."""

    def merge(self, other: "RunPartial") -> "RunPartial":
        """Add *other*, the part right after this one; returns self."""
        if self.retest is not None or other.retest is not None or self.jury is not None or other.jury is not None:
            raise ValueError("test-retest and jury figures cannot be merged from parts of a run")
        self.totals.merge(other.totals)
        self.traces.extend(other.traces)
        if len(self.failed) < FAILED_KEPT:
            self.failed.extend(other.failed[:FAILED_KEPT - len(self.failed)])
        self.issues.extend(other.issues)
        self.n += other.n
        self.n_passed += other.n_passed
        self.n_failed += other.n_failed
        self.n_failed_runs += other.n_failed_runs
        for kind, e in other.excluded.items():
            mine = self.excluded.get(kind)
            if mine is None:
                self.excluded[kind] = dict(e)
            else:
                mine["n"] += e["n"]
        self.interrupted |= other.interrupted
        if other.judge is not None:
            self.judge = other.judge if self.judge is None else self.judge.merge(other.judge)
        return self
