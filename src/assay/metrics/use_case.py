"""Contact-centre judge metrics (UAEF's opt-in use-case metrics): containment, resolution.

Opt-in (``default=False``): meaningful only for customer-service agents, so never part of the
default set; select them by name. UAEF's versions always crash; these are one judge call each,
classifying the conversation into labels with fixed weights.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._base import metric
from ._judged import LabelJudged, shows
from .conversation import conversation


@metric("containment", dimension="use_case", requires=("judge",), default=False, judge_calls=1,
        summary="judge label: contained 1.0 (agent handled it without a human) / escalated 0.0")
@dataclass(frozen=True, kw_only=True)
class Containment(LabelJudged):
    """Did the agent handle the conversation without escalating to (or handing off to) a human?"""

    weights = {"contained": 1.0, "escalated": 0.0}

    sections = shows(conversation)


@metric("resolution", dimension="use_case", requires=("judge",), default=False, judge_calls=1,
        summary="judge label: resolved 1.0 / partially_resolved 0.5 / unresolved 0.0")
@dataclass(frozen=True, kw_only=True)
class Resolution(LabelJudged):
    """Was the customer's issue resolved by the end of the conversation?"""

    weights = {"resolved": 1.0, "partially_resolved": 0.5, "unresolved": 0.0}

    sections = shows(conversation)
