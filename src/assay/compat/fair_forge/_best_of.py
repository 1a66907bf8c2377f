"""``BestOf.run``: Fair Forge's knockout tournament, each contest decided by assay's pairwise judging."""

from __future__ import annotations

import asyncio
from typing import Any

from ...engine._run import _drive
from ...errors import AssayError, ConfigError
from ...metrics.pairwise import PairwiseJudged, get_pairwise, pairwise_metric
from ...model import MetricResult, Trace, Turn, TurnExpected
from .. import _display
from ._agentic import judge_of, load_datasets
from .schemas.best_of import BestOfContest, BestOfMetric
from .schemas.common import Dataset


class BestOfJudgeError(AssayError):
    """A contest could not be decided: the judge gave no usable verdict on any of its conversations."""


class BestOf:
    """Fair Forge's BestOf: assistants answer the same questions; a knockout bracket finds the best.

    The bracket is Fair Forge's: the assistant ids in sorted order, paired neighbour with
    neighbour each round; with an odd number the last one has a bye; the contest winner goes on, and
    after a tie both do. One BestOfMetric comes back (``session_id="bestof"``,
    ``qa_id="bestof_tournament"``) naming the final winner and every contest.

    ``model``: a LangChain chat model (anything with ``ainvoke``) or anything
    ``assay.judge.make_judge`` accepts. ``criteria``: Fair Forge's label of what to judge; the
    default "BestOf" judges overall quality (``pairwise_quality``), any other text is the
    criterion the judge compares on.

    Differences from Fair Forge, on purpose:

    - A contest is decided question by question: for every ``qa_id`` both assistants answered,
      the judge compares the two answers (with the query and, when both datasets agree on it, the
      reference answer), anonymised as "A" and "B" and fenced - Fair Forge shows the judge both
      assistants' whole transcripts under their ids. Each question is judged in both orders
      (``both_orders=False``: one); a verdict that changes with the order is a tie. The contest
      goes to the assistant with the higher win rate over the questions (a tie counts half); equal
      rates are a tie.
    - A judge failure is not a crash halfway through the bracket: a question without a verdict is
      left out of its contest; a contest with no verdict at all raises :class:`BestOfJudgeError`.
    - When a round changes nothing (every contest tied), the tournament ends with
      ``bestof_winner_id="tie"``; Fair Forge would pair the same assistants forever.
    - For a ranking with intervals instead of a single bracket winner, use ``assay tournament``
      (every pair, or a Swiss schedule, and a Bradley-Terry fit).
    """

    def __init__(self, retriever: Any, model: Any, *, criteria: str = "BestOf", both_orders: bool = True,
                 use_structured_output: bool = True, bos_json_clause: str = "```json", eos_json_clause: str = "```",
                 verbose: bool = False, **kwargs: Any) -> None:
        if model is None:
            raise ConfigError("BestOf: model is required (a LangChain chat model or a judge model string)")
        self.retriever, self.model, self.criteria, self.verbose = retriever, model, criteria, verbose
        self.use_structured_output = use_structured_output
        self.bos_json_clause, self.eos_json_clause = bos_json_clause, eos_json_clause
        self.retriever_kwargs = kwargs
        if criteria == "BestOf":
            self.metric: PairwiseJudged = get_pairwise(f"pairwise_quality:both_orders={str(both_orders).lower()}")
        else:
            self.metric = pairwise_metric("best_of", criteria, register=False)(both_orders=both_orders)

    @classmethod
    def run(cls, retriever: Any, model: Any = None, **kwargs: Any) -> list[BestOfMetric]:
        """Run the tournament over the datasets the retriever loads; one BestOfMetric."""
        return cls(retriever, model, **kwargs).process()

    # -- the pieces ----------------------------------------------------------------------------
    def datasets(self) -> list[Dataset]:
        return load_datasets(self.retriever, self.retriever_kwargs, "BestOf")

    def judge(self) -> Any:
        return judge_of(self.model, self.use_structured_output, self.bos_json_clause, self.eos_json_clause)

    @staticmethod
    def answers(datasets: list[Dataset]) -> dict[str, dict[str, Trace]]:
        """assistant id -> qa_id -> a one-turn trace of its answer (the first answer to a qa_id counts)."""
        out: dict[str, dict[str, Trace]] = {}
        for d in datasets:
            mine = out.setdefault(d.assistant_id, {})
            for b in d.conversation:
                if b.qa_id not in mine:
                    mine[b.qa_id] = Trace(id=b.qa_id, turns=[Turn(input=b.query, output=b.assistant,
                                                                   expected=TurnExpected(output=b.ground_truth_assistant))])
        return out

    def process(self) -> list[BestOfMetric]:
        answers = self.answers(self.datasets())
        if len(answers) < 2:
            raise ConfigError(f"BestOf: needs at least 2 assistants, got {len(answers)} ({', '.join(answers) or 'none'})")
        judge = self.judge()
        contestants = sorted(answers)
        contests: list[BestOfContest] = []
        rnd = 1
        while len(contestants) > 1:
            pairs = [(contestants[i], contestants[i + 1]) for i in range(0, len(contestants) - 1, 2)]
            bye = [contestants[-1]] if len(contestants) % 2 else []
            decided = self._round(judge, answers, pairs, rnd)
            contests += decided
            winners: list[str] = []
            for c in decided:
                winners += [c.left_id, c.right_id] if c.winner_id == "tie" else [c.winner_id]
            winners += bye
            if len(winners) == len(contestants):  # every contest tied: no round would change anything
                contestants = winners
                break
            contestants, rnd = winners, rnd + 1
        winner = contestants[0] if len(contestants) == 1 else "tie"
        metric = BestOfMetric(session_id="bestof", assistant_id=winner, qa_id="bestof_tournament",
                              bestof_winner_id=winner, bestof_contests=contests)
        if self.verbose:
            _display.sessions_table("BestOf", [{"round": c.round, "left": c.left_id, "right": c.right_id,
                                                "winner": c.winner_id, "verdict": c.verdict} for c in contests],
                                    ["round", "left", "right", "winner", "verdict"])
        return [metric]

    def _round(self, judge: Any, answers: dict[str, dict[str, Trace]], pairs: list[tuple[str, str]],
               rnd: int) -> list[BestOfContest]:
        jobs = [(left, right, sorted(answers[left].keys() & answers[right].keys())) for left, right in pairs]

        async def all_contests() -> Any:
            async def one(left: str, right: str, qa: str) -> MetricResult:
                return await self.metric.judge_pair(judge, answers[left][qa], answers[right][qa])
            yield await asyncio.gather(*(one(left, right, qa) for left, right, qas in jobs for qa in qas))

        flat = list(_drive(all_contests))[0]
        out, k = [], 0
        for left, right, qas in jobs:
            results = flat[k:k + len(qas)]
            k += len(qas)
            out.append(_contest(rnd, left, right, qas, results))
        return out


def _contest(rnd: int, left: str, right: str, qas: list[str], results: list[MetricResult]) -> BestOfContest:
    judged = [(qa, r) for qa, r in zip(qas, results) if r.score is not None]
    if not judged:
        why = results[0].reason if results else "they answered no qa_id in common"
        raise BestOfJudgeError(f"BestOf: the contest {left} vs {right} (round {rnd}) could not be decided: {why}")
    right_rate = sum(r.score for _, r in judged) / len(judged)  # type: ignore[misc]
    winner = right if right_rate > 0.5 else left if right_rate < 0.5 else "tie"
    wins_r = sum(r.score == 1.0 for _, r in judged)
    ties = sum(r.score == 0.5 for _, r in judged)
    flips = sum(r.details.get("position_consistent") is False for _, r in judged)
    share = right_rate if winner == right else 1 - right_rate if winner == left else 0.5
    verdict = (f"{winner} wins" if winner != "tie" else "tie") + \
        f": {right} won {wins_r}, tied {ties}, lost {len(judged) - wins_r - ties} of {len(judged)} questions against {left}"
    reasoning = {"questions": len(qas), "judged": len(judged), "right_win_rate": right_rate,
                 "position_inconsistent": flips,
                 "per_question": {qa: {"winner": {"a": left, "b": right}.get(r.details.get("winner"), "tie"),
                                       "reason": r.reason} for qa, r in judged}}
    return BestOfContest(round=rnd, left_id=left, right_id=right, winner_id=winner, confidence=share,
                         verdict=verdict, reasoning=reasoning)
