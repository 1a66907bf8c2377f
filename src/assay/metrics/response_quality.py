"""Response-quality judge metrics (UAEF): scored per turn, averaged by the engine.

Each turn is judged with that turn's own ground truth (the trace's expected output stands for the
last turn's) on a 1-5 scale normalised as (v - 1) / 4. A turn without a reply is missing_data, an
empty reply invalid_data; metrics that need ground truth or context are missing_data without it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._base import metric
from ._judged import ScaleJudged, shows
from ._sections import turn_sections


@metric("answer_relevance", dimension="response_quality", requires=("judge",), level="turn", judge_calls=1,
        summary="judge 1-5 per turn: does the reply address the user's message? (v-1)/4, averaged over turns")
@dataclass(frozen=True, kw_only=True)
class AnswerRelevance(ScaleJudged):
    """Does the response address the user's question (not whether it is correct)?"""

    sections = shows(turn_sections)


@metric("completeness", dimension="response_quality", requires=("expected_output", "judge"), level="turn",
        judge_calls=1, summary="judge 1-5 per turn: does the reply cover everything in the expected output?")
@dataclass(frozen=True, kw_only=True)
class Completeness(ScaleJudged):
    """Does the response cover all the information of the reference answer?"""

    sections = shows(turn_sections, expected=True, need_input=False)


@metric("hallucination_score", dimension="response_quality", requires=("context", "judge"), level="turn",
        judge_calls=1, summary="judge 1-5 per turn: are the reply's claims supported by the context? 1.0 = none unsupported")
@dataclass(frozen=True, kw_only=True)
class HallucinationScore(ScaleJudged):
    """Claims checked against the turn's context passages; 1.0 means no hallucination."""

    sections = shows(turn_sections, context=True, need_input=False)


@metric("accuracy", dimension="response_quality", requires=("expected_output", "judge"), level="turn",
        judge_calls=1, summary="judge 1-5 per turn: is the reply factually consistent with the reference answer?")
@dataclass(frozen=True, kw_only=True)
class Accuracy(ScaleJudged):
    """Agreement of the response with the reference answer."""

    sections = shows(turn_sections, expected=True, need_input=False)
