"""Reasoning judge metrics (UAEF): coherence, consistency, step correctness, fallacies.

Conversation-level: the judge sees each turn's user message and the agent's reasoning
(``turn.reasoning``) when the trace records it, else the agent's reply, on a 1-5 scale
normalised as (v - 1) / 4 (1.0 = sound reasoning / no fallacy). No reasoning and no reply
anywhere is missing_data; only empty ones is invalid_data.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import MetricResult, Warning
from ._base import MetricContext, metric
from ._judged import ScaleJudged, shows
from ._sections import Section


def reasoning_sections(ctx: MetricContext) -> list[Section] | MetricResult:
    out: list[Section] = []
    texts: list[str] = []
    for i, t in enumerate(ctx.trace.turns, 1):
        text, kind = (t.reasoning, "reasoning") if t.reasoning is not None else (t.output, "reply")
        if text is None:
            continue
        if t.input is not None:
            out.append(Section(f"TURN_{i}_USER", t.input, f"Turn {i}, user message:"))
        label = "REASONING" if kind == "reasoning" else "AGENT"
        out.append(Section(f"TURN_{i}_{label}", text, f"Turn {i}, agent's {kind}:"))
        texts.append(text)
    if not texts:
        return ctx.null(Warning.MISSING_DATA, "no reasoning and no agent response to judge")
    if not any(x.strip() for x in texts):
        return ctx.null(Warning.INVALID_DATA, "the agent's reasoning and responses are empty")
    return out


class _Reasoning(ScaleJudged):
    sections = shows(reasoning_sections)

    def adjust(self, ctx, score, session):  # type: ignore[no-untyped-def]
        session.details["judged_text"] = "reasoning" if any(t.reasoning for t in ctx.trace.turns) else "output"
        return score, ""


@metric("chain_of_thought_coherence", dimension="reasoning", requires=("judge",), judge_calls=1,
        summary="judge 1-5: do the reasoning steps follow from each other and build to the conclusion?")
@dataclass(frozen=True, kw_only=True)
class ChainOfThoughtCoherence(_Reasoning):
    """Do the reasoning steps flow logically and build on each other?"""


@metric("logical_consistency", dimension="reasoning", requires=("judge",), judge_calls=1,
        summary="judge 1-5: contradictions and inconsistencies within the reasoning; 1.0 = none")
@dataclass(frozen=True, kw_only=True)
class LogicalConsistency(_Reasoning):
    """Contradictions or inconsistencies within the agent's reasoning; 1.0 = consistent."""


@metric("reasoning_step_correctness", dimension="reasoning", requires=("judge",), judge_calls=1,
        summary="judge 1-5: is each individual reasoning step valid (calculations, inferences)?")
@dataclass(frozen=True, kw_only=True)
class ReasoningStepCorrectness(_Reasoning):
    """Is each individual reasoning step sound (inferences, calculations, facts used)?"""


@metric("fallacy_detection", dimension="reasoning", requires=("judge",), judge_calls=1,
        summary="judge 1-5: logical fallacies in the reasoning; 1.0 = no fallacy")
@dataclass(frozen=True, kw_only=True)
class FallacyDetection(_Reasoning):
    """Logical fallacies in the agent's reasoning; 1.0 = none."""

