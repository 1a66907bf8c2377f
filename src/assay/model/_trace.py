"""The input contract: one agent run (a trace) and its parts.

Only ``id`` plus ``turns`` (or OpenAI-style ``messages``) are required. Unknown fields are
rejected so that a typo (``tool_call`` for ``tool_calls``) is reported instead of silently
scoring nothing; free-form data belongs in ``metadata``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ._messages import messages_to_turns


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=False)


class Usage(_Strict):
    """Token and cost accounting of one turn, one agent or the whole trace."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    """When absent, input + output."""
    cost_usd: float | None = None

    @property
    def tokens(self) -> int | None:
        if self.total_tokens is not None:
            return self.total_tokens
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


class ExpectedToolCall(_Strict):
    """A tool call the agent should make; ``arguments`` None means 'any arguments'."""

    name: str
    arguments: dict[str, Any] | None = None
    step: int | None = None
    """Position in the expected sequence (Fair Forge's ``step``)."""


class ToolCall(_Strict):
    """A tool call the agent made, with its result or error."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: str | None = None
    timestamp: str | None = None
    duration_ms: float | None = None
    agent: str | None = None
    id: str | None = None
    step: int | None = None


class TurnExpected(_Strict):
    """Ground truth for one turn."""

    output: str | None = None
    tool_calls: list[ExpectedToolCall] | None = None
    tool_order: Literal["strict", "any"] | None = None


class Turn(_Strict):
    """One user input and the agent's response to it, with what happened in between."""

    input: str | None = None
    output: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    context: list[str] = Field(default_factory=list)
    """Retrieved passages the agent was given for this turn."""
    reasoning: str | None = None
    latency_ms: float | None = None
    usage: Usage | None = None
    expected: TurnExpected | None = None
    uses_tool_results: bool | None = None
    """Whether the answer uses the tool results (Fair Forge's ``final_answer_uses_tools``)."""
    agent: str | None = None


class Expected(_Strict):
    """Ground truth and instructions for the whole trace."""

    output: str | None = None
    goal: str | None = None
    success_criteria: list[str] = Field(default_factory=list)
    role: str | None = None
    instructions: str | None = None
    tool_calls: list[ExpectedToolCall] | None = None
    tool_order: Literal["strict", "any"] = "strict"
    turns: int | None = None
    """Expected number of user turns (turn_efficiency)."""


class AgentRun(_Strict):
    """What one agent of a multi-agent system did."""

    turns: list[Turn] = Field(default_factory=list)
    usage: Usage | None = None
    role: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _messages(cls, data: Any) -> Any:
        return _normalise_messages(data)


class Handoff(_Strict):
    """A coordination event between agents: delegation, handoff, message, result."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_agent: str = Field(alias="from")
    to_agent: str = Field(alias="to")
    kind: str = "delegate"
    message: str | None = None
    timestamp: str | None = None


class Trace(_Strict):
    """One run of an agent on one task: the unit that metrics score."""

    id: str
    task_id: str | None = None
    """Groups repeated trials of one task; without it the trace is its own task."""
    trial: int | None = None
    system: str | None = None
    """System prompt, when the trace came as chat messages."""
    turns: list[Turn]
    expected: Expected | None = None
    agents: dict[str, AgentRun] = Field(default_factory=dict)
    handoffs: list[Handoff] = Field(default_factory=list)
    status: Literal["completed", "failed", "partial"] | None = None
    usage: Usage | None = None
    latency_ms: float | None = None
    throughput_rps: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id", "task_id", mode="before")
    @classmethod
    def _id_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @model_validator(mode="before")
    @classmethod
    def _messages(cls, data: Any) -> Any:
        return _normalise_messages(data)

    @property
    def task(self) -> str:
        """The task this trace is a trial of (its own id when no task_id)."""
        return self.task_id if self.task_id is not None else self.id

    def all_tool_calls(self) -> list[ToolCall]:
        """Tool calls of every turn, in order (main agent only)."""
        return [c for t in self.turns for c in t.tool_calls]

    def expected_tool_calls(self) -> list[ExpectedToolCall] | None:
        """Trace-level expected calls, else the concatenation of per-turn ones; None if none given."""
        if self.expected is not None and self.expected.tool_calls is not None:
            return self.expected.tool_calls
        per_turn = [t.expected.tool_calls for t in self.turns
                    if t.expected is not None and t.expected.tool_calls is not None]
        return [c for calls in per_turn for c in calls] if per_turn else None

    def total_usage(self) -> Usage | None:
        """Trace usage if given, else the sum over turns and agents; None if nothing recorded."""
        if self.usage is not None:
            return self.usage
        parts = [t.usage for t in self.turns if t.usage is not None]
        parts += [a.usage for a in self.agents.values() if a.usage is not None]
        if not parts:
            return None

        def add(attr: str) -> Any:
            vals = [getattr(u, attr) for u in parts if getattr(u, attr) is not None]
            return sum(vals) if vals else None

        return Usage(input_tokens=add("input_tokens"), output_tokens=add("output_tokens"),
                     total_tokens=add("total_tokens"), cost_usd=add("cost_usd"))

    def total_latency_ms(self) -> float | None:
        """Trace latency if given, else the sum of turn latencies."""
        if self.latency_ms is not None:
            return self.latency_ms
        vals = [t.latency_ms for t in self.turns if t.latency_ms is not None]
        return sum(vals) if vals else None


def _normalise_messages(data: Any) -> Any:
    if isinstance(data, dict) and "messages" in data:
        if "turns" in data:
            raise ValueError("give either 'turns' or 'messages', not both")
        data = dict(data)
        system, turns = messages_to_turns(data.pop("messages"))
        data["turns"] = turns
        if system is not None and "system" not in data and "role" not in data:
            data["system"] = system
    return data
