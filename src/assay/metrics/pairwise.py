"""Pairwise judge metrics: which of two agents' replies to the same conversation is better.

The judge sees the conversation once and the two final replies as candidates "A" and "B", each
fenced, never the runs' names or system prompts (two prompt versions must not tell the judge
which is which). It answers A, B or tie with its reasons. Every pair is judged in both orders by
default (run a's reply as A, then as B): a judge that prefers a position rather than a reply
gives contradicting verdicts, which count as a tie and are reported as its position-inconsistency
rate. Verdicts are read from run b's side: 1.0 b better, 0.5 tie, 0.0 a better.

    from assay.metrics.pairwise import pairwise_metric
    Concise = pairwise_metric("concise", "Which reply answers with fewer needless words?")

Pairwise metrics live in their own registry (:data:`PAIRWISE`): they score two traces, not one,
so ``assay run`` never selects them; ``assay versus`` and ``assay tournament`` do.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import ConfigError
from ..model import MetricResult, Trace, Warning
from ._base import MetricContext, MetricSpec, Requirement, build
from ._judged import JudgeFailed, Rubric, RubricSource, Session, label_schema, load_rubric, read_rubric
from ._sections import Section

LABELS = ("A", "B", "tie")
ORDERS = ("ab", "ba")
"""Request names: "ab" shows run a's reply as candidate A, "ba" shows it as candidate B."""
_WINNER = {"ab": {"A": "a", "B": "b", "tie": "tie"}, "ba": {"A": "b", "B": "a", "tie": "tie"}}
SCORE_OF = {"b": 1.0, "tie": 0.5, "a": 0.0}
"""A pair's score, from run b's side."""


def final_reply(trace: Trace) -> str | None:
    """The agent's last reply in *trace* (None when its last turn has none)."""
    return trace.turns[-1].output if trace.turns else None


def _history(a: Trace, b: Trace) -> tuple[list[Section], bool]:
    """The conversation before the final replies, and whether the earlier agent replies were shown.

    Earlier turns are shown whole when both runs have them identical; otherwise only the user's
    messages are (showing one run's earlier replies would tell the judge which candidate is whose).
    """
    prior_a, prior_b = a.turns[:-1], b.turns[:-1]
    same = [(t.input, t.output) for t in prior_a] == [(t.input, t.output) for t in prior_b]
    out: list[Section] = []
    for n, t in enumerate(prior_a, 1):
        if t.input is not None:
            out.append(Section(f"TURN_{n}_USER", t.input, f"Turn {n}, user message:"))
        if same and t.output is not None:
            out.append(Section(f"TURN_{n}_AGENT", t.output, f"Turn {n}, agent reply (the same in both):"))
    last = a.turns[-1].input if a.turns else None
    if last is not None:
        out.append(Section("USER_MESSAGE", last, "The user's last message, which both candidates answer:"))
    return out, same or not prior_a


def _reference(a: Trace, b: Trace) -> list[Section]:
    def ref(t: Trace) -> str | None:
        last = t.turns[-1] if t.turns else None
        if last is not None and last.expected is not None and last.expected.output is not None:
            return last.expected.output
        return t.expected.output if t.expected is not None else None

    ra, rb = ref(a), ref(b)
    return [Section("EXPECTED_ANSWER", ra, "A reference answer known to be good:")] if ra is not None and ra == rb \
        else []


@dataclass(frozen=True, kw_only=True)
class PairwiseJudged:
    """Base of pairwise judge metrics: a rubric with ``@@ main`` and ``@@ choices verdict`` A / B / tie."""

    both_orders: bool = True
    """Judge each pair with the candidates in both positions (False: one order, chosen per pair)."""
    threshold: float = 0.5

    spec: ClassVar[MetricSpec]
    rubric: ClassVar[RubricSource] = None

    @property
    def orders(self) -> int:
        return 2 if self.both_orders else 1

    def planned_calls(self) -> int:
        """Judge calls per pair (the dry run's and progress's count: pairs x orders)."""
        return self.orders

    def the_rubric(self) -> Rubric:
        got = type(self).__dict__.get("_rubric")
        return got if got is not None else load_rubric(self.spec.name)

    def substitutions(self) -> dict[str, str]:
        return {}

    @classmethod
    def check_rubric(cls, rubric: Rubric) -> Rubric:
        if "main" not in rubric.prompts:
            raise ConfigError(f"pairwise rubric {rubric.name!r} has no '@@ main' prompt block")
        labels = rubric.choices.get("verdict")
        if labels is None or set(labels) != set(LABELS):
            raise ConfigError(f"pairwise rubric {rubric.name!r}: '@@ choices verdict' must list exactly A, B and "
                              f"tie, got {sorted(labels or {})}")
        return rubric

    def sections(self, a: Trace, b: Trace) -> tuple[list[Section], dict[str, Any]] | MetricResult:
        """What both orders show besides the candidates, with notes for the details; or a null result."""
        out_a, out_b = final_reply(a), final_reply(b)
        for side, out in (("a", out_a), ("b", out_b)):
            if out is None:
                return MetricContext.null(Warning.MISSING_DATA, f"run {side}'s trace has no final reply to compare")
            if not out.strip():
                return MetricContext.null(Warning.INVALID_DATA, f"run {side}'s final reply is empty")
        history, full = _history(a, b)
        notes: dict[str, Any] = {}
        if not full:
            notes["history"] = "user messages only: the runs' earlier replies differ"
        ins_a = [t.input for t in a.turns]
        if ins_a != [t.input for t in b.turns]:
            notes["inputs_differ"] = True
        return [*_reference(a, b), *history], notes

    async def judge_pair(self, judge: Any, a: Trace, b: Trace, *, repeat: int = 0) -> MetricResult:
        """Judge run a's and run b's final replies on one conversation; the score is b's (1 / 0.5 / 0).

        ``details``: ``winner`` (a, b or tie), ``verdicts`` (per order: the label, whose reply it
        named, the reasons), ``position_consistent`` (both orders agreed; None with one order).
        """
        name = self.spec.name
        ctx = MetricContext(a, judge, repeat=repeat, metric_name=name, metric_threshold=self.threshold)
        rubric = self.the_rubric()
        session = Session(ctx, name, rubric, f"{name}@{rubric.version}")
        got = self.sections(a, b)
        if isinstance(got, MetricResult):
            return got
        shared, notes = got
        orders = ORDERS if self.both_orders else (session.rng("pair", "order").choice(ORDERS),)
        replies = {"a": final_reply(a) or "", "b": final_reply(b) or ""}

        async def one(order: str) -> Any:
            first, second = ("a", "b") if order == "ab" else ("b", "a")
            candidates = [Section("CANDIDATE_A", replies[first], "Candidate A's final reply:"),
                          Section("CANDIDATE_B", replies[second], "Candidate B's final reply:")]
            choices, labels = session.render_choices(order, "verdict")
            return await session.ask(order, label_schema(tuple(labels)), [*shared, *candidates], prompt="main",
                                     substitutions={**self.substitutions(), "verdict_choices": choices})

        # Both orders go out together: a dry run and a budget see every planned call.
        answers = await asyncio.gather(*(one(o) for o in orders), return_exceptions=True)
        for answer in answers:
            if isinstance(answer, BaseException) and not isinstance(answer, JudgeFailed):
                raise answer
        failed = [x for x in answers if isinstance(x, JudgeFailed)]
        if failed:
            return session.finish(failed[0].result)
        verdicts, winners = [], []
        for order, v in zip(orders, answers):
            winner = _WINNER[order][v.verdict]
            evidence, _ = session.verify(v.evidence)
            winners.append(winner)
            verdicts.append({"order": order, "candidate_a": order[0], "label": v.verdict, "winner": winner,
                             "reasoning": v.reasoning, "evidence": evidence})
        consistent = None if len(winners) == 1 else winners[0] == winners[1]
        winner = winners[0] if consistent is not False else "tie"
        reasons = " | ".join(f"{d['candidate_a']} as A: {d['label']}: {d['reasoning']}" for d in verdicts)
        reason = (f"{_SAID[winner]}" + ("" if consistent is not False else
                                        " (the verdict changed when the candidates swapped places)")
                  + f": {reasons}")
        details = {"winner": winner, "verdicts": verdicts, "position_consistent": consistent, **notes}
        return session.result(SCORE_OF[winner], reason, [e for d in verdicts for e in d["evidence"]], details)


_SAID = {"a": "run a's reply is better", "b": "run b's reply is better", "tie": "tie"}


# -- the registry ---------------------------------------------------------------------------------

PAIRWISE: dict[str, type[PairwiseJudged]] = {}
"""Pairwise metric name -> class (``pairwise_quality`` and what :func:`pairwise_metric` adds)."""


def pairwise(name: str, *, summary: str = "", version: str = "1", register: bool = True,
             replace: bool = False) -> Any:
    """Declare a pairwise metric class (a ``PairwiseJudged`` subclass) under *name*."""
    def wrap(cls: type[PairwiseJudged]) -> type[PairwiseJudged]:
        cls = dataclass(frozen=True, kw_only=True)(cls) if "__dataclass_fields__" not in cls.__dict__ else cls
        doc = (cls.__doc__ or "").strip()
        cls.spec = MetricSpec(name, "pairwise", (Requirement.JUDGE,), summary or (doc.splitlines()[0] if doc else ""),
                              version, judge_calls="2 per pair (1 with both_orders=false)", default=False)
        rubric = cls.__dict__.get("_rubric") or (load_rubric(name) if cls.rubric is None else None)
        if rubric is None:
            text, where = read_rubric(cls.rubric, module=cls.__module__)
            rubric = Rubric.parse(name, text) if text.lstrip().startswith("version:") else criteria_rubric(name, text)
        cls._rubric = cls.check_rubric(rubric)  # type: ignore[attr-defined]
        if register:
            if name in PAIRWISE and not replace and PAIRWISE[name].__qualname__ != cls.__qualname__:
                raise ConfigError(f"pairwise metric {name!r} already exists ({PAIRWISE[name].__module__}); "
                                  "rename yours or pass replace=True")
            PAIRWISE[name] = cls
        return cls

    return wrap


@pairwise("pairwise_quality", summary="which final reply serves the user better (A / B / tie), both orders")
class PairwiseQuality(PairwiseJudged):
    """Overall quality of two final replies to one conversation: correct, useful, on task, clear, safe."""


_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


def criteria_rubric(name: str, criterion: str, steps: Sequence[str] = ()) -> Rubric:
    """A pairwise rubric around a plain-text criterion (``rubrics/pairwise_criteria.md``).

    The version is a digest of the criterion and steps, so editing them never reuses a cached verdict.
    """
    base = load_rubric("pairwise_criteria")
    step_text = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)) if steps else \
        "(no steps given: reason from the criteria directly)"
    prompt = string.Template(base.prompt("main")).safe_substitute(criteria=criterion.strip(), steps=step_text)
    digest = hashlib.sha256("\x1f".join([criterion.strip(), *steps]).encode()).hexdigest()[:12]
    return Rubric(name, f"{base.version}-{digest}", {"main": prompt}, base.choices)


def pairwise_metric(name: str, criteria: RubricSource, *, steps: Sequence[str] = (), register: bool = True,
                    replace: bool = False) -> type[PairwiseJudged]:
    """A pairwise metric judged on *criteria*: plain text (one criterion), or any rubric source
    (a full rubric with ``@@ main`` and ``@@ choices verdict`` listing A, B and tie, a Path, ...)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"pairwise metric name must be a word (letters, digits, _ . -), got {name!r}")
    if isinstance(criteria, str) and not criteria.strip():
        raise ConfigError(f"pairwise metric {name!r}: empty criteria")
    text, where = read_rubric(criteria)
    try:
        rubric = Rubric.parse(name, text) if text.lstrip().startswith("version:") else \
            criteria_rubric(name, text, tuple(steps))
    except ConfigError as exc:
        raise ConfigError(f"{exc} (rubric from {where})") from None
    cls = type(f"Pairwise_{name.replace('.', '_').replace('-', '_')}", (PairwiseJudged,),
               {"__doc__": f"Pairwise: {text.strip().splitlines()[0][:120]}", "__module__": __name__,
                "_rubric": rubric})
    return pairwise(name, register=register, replace=replace)(cls)


def get_pairwise(text: str) -> PairwiseJudged:
    """A pairwise metric instance from ``NAME[:param=value,...]`` (``-m`` of ``assay versus``)."""
    from ._base import parse_metric_arg

    name, params = parse_metric_arg(text)
    if name not in PAIRWISE:
        raise ConfigError.unknown("pairwise metric", name, PAIRWISE)
    return build(PAIRWISE[name], params)


def metric_info(m: PairwiseJudged) -> dict[str, Any]:
    """Name, rubric key and parameters: what a result records so it can be reproduced."""
    rubric = m.the_rubric()
    return {"name": m.spec.name, "rubric": f"{m.spec.name}@{rubric.version}",
            "params": {f.name: getattr(m, f.name) for f in dataclasses.fields(m) if f.init}}
