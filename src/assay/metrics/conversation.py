"""Multi-turn judge metrics (UAEF and its AMACE additions): the whole conversation.

Conversation-level metrics judge every message at once (each fenced on its own, so no message can
forge another) on a 1-5 scale normalised as (v - 1) / 4. The ``per_turn_*`` variants judge each
exchange on its own and the engine averages them. No reply anywhere is missing_data, only empty
replies invalid_data; context_retention and coherence need at least two exchanges (a user message
and a reply, system and tool messages never count) and are not_applicable below that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model import MetricResult, Trace, Warning
from ._base import MetricContext, metric
from ._judged import ScaleJudged, shows
from ._sections import Section, check_conversation, dialogue, exchanges, turn_sections


def conversation(ctx: MetricContext, *, min_exchanges: int = 0, tools: bool = True) -> list[Section] | MetricResult:
    """The whole dialogue as sections, or the null result (no reply, fewer than *min_exchanges*)."""
    bad = check_conversation(ctx.trace)
    if bad is not None:
        return bad
    if min_exchanges > 0 and (n := exchanges(ctx.trace)) < min_exchanges:  # counted only when a minimum is set
        return ctx.null(Warning.NOT_APPLICABLE, f"needs at least {min_exchanges} exchanges, the conversation has {n}")
    return dialogue(ctx.trace, tools=tools)


conversation_sections = conversation
"""The public name of :func:`conversation` (``assay.metrics.conversation`` is this module)."""


def expected_outcome(trace: Trace) -> list[Section]:
    """Whatever the trace says success looks like: goal, success criteria, expected output."""
    e = trace.expected
    if e is None:
        return []
    out = []
    if e.goal:
        out.append(Section("USER_GOAL", e.goal, "The user's goal:"))
    for i, c in enumerate(e.success_criteria, 1):
        out.append(Section(f"SUCCESS_CRITERION_{i}", c, f"Success criterion {i}:"))
    if e.output:
        out.append(Section("EXPECTED_OUTCOME", e.output, "The expected outcome:"))
    return out


@metric("context_retention", dimension="multi_turn", requires=("multi_turn", "judge"), judge_calls=1,
        summary="judge 1-5: does the agent remember and use earlier information? null when turns are independent")
@dataclass(frozen=True, kw_only=True)
class ContextRetention(ScaleJudged):
    """Does the agent remember and use what was said in earlier turns?

    not_applicable with fewer than 2 exchanges, or when the judge finds no later turn that depends
    on earlier information (independent questions).
    """

    applicable = True

    sections = shows(conversation, min_exchanges=2)


@metric("coherence", dimension="multi_turn", requires=("multi_turn", "judge"), judge_calls=1,
        summary="judge 1-5: logical flow and consistency across the conversation's turns")
@dataclass(frozen=True, kw_only=True)
class Coherence(ScaleJudged):
    """Logical flow and consistency of the agent across turns."""

    sections = shows(conversation, min_exchanges=2)


@metric("conversation_completeness", dimension="multi_turn", requires=("judge",), judge_calls=1,
        summary="judge 1-5: were the user's goals met? against the expected outcome, else inferred intentions")
@dataclass(frozen=True, kw_only=True)
class ConversationCompleteness(ScaleJudged):
    """Were the user's goals achieved? Uses the trace's goal / criteria / expected output when given;
    otherwise the judge infers the user's intentions (listed in details) and grades against them."""

    lists = ("intentions",)

    def sections(self, ctx: MetricContext) -> Sequence[Section] | MetricResult:
        conv = conversation(ctx)
        if isinstance(conv, MetricResult):
            return conv
        return expected_outcome(ctx.trace) + conv

    def adjust(self, ctx, score, session):  # type: ignore[no-untyped-def]
        session.details["criteria_source"] = "expected" if expected_outcome(ctx.trace) else "inferred"
        return score, ""


def _role(trace: Trace) -> Section | None:
    if trace.expected is not None and trace.expected.role:
        return Section("EXPECTED_ROLE", trace.expected.role, "The role the agent must play:")
    if trace.system:
        return Section("SYSTEM_PROMPT", trace.system, "The agent's system prompt (defines its role):")
    return None


@metric("role_adherence", dimension="multi_turn", requires=("role", "judge"), judge_calls=1,
        summary="judge 1-5: does the agent stay in its assigned role (expected.role, else the system prompt)?")
@dataclass(frozen=True, kw_only=True)
class RoleAdherence(ScaleJudged):
    """Does the agent stay in its assigned role throughout? Role from expected.role, else the system prompt."""

    def sections(self, ctx: MetricContext) -> Sequence[Section] | MetricResult:
        role = _role(ctx.trace)
        if role is None:
            return ctx.null(Warning.MISSING_DATA, "no role given: set expected.role (or a system prompt)")
        conv = conversation(ctx)
        return conv if isinstance(conv, MetricResult) else [role, *conv]


@metric("holistic_llm_judge", dimension="multi_turn", requires=("judge",), judge_calls=1,
        summary="judge 1-5: overall quality of the agent across the whole conversation")
@dataclass(frozen=True, kw_only=True)
class HolisticJudge(ScaleJudged):
    """Overall quality of the agent's conduct in the conversation (helpfulness, correctness, clarity)."""

    def sections(self, ctx: MetricContext) -> Sequence[Section] | MetricResult:
        conv = conversation(ctx)
        return conv if isinstance(conv, MetricResult) else expected_outcome(ctx.trace) + conv


@metric("user_satisfaction", dimension="multi_turn", requires=("judge",), judge_calls=1,
        summary="judge 1-5: how satisfied the user is likely to be, from the user's own messages")
@dataclass(frozen=True, kw_only=True)
class UserSatisfaction(ScaleJudged):
    """How satisfied the user is likely to be at the end of the conversation."""

    sections = shows(conversation)


@metric("sentiment", dimension="multi_turn", requires=("judge",), judge_calls=1,
        summary="judge 1-5: the user's sentiment over the conversation, weighted to its end")
@dataclass(frozen=True, kw_only=True)
class Sentiment(ScaleJudged):
    """The user's sentiment over the conversation (1 very negative ... 5 very positive), weighted to its end."""

    sections = shows(conversation, tools=False)


@metric("agent_tone", dimension="multi_turn", requires=("judge",), judge_calls=1,
        summary="judge 1-5: is the agent's tone professional, warm and suited to the user?")
@dataclass(frozen=True, kw_only=True)
class AgentTone(ScaleJudged):
    """Whether the agent's tone is professional, warm and suited to the user and situation."""

    sections = shows(conversation, tools=False)


@metric("naturalness", dimension="multi_turn", requires=("judge",), judge_calls=1,
        summary="judge 1-5: does the agent sound natural and fluent, not robotic or repetitive?")
@dataclass(frozen=True, kw_only=True)
class Naturalness(ScaleJudged):
    """Whether the agent's replies read as natural, fluent conversation (not robotic or repetitive)."""

    sections = shows(conversation, tools=False)


def _instructions(trace: Trace) -> list[Section]:
    e = trace.expected
    if e is not None and e.instructions:
        return [Section("INSTRUCTIONS", e.instructions, "The instructions the agent must follow:")]
    if trace.system:
        return [Section("SYSTEM_PROMPT", trace.system, "The agent's system prompt (its instructions):")]
    return []


@metric("instruction_compliance", dimension="multi_turn", requires=("instructions", "judge"), judge_calls=1,
        summary="judge 1-5: does the agent follow its instructions (expected.instructions, else the system prompt)?")
@dataclass(frozen=True, kw_only=True)
class InstructionCompliance(ScaleJudged):
    """Does the agent follow its instructions? From expected.instructions, else the system prompt."""

    def sections(self, ctx: MetricContext) -> Sequence[Section] | MetricResult:
        rules = _instructions(ctx.trace)
        if not rules:
            return ctx.null(Warning.MISSING_DATA, "no instructions given: set expected.instructions (or a system prompt)")
        conv = conversation(ctx)
        return conv if isinstance(conv, MetricResult) else [*rules, *conv]


@metric("optimum_turns", dimension="multi_turn", requires=("judge",), judge_calls=1,
        summary="judge 1-5: did the conversation reach its outcome in close to the fewest turns possible?")
@dataclass(frozen=True, kw_only=True)
class OptimumTurns(ScaleJudged):
    """Did the conversation reach its outcome in close to the fewest turns possible?"""

    sections = shows(conversation)


# -- per-turn variants: each exchange judged on its own, averaged by the engine ------------------------

@metric("per_turn_sentiment", dimension="multi_turn", requires=("judge",), level="turn", judge_calls=1,
        summary="judge 1-5 per exchange: the user's sentiment in that message; averaged over turns")
@dataclass(frozen=True, kw_only=True)
class PerTurnSentiment(ScaleJudged):
    """The user's sentiment in each message, judged exchange by exchange."""

    def sections(self, ctx: MetricContext) -> Sequence[Section] | MetricResult:
        got = turn_sections(ctx)  # an exchange: the user's message and the agent's reply
        if isinstance(got, MetricResult):
            return got
        if not any(s.label == "USER_MESSAGE" and s.text.strip() for s in got):
            return ctx.null(Warning.INVALID_DATA, "the user message is empty")
        return got


@metric("per_turn_agent_tone", dimension="multi_turn", requires=("judge",), level="turn", judge_calls=1,
        summary="judge 1-5 per exchange: the agent's tone in that reply; averaged over turns")
@dataclass(frozen=True, kw_only=True)
class PerTurnAgentTone(ScaleJudged):
    """The agent's tone in each reply, judged exchange by exchange."""

    sections = shows(turn_sections, need_input=False)


@metric("per_turn_naturalness", dimension="multi_turn", requires=("judge",), level="turn", judge_calls=1,
        summary="judge 1-5 per exchange: how natural that reply sounds; averaged over turns")
@dataclass(frozen=True, kw_only=True)
class PerTurnNaturalness(ScaleJudged):
    """How natural each reply sounds, judged exchange by exchange."""

    sections = shows(turn_sections, need_input=False)
