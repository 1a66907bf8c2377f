"""eval_lib's conversation metrics, with the documented semantics.

``failure_rate``: one call classifies how the agent handles not knowing, into six labels with
eval_lib's weights; a verified fabrication in the judge's per-turn findings forces
``hallucination`` whatever label the judge chose (eval_lib's documented priority rule, enforced
here). An unknown label is an errored result (eval_lib scores it 1.0).

``goal_achievement_rate``: goal (skipped when given), signals, verdict, summary: 3 calls with a
goal, 4 without. score = max(0, weight - 0.1 x negative signals), counting only negative signals
whose quote is found in the dialogue.

With the compact prompt form (small judges), findings and signals are turn numbers instead of
quotes: a small model paraphrases when asked to quote, and the quote check then rightly drops
what it found. A turn number is verified instead: it must exist and hold a message of the right
speaker (the agent's reply for a finding, the user's message for a negative signal or an unmet
request), and that message stands as the evidence.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Literal

import pydantic

from ..model import MetricResult
from ._base import MetricContext, metric
from ._judged import COMPACT_REASON_CHARS, JudgeFailed, Session
from ._sections import Section
from .conversation import conversation

FAILURE_WEIGHTS: dict[str, float] = {
    "hallucination": 0.0, "stall": 0.4, "mixed": 0.6,
    "honest_fallback": 1.0, "alternative_proposed": 1.0, "not_applicable": 1.0,
}
FABRICATED = "fabricated"
BEHAVIOURS = (FABRICATED, "stalled", "admitted_uncertainty", "proposed_alternative", "answered")
OUTCOME_WEIGHTS: dict[str, float] = {"fully": 1.0, "mostly": 0.9, "partial": 0.7, "minor": 0.3, "none": 0.0}


@functools.lru_cache(maxsize=4096)
def failure_schema(behaviours: tuple[str, ...], labels: tuple[str, ...]) -> type[pydantic.BaseModel]:
    """Per-turn findings (quote + behaviour) first, then the reason, then the label: checkable."""
    finding = pydantic.create_model(
        "TurnFinding",
        turn=(int, pydantic.Field(description="The turn number the quote comes from.")),
        quote=(str, pydantic.Field(description="A short verbatim quote from the agent's reply in that turn.")),
        behaviour=(Literal[behaviours], pydantic.Field(description="What the agent did there.")))  # type: ignore[valid-type]
    return pydantic.create_model(
        "FailureRateVerdict",
        findings=(list[finding], pydantic.Field(description="One entry per relevant agent reply.")),  # type: ignore[valid-type]
        reason=(str, ...),
        verdict=(Literal[labels], pydantic.Field(description="Exactly one of the listed labels.")))  # type: ignore[valid-type]


@functools.lru_cache(maxsize=4096)
def failure_schema_compact(behaviours: tuple[str, ...], labels: tuple[str, ...]) -> type[pydantic.BaseModel]:
    """The compact form: findings by turn number (checked against the dialogue), a one-line reason."""
    finding = pydantic.create_model(
        "TurnFinding",
        turn=(int, pydantic.Field(description="The turn number of an agent reply that decides the label.")),
        behaviour=(Literal[behaviours], pydantic.Field(description="What the agent did in that reply.")))  # type: ignore[valid-type]
    return pydantic.create_model(
        "FailureRateVerdict",
        findings=(list[finding], pydantic.Field(description="At most three agent replies that decide the label.",  # type: ignore[valid-type]
                                                json_schema_extra={"maxItems": 3})),
        reason=(str, pydantic.Field(description="One short sentence: why this label.",
                                    json_schema_extra={"maxLength": COMPACT_REASON_CHARS})),
        verdict=(Literal[labels], pydantic.Field(description="Exactly one of the listed labels.")))  # type: ignore[valid-type]


def turn_text(ctx: MetricContext, turn: Any, speaker: str) -> str | None:
    """The message of *speaker* ("user" or "agent") in 1-based *turn*, or None when there is none."""
    if isinstance(turn, bool) or not isinstance(turn, int) or not 1 <= turn <= len(ctx.trace.turns):
        return None
    t = ctx.trace.turns[turn - 1]
    text = t.input if speaker == "user" else t.output
    return text if text and text.strip() else None


def excerpt(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


@metric("failure_rate", dimension="multi_turn", requires=("judge",), judge_calls=1,
        summary="judge label over the dialogue: hallucination 0 / stall .4 / mixed .6 / honest_fallback, "
                "alternative_proposed, not_applicable 1; any fabrication forces hallucination")
@dataclass(frozen=True, kw_only=True)
class FailureRate:
    """How the agent behaves when it does not know: hallucinate, stall, or admit it (eval_lib)."""

    threshold: float = 0.7

    async def score(self, ctx: MetricContext) -> MetricResult:
        conv = conversation(ctx)
        if isinstance(conv, MetricResult):
            return conv
        s = Session.open(self, ctx)
        behaviours, b_order = s.render_choices("main", "behaviour")
        labels, l_order = s.render_choices("main", "verdict")
        schema = (failure_schema_compact if s.compact else failure_schema)(tuple(b_order), tuple(l_order))
        try:
            v = await s.ask("main", schema, conv,
                            substitutions={"behaviour_choices": behaviours, "verdict_choices": labels})
        except JudgeFailed as failed:
            return failed.result
        if v.verdict not in FAILURE_WEIGHTS:  # only with a judge that skips schema validation
            return s.error("main", f"unknown label {v.verdict!r}; expected one of {sorted(FAILURE_WEIGHTS)}",
                           v.model_dump_json())
        findings: list[dict[str, Any]] = []
        evidence: list[str] = []
        fabrications: list[str] = []
        replies = [t.output for t in ctx.trace.turns if t.output]
        for f in v.findings:  # findings quote the agent, so only its replies can confirm them
            if s.compact:  # by turn number: the turn must exist and hold an agent reply
                reply = turn_text(ctx, f.turn, "agent")
                quote = excerpt(reply) if reply is not None else ""
                ok = [quote] if reply is not None else []
                if not ok:
                    s.unverified.append(f"turn {f.turn} (no agent reply there)")
            else:
                quote = f.quote
                ok, _ = s.verify([f.quote], texts=replies)
            findings.append({"turn": f.turn, "quote": quote, "behaviour": f.behaviour, "verified": bool(ok)})
            if ok:
                evidence.append(quote)
                if f.behaviour == FABRICATED:
                    fabrications.append(quote)
        label, reason = v.verdict, v.reason
        details: dict[str, Any] = {"verdict": label, "judge_verdict": v.verdict, "findings": findings}
        if fabrications and label != "hallucination":
            label = "hallucination"
            details.update(verdict=label, priority_rule_applied=True)
            reason = (f"hallucination (priority rule: the judge's findings include a fabrication, "
                      f"{fabrications[0]!r}, but its verdict was {v.verdict!r}); judge: {v.reason}")
        else:
            reason = f"{label}: {reason}"
        return s.result(FAILURE_WEIGHTS[label], reason, evidence, details)


class GoalVerdict(pydantic.BaseModel):
    reasoning: str
    goal: str = pydantic.Field(description="The outcome the user wanted, in one sentence.")


class SignalsVerdict(pydantic.BaseModel):
    positive_signals: list[str] = pydantic.Field(description="Verbatim quotes showing progress or satisfaction.")
    negative_signals: list[str] = pydantic.Field(description="Verbatim quotes showing frustration, failure or "
                                                 "repeated clarification.")
    unmet_requests: list[str] = pydantic.Field(description="Verbatim quotes of user requests left unmet.")


class SummaryVerdict(pydantic.BaseModel):
    summary: str = pydantic.Field(description="One or two sentences.")


class GoalVerdictCompact(pydantic.BaseModel):
    goal: str = pydantic.Field(description="The outcome the user wanted, in one short sentence.",
                               json_schema_extra={"maxLength": COMPACT_REASON_CHARS})


_TURNS = {"type": "array", "maxItems": 3, "items": {"type": "integer", "minimum": 1}}


class SignalTurns(pydantic.BaseModel):
    """The compact signals: turn numbers, verified against the dialogue (see the module docstring)."""

    positive_turns: list[int] = pydantic.Field(description="Turns where the user thanks the assistant or confirms "
                                               "that something worked.", json_schema_extra=_TURNS)
    negative_turns: list[int] = pydantic.Field(description="Turns where the user is frustrated or confused, repeats "
                                               "or rephrases a request, corrects the assistant or gives up.",
                                               json_schema_extra=_TURNS)
    unmet_turns: list[int] = pydantic.Field(description="Turns where the user asked for something that was never "
                                            "delivered.", json_schema_extra=_TURNS)


class SummaryVerdictCompact(pydantic.BaseModel):
    summary: str = pydantic.Field(description="One short sentence.",
                                  json_schema_extra={"maxLength": COMPACT_REASON_CHARS})


@functools.lru_cache(maxsize=512)
def outcome_schema(labels: tuple[str, ...], compact: bool = False) -> type[pydantic.BaseModel]:
    short = pydantic.Field(description="One short sentence: why this label.",
                           json_schema_extra={"maxLength": COMPACT_REASON_CHARS})
    reasoning: Any = (str, short) if compact else (str, ...)
    return pydantic.create_model("OutcomeVerdict", reasoning=reasoning,
                                 verdict=(Literal[labels], pydantic.Field(description="Exactly one listed label.")))  # type: ignore[valid-type]


def _unique(items: list[str]) -> list[str]:
    out: list[str] = []
    for i in items:
        if i.strip() and i.strip() not in out:
            out.append(i.strip())
    return out


@metric("goal_achievement_rate", dimension="multi_turn", requires=("judge",), judge_calls="3 with a goal, else 4",
        summary="judge: fully 1 / mostly .9 / partial .7 / minor .3 / none 0, minus 0.1 per (verified) "
                "negative signal, floor 0")
@dataclass(frozen=True, kw_only=True)
class GoalAchievementRate:
    """Did the user get what they came for? (eval_lib).

    Goal from ``user_goal``, else ``trace.expected.goal``, else inferred by the judge (one more
    call). Signals are quotes from the dialogue; those not found there are listed in
    details["unverified_evidence"] and do not count towards the penalty.
    """

    threshold: float = 0.7
    user_goal: str | None = None
    negative_penalty: float = 0.1

    def planned_calls(self, trace: Any) -> int:
        """Signals, verdict and summary; one more to infer the goal when none is given."""
        has_goal = self.user_goal is not None or (trace.expected is not None and bool(trace.expected.goal))
        return 3 if has_goal else 4

    async def score(self, ctx: MetricContext) -> MetricResult:
        conv = conversation(ctx)
        if isinstance(conv, MetricResult):
            return conv
        s = Session.open(self, ctx)
        dialogue_texts = [x.text for x in conv]
        try:
            return await self._score(ctx, s, conv, dialogue_texts)
        except JudgeFailed as failed:
            return failed.result

    async def _score(self, ctx: MetricContext, s: Session, conv: list[Section], texts: list[str]) -> MetricResult:
        goal = self.user_goal
        source = "param"
        if goal is None and ctx.trace.expected is not None and ctx.trace.expected.goal:
            goal, source = ctx.trace.expected.goal, "trace"
        if goal is None:
            g = await s.ask("goal", GoalVerdictCompact if s.compact else GoalVerdict, conv)
            goal, source = g.goal, "inferred"
        goal_section = Section("USER_GOAL", goal, "The user's goal:", source=False)

        if s.compact:
            positive, negative, unmet = await self._signal_turns(ctx, s, [goal_section, *conv])
        else:
            sig = await s.ask("signals", SignalsVerdict, [goal_section, *conv])
            # Frustration, repeated requests and unmet requests are the user's words: an agent reply
            # offered as one is the wrong speaker and does not count.
            users = [t.input for t in ctx.trace.turns if t.input]
            positive, _ = s.verify(_unique(sig.positive_signals), texts=texts)
            negative, _ = s.verify(_unique(sig.negative_signals), texts=users)
            unmet, _ = s.verify(_unique(sig.unmet_requests), texts=users)
        signal_text = "\n".join([*(f"positive: {q}" for q in positive), *(f"negative: {q}" for q in negative),
                                 *(f"unmet request: {q}" for q in unmet)]) or "(no signals found)"
        signals_section = Section("SIGNALS", signal_text, "Signals found in the dialogue:", source=False)

        choices, order = s.render_choices("verdict", "verdict", ordinal=True)
        out = await s.ask("verdict", outcome_schema(tuple(order), s.compact), [goal_section, *conv, signals_section],
                          substitutions={"verdict_choices": choices})
        weight = OUTCOME_WEIGHTS[out.verdict]
        score = max(0.0, weight - self.negative_penalty * len(negative))

        details: dict[str, Any] = {
            "goal": goal, "goal_source": source, "verdict": out.verdict, "verdict_weight": weight,
            "positive_signals": positive, "negative_signals": negative, "unmet_requests": unmet,
            "penalty": round(self.negative_penalty * len(negative), 10),
        }
        summary_input = f"verdict: {out.verdict}\nreasoning: {out.reasoning}\n{signal_text}"
        try:
            summary_schema = SummaryVerdictCompact if s.compact else SummaryVerdict
            summ = await s.ask("summary", summary_schema, [goal_section, Section(
                "ASSESSMENT", summary_input, "The assessment to summarise:", source=False)])
            details["summary"] = summ.summary
        except JudgeFailed as failed:  # the score stands; only the summary is missing
            details["summary_error"] = failed.result.reason
            if "raw" in failed.result.details:
                details["raw"] = failed.result.details["raw"]
        reason = f"{out.verdict} ({weight:g})"
        if negative:
            reason += f" - {self.negative_penalty:g} x {len(negative)} negative signal(s)"
        reason += f": {details.get('summary') or out.reasoning}"
        return s.result(score, reason, [*positive, *negative, *unmet], details)

    async def _signal_turns(self, ctx: MetricContext, s: Session,
                            sections: list[Section]) -> tuple[list[str], list[str], list[str]]:
        """The compact signals call: turn numbers, each kept only where that turn has the right speaker."""
        sig = await s.ask("signals", SignalTurns, sections)
        out: list[list[str]] = []
        for field_name, speaker in (("positive_turns", "either"), ("negative_turns", "user"),
                                    ("unmet_turns", "user")):
            kept: list[str] = []
            for turn in dict.fromkeys(getattr(sig, field_name)):
                text = turn_text(ctx, turn, "user")
                if text is None and speaker == "either":
                    text = turn_text(ctx, turn, "agent")
                if text is None:
                    missing = "message" if speaker == "either" else "user message"
                    s.unverified.append(f"{field_name}: turn {turn} (no {missing} there)")
                else:
                    kept.append(f"turn {turn}: {excerpt(text)}")
            out.append(kept)
        s.details["signal_turns"] = {name: list(getattr(sig, name))
                                     for name in ("positive_turns", "negative_turns", "unmet_turns")}
        return out[0], out[1], out[2]

