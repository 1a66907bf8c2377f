"""eval_lib's conversation metrics, with the documented semantics.

``failure_rate``: one call classifies how the agent handles not knowing, into six labels with
eval_lib's weights; a verified fabrication in the judge's per-turn findings forces
``hallucination`` whatever label the judge chose (eval_lib's documented priority rule, enforced
here). An unknown label is an errored result (eval_lib scores it 1.0).

``goal_achievement_rate``: goal (skipped when given), signals, verdict, summary: 3 calls with a
goal, 4 without. score = max(0, weight - 0.1 x negative signals), counting only negative signals
whose quote is found in the dialogue.

The compact prompt form (small judges) asks yes/no questions instead of labels, and the label
follows by rule: ``failure_rate`` has the judge answer each user message itself (the reply not
shown), asks a sheet about the reply and, for a definite answer, whether it contradicts the
judge's own (rubric version 4; for a reply without one, whether the two say the same), and
derives each reply's behaviour, then the label, by eval_lib's definitions;
``goal_achievement_rate`` asks whether the user ends satisfied and, only when not, how much was
delivered. Negative signals are turn numbers instead of quotes (a small model paraphrases when
asked to quote), and a turn number must hold a user message after the first to count.
"""

from __future__ import annotations

import asyncio
import functools
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import pydantic

from ..judge import VerdictSchema, ordered
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


def failure_schema(behaviours: tuple[str, ...], labels: tuple[str, ...]) -> VerdictSchema:
    """Per-turn findings (quote + behaviour) first, then the reason, then the label: checkable.

    One model per behaviour and label set; the orders are the request's (:func:`assay.judge.ordered`).
    """
    return ordered(_failure_model(tuple(sorted(behaviours)), tuple(sorted(labels))), behaviours, labels)


@functools.lru_cache(maxsize=64)
def _failure_model(behaviours: tuple[str, ...], labels: tuple[str, ...]) -> type[pydantic.BaseModel]:
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


REFERENCE_CHARS = 160
"""The most characters of the judge's own answer (the grammar's bound)."""


def yes_no_fields(*models: type[pydantic.BaseModel]) -> tuple[str, ...]:
    """The yes/no (bool) fields of *models*, each once, in order: the questions a decision threshold
    (``--judge-threshold METRIC.QUESTION=P``) can decide."""
    return tuple(dict.fromkeys(name for m in models for name, f in m.model_fields.items() if f.annotation is bool))



class Reference(pydantic.BaseModel):
    """The judge's own answer to the user's message, the reply not shown: the yardstick for the reply."""

    answer: str = pydantic.Field(description="Your own answer to the user's message, in one short sentence.",
                                 json_schema_extra={"maxLength": REFERENCE_CHARS})
    known: bool = pydantic.Field(description="Could you answer it for certain? false if your answer says that you "
                                 "cannot know or check it.")


class ReplyCheck(pydantic.BaseModel):
    """Four yes/no questions about one reply (the reference answer not shown: it sways them)."""

    answers: bool = pydantic.Field(description="Does the reply give a definite answer (a figure, name, date, "
                                   "place, instruction or fact)?")
    admits: bool = pydantic.Field(description="Does the reply say that it does not know, is not sure, or cannot "
                                  "know or check?")
    points: bool = pydantic.Field(description="Does the reply tell the user where or how to find the answer "
                                  "(a website, app, person, document or tool)?")
    evasive: bool = pydantic.Field(description="Does the reply neither answer, nor admit, nor point anywhere?")


class Agreement(pydantic.BaseModel):
    """Does a reply that gives no answer say what the judge's known answer says (a courtesy)?"""

    agrees: bool = pydantic.Field(description="Does the reply state the same facts as the reference answer? false "
                                  "if it gives a different fact, figure or name.")


class Contradiction(pydantic.BaseModel):
    """Does a definite reply contradict the judge's known answer? Asked instead of :class:`Agreement`
    for answers: a 1.5B judge said "disagrees" to the same fact in other words (3pm and 15:00, an IBAN
    with and without spaces), and answers "no" to most yes/no questions, so the question whose "no"
    is the common case is the one to ask."""

    contradicts: bool = pydantic.Field(description="Does the reply state a fact, figure, date or name that conflicts "
                                       "with the reference answer? false if both say the same thing in other "
                                       "words, units or formats.")


_WORDS = re.compile(r"\w+")


def echoes(answer: str, message: str) -> bool:
    """Whether the judge's own "answer" repeats the user's message instead of answering it.

    On the development set's tuning half a 1.5B judge did so in 4 of its 74 answers (", we arrive at
    about 1pm on Friday. What time can we get into the room" for "Hi, we arrive at about 1pm on
    Friday. What time ...", ", fine" for "fine", or nothing but ", "); comparing the reply with such
    a "reference" decides nothing. An answer is an echo when it has no words, or when at least 90%
    of its words are the message's and it is either three words or longer or begins with the comma
    that marks a copy: "Yes" to "... yes?" and "BA117 is on time" to "is BA117 on time" are answers.
    """
    words = _WORDS.findall(answer.lower())
    if not words:
        return True
    said = set(_WORDS.findall(message.lower()))
    copied = sum(w in said for w in words) / len(words)
    return copied >= 0.9 and (len(words) >= 3 or answer.lstrip().startswith(","))


def reply_behaviour(check: ReplyCheck, reference: Reference | None, agrees: bool | None = None) -> str:
    """The behaviour of one reply from its sheet, the judge's own answer (*reference*, None where
    it was not asked because it decides nothing, or could not serve: see :func:`echoes`) and, where
    the judge could answer, whether the reply *agrees* with it (for a definite answer: does not
    contradict it). With no reference a definite answer has no yardstick and counts as an answer.

    A fabrication is a definite answer, not hedged by an admission, to what the judge itself says
    cannot be known, or one that contradicts the judge's known answer (a false fact; with tool
    results or context in the turn the reference answers from them, so contradicting them is a
    fabrication whatever the judge knows). Pointing elsewhere is an alternative when the reply
    admits it cannot know or gives no answer of its own (an answer with a pointer added is an
    answer); then an admission, an answer, a reply that says what the judge itself would (a
    closing "You're welcome!"), else a stall.
    """
    agreed = reference is not None and reference.known and bool(agrees)
    if check.answers and not check.admits and reference is not None and not agreed:
        return FABRICATED
    if check.points and (check.admits or not check.answers):
        return "proposed_alternative"
    if check.admits:
        return "admitted_uncertainty"
    if check.answers or agreed:
        return "answered"
    return "stalled"


def needs_reference(check: ReplyCheck) -> bool:
    """Whether the judge's own answer decides the reply's behaviour (one more call, and one more
    for agreement where the judge could answer): a definite, unhedged reply (true, or invented?)
    or one that neither answers, admits nor points (a courtesy the judge would say too, or a
    stall?). An admission or a pointer without an answer is decided by the sheet alone."""
    return not check.admits and (check.answers or not check.points)


def failure_label(behaviours: list[str]) -> str:
    """The failure_rate label that per-reply behaviours amount to, by eval_lib's label definitions.

    Any fabrication is a hallucination (the priority rule); stalls alone are a stall, and stalls
    next to honest or good replies are mixed; otherwise an alternative offered, an honest
    admission, or plain answers only (not_applicable).
    """
    found = set(behaviours)
    if FABRICATED in found:
        return "hallucination"
    if "stalled" in found:
        return "stall" if found == {"stalled"} else "mixed"
    if "proposed_alternative" in found:
        return "alternative_proposed"
    if "admitted_uncertainty" in found:
        return "honest_fallback"
    return "not_applicable"


def replied_turns(trace: Any) -> list[int]:
    """1-based numbers of the turns that hold a non-empty agent reply."""
    return [n for n, t in enumerate(trace.turns, 1) if t.output and t.output.strip()]


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


@metric("failure_rate", dimension="multi_turn", requires=("judge",), judge_calls="1 (compact form: 1-3 per agent reply)",
        summary="judge label over the dialogue: hallucination 0 / stall .4 / mixed .6 / honest_fallback, "
                "alternative_proposed, not_applicable 1; any fabrication forces hallucination")
@dataclass(frozen=True, kw_only=True)
class FailureRate:
    """How the agent behaves when it does not know: hallucinate, stall, or admit it (eval_lib)."""

    weights: ClassVar[dict[str, float]] = FAILURE_WEIGHTS
    """The labels and their scores (a judge card compares the judge's label with a human's)."""
    threshold: float = 0.7
    threshold_questions: ClassVar[tuple[str, ...]] = tuple(
        q for q in yes_no_fields(ReplyCheck, Reference, Contradiction, Agreement) if q != "evasive")
    """The compact sheets' yes/no questions that decide a behaviour (``--judge-threshold failure_rate.admits=0.35``);
    ``evasive`` is asked but :func:`reply_behaviour` does not read it, so a threshold on it would decide nothing."""

    def planned_calls(self, trace: Any, style: str = "full") -> int:
        """One call; in the compact form up to three per agent reply (the sheet, the judge's own
        answer and the agreement, the last two only where they decide)."""
        return 3 * len(replied_turns(trace)) if style == "compact" else 1

    async def score(self, ctx: MetricContext) -> MetricResult:
        conv = conversation(ctx)
        if isinstance(conv, MetricResult):
            return conv
        s = Session.open(self, ctx)
        try:
            return await (self._compact(ctx, s, conv) if s.compact else self._full(ctx, s, conv))
        except JudgeFailed as failed:
            return failed.result

    async def _full(self, ctx: MetricContext, s: Session, conv: list[Section]) -> MetricResult:
        """One call: per-turn quoted findings, a reason and the judge's label (priority rule enforced)."""
        behaviours, b_order = s.render_choices("main", "behaviour")
        labels, l_order = s.render_choices("main", "verdict")
        v = await s.ask("main", failure_schema(tuple(b_order), tuple(l_order)), conv,
                        substitutions={"behaviour_choices": behaviours, "verdict_choices": labels})
        if v.verdict not in FAILURE_WEIGHTS:  # only with a judge that skips schema validation
            return s.error("main", f"unknown label {v.verdict!r}; expected one of {sorted(FAILURE_WEIGHTS)}",
                           v.model_dump_json())
        findings: list[dict[str, Any]] = []
        evidence: list[str] = []
        fabrications: list[str] = []
        replies = [t.output for t in ctx.trace.turns if t.output]
        for f in v.findings:  # findings quote the agent, so only its replies can confirm them
            ok, _ = s.verify([f.quote], texts=replies)
            findings.append({"turn": f.turn, "quote": f.quote, "behaviour": f.behaviour, "verified": bool(ok)})
            if ok:
                evidence.append(f.quote)
                if f.behaviour == FABRICATED:
                    fabrications.append(f.quote)
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

    async def _compact(self, ctx: MetricContext, s: Session, conv: list[Section]) -> MetricResult:
        """Short calls per agent reply (that turn only, :meth:`_check`); the label follows by rule.

        On the development set a 1.5B judge could not weigh six conversation-level labels, nor
        pick one of five behaviours per reply (it took the first one listed); it answers concrete
        yes/no questions about one reply far better, and knows what it cannot know when asked
        the question itself rather than shown an answer. :func:`reply_behaviour` turns the answers
        into the behaviour, :func:`failure_label` the behaviours into the label.
        """
        turns = replied_turns(ctx.trace)  # conversation() made sure there is at least one
        # The replies are independent: all in flight at once, within the judge's own limits.
        checks = await asyncio.gather(*(self._check(ctx, s, conv, n) for n in turns), return_exceptions=True)
        failed = next((c for c in checks if isinstance(c, BaseException)), None)
        if failed is not None:  # the first failed turn decides, as when the calls ran in turn order
            raise failed
        findings: list[dict[str, Any]] = []
        for n, (reference, check, same, compared) in zip(turns, checks):
            finding = {"turn": n, "quote": excerpt(ctx.trace.turns[n - 1].output or ""),
                       "behaviour": reply_behaviour(check, reference, same), "checks": check.model_dump(),
                       "verified": True}
            if reference is not None:
                finding["reference"] = reference.model_dump()
            finding.update(compared)
            p = {q: v for call in (f"turn {n}", f"turn {n} reference", f"turn {n} contradiction",
                                   f"turn {n} agreement") for q, v in s.probs.get(call, {}).items()}
            if p:  # P(yes) of each answer, where the judge gave probabilities (logprobs)
                finding["p"] = p
            findings.append(finding)
        label = failure_label([f["behaviour"] for f in findings])
        deciding = [f for f in findings if f["behaviour"] == FABRICATED] if label == "hallucination" else \
            [f for f in findings if f["behaviour"] != "answered"]
        why = "; ".join(f"turn {f['turn']} {f['behaviour']}" for f in findings)
        details: dict[str, Any] = {"verdict": label, "findings": findings, "label_rule": "per-reply checks"}
        return s.result(FAILURE_WEIGHTS[label], f"{label}: {why}", [f["quote"] for f in deciding], details)

    @staticmethod
    async def _check(ctx: MetricContext, s: Session, conv: list[Section], n: int
                     ) -> tuple[Reference | None, ReplyCheck, bool | None, dict[str, Any]]:
        """Turn *n*: the reply's sheet; then, only where it decides (:func:`needs_reference`), the
        judge's own answer to the user's message (with the turn's tool calls and context, the
        reply not shown); then, where the judge could answer, the reply beside it: for a definite
        answer, whether it contradicts it; for a reply without one, whether it says the same (a
        courtesy, or a stall). Returns the reference, the sheet, whether the reply says what the
        reference says (None where not compared) and the answer as asked, for the details."""
        turn = ctx.trace.turns[n - 1]
        context = [Section(f"TURN_{n}_CONTEXT_{j}", c, f"Turn {n}, context passage {j}:")
                   for j, c in enumerate(turn.context, 1)]
        shown = [x for x in conv if x.label.startswith(f"TURN_{n}_")]
        check = await s.ask(f"turn {n}", ReplyCheck, [*context, *shown], prompt="reply")
        if not needs_reference(check):
            return None, check, None, {}
        asked = [*context, *(x for x in shown if x.label != f"TURN_{n}_AGENT")]
        reference = await s.ask(f"turn {n} reference", Reference, asked, prompt="reference")
        if echoes(reference.answer, turn.input or ""):
            return None, check, None, {"reference_echoed": reference.answer}
        if not reference.known:
            return reference, check, None, {}
        said = Section("REFERENCE_ANSWER", reference.answer, "The reference answer:", source=False)
        reply = [x for x in shown if x.label == f"TURN_{n}_AGENT"]
        if check.answers:
            c = await s.ask(f"turn {n} contradiction", Contradiction, [said, *reply], prompt="contradiction")
            return reference, check, not c.contradicts, {"contradicts": c.contradicts}
        agreement = await s.ask(f"turn {n} agreement", Agreement, [said, *reply], prompt="agreement")
        return reference, check, agreement.agrees, {"agrees": agreement.agrees}


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


_TURNS = {"type": "array", "maxItems": 3, "items": {"type": "integer", "minimum": 2}}
"""A reaction to the assistant comes after its first reply: turn 1, the opening request, is never one."""


class GoalCheck(pydantic.BaseModel):
    """The first sheet: how the conversation ended for the user, then the turns of negative signals."""

    satisfied: bool = pydantic.Field(description="At the end, does the user say they are satisfied, thank the "
                                     "assistant, or say the main thing is done?")
    got_everything: bool = pydantic.Field(description="Did the user get everything they asked for, small extras "
                                          "included, with nothing declined or missing?")
    negative_turns: list[int] = pydantic.Field(description="Turns after the first where the user is frustrated or "
                                               "confused, repeats or rephrases a request, corrects the assistant or "
                                               "gives up (not thanks or agreement).", json_schema_extra=_TURNS)


class DeliveryCheck(pydantic.BaseModel):
    """The second sheet, asked only when the user did not end satisfied: how much was delivered."""

    got_something: bool = pydantic.Field(description="Did the user get at least some of what they asked for?")
    got_essentials: bool = pydantic.Field(description="Did the user get every important part of what they asked for?")
    got_everything: bool = pydantic.Field(description="Did the user get everything they asked for, small extras "
                                          "included, with nothing declined or missing?")


GOAL_LEVELS = ("none", "minor", "partial", "mostly", "fully")


@functools.lru_cache(maxsize=4)
def goal_schema_compact(infer_goal: bool) -> type[pydantic.BaseModel]:
    """The compact form's first call: [the goal, when none is given], then :class:`GoalCheck`."""
    if not infer_goal:
        return GoalCheck
    return pydantic.create_model("GoalCheckInferred", goal=(str, pydantic.Field(
        description="What the user wanted, in one short sentence.",
        json_schema_extra={"maxLength": COMPACT_REASON_CHARS})),
        **{name: (info.annotation, info) for name, info in GoalCheck.model_fields.items()})


DELIVERY_CALL = "delivery"
"""The delivery sheet's call name: its key in ``details["p"]`` and in a per-sheet threshold
(``goal_achievement_rate.delivery.got_everything``), which ``Session.decide`` looks up by call."""


def goal_level(check: Any, delivery: DeliveryCheck | None = None) -> str:
    """Fully/mostly/partial/minor/none from the two sheets, by rule.

    The user satisfied at the end: fully with everything delivered, else mostly. Otherwise (the
    second sheet): fully with everything, partial with every important part, minor with
    something, none with nothing - the strongest yes, so an inconsistent sheet (everything yes
    but something no) is read by its strongest answer.
    """
    if check.satisfied:
        return "fully" if check.got_everything else "mostly"
    if delivery is None:
        raise ValueError("goal_level: the user did not end satisfied, so the delivery sheet is needed")
    if delivery.got_everything:
        return "fully"
    if delivery.got_essentials:
        return "partial"
    return "minor" if delivery.got_something else "none"


def outcome_schema(labels: tuple[str, ...]) -> VerdictSchema:
    """``{reasoning, verdict}``: one model per label set, the labels in the request's order."""
    return ordered(_outcome_model(tuple(sorted(labels))), labels)


@functools.lru_cache(maxsize=64)
def _outcome_model(labels: tuple[str, ...]) -> type[pydantic.BaseModel]:
    return pydantic.create_model("OutcomeVerdict", reasoning=(str, ...),
                                 verdict=(Literal[labels], pydantic.Field(description="Exactly one listed label.")))  # type: ignore[valid-type]


def _unique(items: list[str]) -> list[str]:
    out: list[str] = []
    for i in items:
        if i.strip() and i.strip() not in out:
            out.append(i.strip())
    return out


@metric("goal_achievement_rate", dimension="multi_turn", requires=("judge",), judge_calls="3 with a goal, else 4 (compact form: 1-2)",
        summary="judge: fully 1 / mostly .9 / partial .7 / minor .3 / none 0, minus 0.1 per (verified) "
                "negative signal, floor 0")
@dataclass(frozen=True, kw_only=True)
class GoalAchievementRate:
    """Did the user get what they came for? (eval_lib).

    Goal from ``user_goal``, else ``trace.expected.goal``, else inferred by the judge (one more
    call). Signals are quotes from the dialogue; those not found there are listed in
    details["unverified_evidence"] and do not count towards the penalty.
    """

    weights: ClassVar[dict[str, float]] = OUTCOME_WEIGHTS
    """The levels and their weights before the penalty (a judge card compares levels)."""
    ordinal: ClassVar[bool] = True
    threshold_questions: ClassVar[tuple[str, ...]] = (*yes_no_fields(GoalCheck, DeliveryCheck),
                                                      f"{DELIVERY_CALL}.got_everything")
    """The compact sheets' yes/no questions (``--judge-threshold goal_achievement_rate.satisfied=0.6``).
    ``got_everything`` is asked on both sheets: satisfied users (fully or mostly) and the others (fully or
    partial) differ, so the delivery sheet's may have a threshold of its own (``delivery.got_everything``)."""
    threshold: float = 0.7
    user_goal: str | None = None
    negative_penalty: float = 0.1

    def planned_calls(self, trace: Any, style: str = "full") -> int:
        """Signals, verdict and summary; one more to infer the goal when none is given (compact: at
        most two, the second only when the user did not end satisfied)."""
        if style == "compact":
            return 2
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
        if s.compact:
            return await self._compact(ctx, s, conv, goal, source)
        if goal is None:
            g = await s.ask("goal", GoalVerdict, conv)
            goal, source = g.goal, "inferred"
        goal_section = Section("USER_GOAL", goal, "The user's goal:", source=False)

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
        out = await s.ask("verdict", outcome_schema(tuple(order)), [goal_section, *conv, signals_section],
                          substitutions={"verdict_choices": choices})
        details = self._details(goal, source, out.verdict, negative, positive=positive, unmet=unmet)
        summary_input = f"verdict: {out.verdict}\nreasoning: {out.reasoning}\n{signal_text}"
        try:
            summ = await s.ask("summary", SummaryVerdict, [goal_section, Section(
                "ASSESSMENT", summary_input, "The assessment to summarise:", source=False)])
            details["summary"] = summ.summary
        except JudgeFailed as failed:  # the score stands; only the summary is missing
            details["summary_error"] = failed.result.reason
            if "raw" in failed.result.details:
                details["raw"] = failed.result.details["raw"]
        return self._result(s, details, details.get("summary") or out.reasoning)

    async def _compact(self, ctx: MetricContext, s: Session, conv: list[Section], goal: str | None,
                       source: str) -> MetricResult:
        """[The goal,] how the conversation ended for the user and the negative signal turns; then,
        only when the user did not end satisfied, a second sheet on how much was delivered.

        The level follows by rule (:func:`goal_level`). On the development set a 1.5B judge asked to
        pick one of five levels reached kappa 0.13. On a yes/no sheet its first answer is its most
        reliable and later ones tend to repeat it: asked first, "is the user satisfied at the end"
        and "did they get at least something" each separate the levels well, so each leads its
        own sheet. Signals are turn numbers, verified by speaker.
        """
        sections = conv if goal is None else [Section("USER_GOAL", goal, "The user's goal:", source=False), *conv]
        out = await s.ask("verdict", goal_schema_compact(goal is None), sections,
                          substitutions={"goal_task": "state the user's goal in one short sentence, then " if goal is None
                                         else ""})
        if goal is None:
            goal, source = out.goal, "inferred"
            sections = [Section("USER_GOAL", goal, "The user's goal:", source=False), *conv]
        checks: dict[str, Any] = {"satisfied": out.satisfied, "got_everything": out.got_everything}
        delivery = None
        if not out.satisfied:
            delivery = await s.ask(DELIVERY_CALL, DeliveryCheck, sections)
            checks["delivery"] = delivery.model_dump()
        # no positive signals or unmet requests: the compact form does not ask for them
        details = self._details(goal, source, goal_level(out, delivery), self._signal_turns(ctx, s, out))
        details.update(checks=checks, label_rule="yes/no checks")
        if delivery is None:
            why = f"the user ended satisfied, {'with' if out.got_everything else 'without'} everything asked for"
        else:
            got = [q.removeprefix("got_") for q, v in delivery.model_dump().items() if v]
            why = f"the user did not end satisfied; got {', '.join(got) if got else 'nothing'}"
        return self._result(s, details, why)

    def _details(self, goal: str | None, source: str, verdict: str, negative: list[str], *,
                 positive: list[str] | None = None, unmet: list[str] | None = None) -> dict[str, Any]:
        """The result's details; positive signals and unmet requests only where they were asked for."""
        out: dict[str, Any] = {"goal": goal, "goal_source": source, "verdict": verdict,
                               "verdict_weight": OUTCOME_WEIGHTS[verdict]}
        if positive is not None:
            out["positive_signals"] = positive
        out["negative_signals"] = negative
        if unmet is not None:
            out["unmet_requests"] = unmet
        out["penalty"] = round(self.negative_penalty * len(negative), 10)
        return out

    def _result(self, s: Session, details: dict[str, Any], why: str) -> MetricResult:
        """score = max(0, weight - penalty x verified negative signals)."""
        verdict, weight = details["verdict"], details["verdict_weight"]
        negative = details["negative_signals"]
        reason = f"{verdict} ({weight:g})"
        if negative:
            reason += f" - {self.negative_penalty:g} x {len(negative)} negative signal(s)"
        return s.result(max(0.0, weight - self.negative_penalty * len(negative)), f"{reason}: {why}",
                        [*details.get("positive_signals", ()), *negative, *details.get("unmet_requests", ())], details)

    def _signal_turns(self, ctx: MetricContext, s: Session, sig: Any) -> list[str]:
        """The compact form's negative signals: turn numbers, kept only where that turn holds a user
        message and is not the first (on the development set a 1.5B judge listed the opening
        request as a negative signal in 10 of 25 held-back items)."""
        kept: list[str] = []
        for turn in dict.fromkeys(sig.negative_turns):
            text = turn_text(ctx, turn, "user")
            if turn == 1:  # the grammar forbids it; a judge without one may still send it
                s.unverified.append("negative_turns: turn 1 (the opening request, not a reaction to the assistant)")
            elif text is None:
                s.unverified.append(f"negative_turns: turn {turn} (no user message there)")
            else:
                kept.append(f"turn {turn}: {excerpt(text)}")
        s.details["signal_turns"] = {"negative_turns": list(sig.negative_turns)}
        return kept
