"""What a run has accumulated before its summaries are computed: a part that merges with others.

``Evaluation.run`` is ``finish(accumulate(source))``; a distributed run accumulates one part per
shard on the workers and merges them, in input order, on the driver before the same ``finish``.
Every field merges associatively (counts add, exact sums add, columns and lists concatenate), so
the result does not depend on how the input was split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model import InputIssue, TraceResult
from ._aggregate import RunTotals

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
    interrupted: bool = False
    judge: dict[str, Any] | None = None
    """Counters of the judge that scored this part (JudgeStats.as_dict), for parts scored elsewhere."""
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
        self.interrupted |= other.interrupted
        self.judge = merge_judge_stats(self.judge, other.judge)
        return self


_PER_WORKER = frozenset({"peak_concurrency", "concurrency_limit"})


def merge_judge_stats(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """Sum two JudgeStats dicts (counts, tokens, cost, reasons); None when neither has one.

    ``peak_concurrency`` and ``concurrency_limit`` are per worker: the merge keeps the largest
    (the run's global peak is what the provider, or the tests' scripted server, sees).
    """
    if a is None or b is None:
        return dict(a or b) if (a or b) is not None else None
    out = dict(a)
    for key, value in b.items():
        mine = out.get(key)
        if key in _PER_WORKER:
            out[key] = max(mine or 0, value or 0)
        elif isinstance(value, dict):
            merged = dict(mine or {})
            for k, v in value.items():
                merged[k] = merged.get(k, 0) + v
            out[key] = merged
        elif value is None or mine is None:
            out[key] = None if key == "estimated_cost_usd" else (mine if value is None else value)
        else:
            out[key] = mine + value
    return out
