"""Running totals for one composed judge, so cost and behaviour are visible, never guessed."""

from __future__ import annotations

from dataclasses import asdict, dataclass


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
    concurrency_limit: int = 0  # the adaptive limit now (lowered after HTTP 429)
    estimated_calls: int = 0   # dry run: calls that would be made
    estimated_input_tokens: int = 0
    estimated_output_tokens: int = 0
    estimated_cost_usd: float | None = 0.0  # None once any estimated call has no known price

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

    def summary(self) -> str:
        """One line for logs and the CLI."""
        cost = f"${self.cost_usd:.4f}" + (f" (+{self.unpriced_calls} unpriced)" if self.unpriced_calls else "")
        return (f"{self.requests} requests, {self.calls} calls, {self.cached} cached, {self.retries} retries, "
                f"{self.reasks} re-asks, {self.errors} errors, {self.skipped} skipped, "
                f"{self.input_tokens}+{self.output_tokens} tokens, {cost}, peak concurrency {self.peak_concurrency}")
