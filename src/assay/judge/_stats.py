"""Running totals for one composed judge, so cost and behaviour are visible, never guessed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass(slots=True)
class JudgeStats:
    """Counters shared by every layer of one composed judge (one event loop, so no locks).

    ``calls`` counts requests actually sent to the backend (retries and re-asks included);
    tokens and cost count only those, so cache hits are free and dry runs spend nothing.
    """

    requests: int = 0          # judge() calls answered, whatever the outcome
    calls: int = 0             # backend calls made (each retry and re-ask is one)
    cached: int = 0            # requests answered from the cache
    retries: int = 0           # calls repeated after a transient failure
    reasks: int = 0            # calls repeated because the reply did not fit the schema
    errors: int = 0            # requests that ended with an errored verdict
    skipped: int = 0           # requests not attempted (budget reached, dry run)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0      # sum over calls with a known price
    unpriced_calls: int = 0    # calls whose cost is unknown (not counted in cost_usd)
    peak_concurrency: int = 0  # most backend calls in flight at once
    queued_s: float = 0.0      # seconds requests waited for a one-slot backend's slot, summed
    concurrency_limit: int = 0  # the adaptive limit now (lowered after HTTP 429)
    estimated_calls: int = 0   # dry run: calls that would be made
    estimated_input_tokens: int = 0
    estimated_output_tokens: int = 0
    estimated_cost_usd: float | None = 0.0  # None once any estimated call has no known price
    error_reasons: dict[str, int] = field(default_factory=dict)    # why requests errored, with counts
    skipped_reasons: dict[str, int] = field(default_factory=dict)  # why requests were not attempted

    def count_reason(self, error: str, *, skipped: bool = False) -> None:
        """Tally one errored (or skipped) request under its reason, without the per-call details."""
        reasons = self.skipped_reasons if skipped else self.error_reasons
        key = _reason(error)
        if key in reasons or len(reasons) < _MAX_REASONS:
            reasons[key] = reasons.get(key, 0) + 1
        else:
            reasons["other"] = reasons.get("other", 0) + 1

    def record_call(self, input_tokens: int, output_tokens: int, cost_usd: float | None) -> None:
        """Count one backend call and what it consumed."""
        self.calls += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        if cost_usd is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += cost_usd

    def as_dict(self) -> dict[str, int | float | None]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JudgeStats:
        """Counters from their ``as_dict`` form (keys this version does not count are left out)."""
        return cls(**{k: (dict(v) if isinstance(v, dict) else v) for k, v in d.items() if k in _NAMES})

    def merge(self, other: JudgeStats) -> JudgeStats:
        """Two judges' counters together (jurors, Dask workers, consecutive parts of a run): counts,
        tokens, cost and reasons add; ``peak_concurrency`` and ``concurrency_limit`` are per process,
        so the larger is kept; an unknown estimated cost stays unknown."""
        out = JudgeStats()
        for name in _NAMES:
            a, b = getattr(self, name), getattr(other, name)
            if name in _PER_PROCESS:
                value: Any = max(a, b)
            elif isinstance(a, dict):
                value = {k: a.get(k, 0) + b.get(k, 0) for k in {**a, **b}}
            elif a is None or b is None:
                value = None
            else:
                value = a + b
            setattr(out, name, value)
        return out

    def since(self, before: JudgeStats) -> JudgeStats:
        """What was counted after ``before`` (a copy taken earlier) - e.g. one Dask shard's share of a
        worker's judge; ``peak_concurrency`` and ``concurrency_limit`` as they are now."""
        out = JudgeStats()
        for name in _NAMES:
            now, then = getattr(self, name), getattr(before, name)
            if name in _PER_PROCESS or now is None or then is None:
                value: Any = now
            elif isinstance(now, dict):
                value = {k: v - then.get(k, 0) for k, v in now.items() if v != then.get(k, 0)}
            else:
                value = now - then
            setattr(out, name, value)
        return out

    def copy(self) -> JudgeStats:
        return JudgeStats.from_dict(self.as_dict())

    def summary(self) -> str:
        """One line for logs and the CLI."""
        cost = f"${self.cost_usd:.4f}" + (f" (+{self.unpriced_calls} unpriced)" if self.unpriced_calls else "")
        return (f"{self.requests} requests, {self.calls} calls, {self.cached} cached, {self.retries} retries, "
                f"{self.reasks} re-asks, {self.errors} errors, {self.skipped} skipped, "
                f"{self.input_tokens}+{self.output_tokens} tokens, {cost}, peak concurrency {self.peak_concurrency}")


_NAMES = tuple(f.name for f in fields(JudgeStats))
_PER_PROCESS = frozenset({"peak_concurrency", "concurrency_limit"})
_MAX_REASONS = 20
NOT_ANSWERING = "judge not answering"
"""The reason under which calls skipped by an open breaker (``_breaker.Tripping``) are counted."""


def _reason(error: str) -> str:
    """An error message as a reason to count: attempt counts, numbers and long tails dropped."""
    text = re.sub(r" \(after \d+ attempts\)", "", error.strip().splitlines()[0] if error.strip() else "error")
    text = re.sub(r"budget exhausted: .*", "budget reached", text)
    text = re.sub(r"dry run: not sent.*", "dry run", text)
    text = re.sub(r"not called: the judge gave no answer for .*", NOT_ANSWERING, text)
    return text[:120]
