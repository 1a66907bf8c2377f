"""Fair Forge's Agentic metric: per-interaction answer correctness, pass@k, tool correctness.

An interaction is a turn with an expected output (Fair Forge's ``ground_truth_assistant``); when no
turn has one, the trace's expected output against the final answer is the only interaction. Each
answer gets a correctness in [0, 1] and is correct iff it reaches ``answer_threshold`` (0.7):

- with a judge: one call per interaction (run concurrently) grading the answer against the
  reference;
- without a judge: the reference matchers of ``metrics/reference.py``: 1.0 on a normalised exact
  match, else the share of the reference's numbers found in the answer when it has numbers, else
  SQuAD token F1. ``details["correctness_method"]`` says which.

score = correct interactions / interactions; with the default ``threshold`` of 1.0 a trace passes
iff it is fully correct (every interaction correct), as in Fair Forge. pass@k and pass^k come from
n = interactions, c = correct ones under the chosen statistical mode (``assay.stats``). Tool
correctness per interaction uses ``agentic_tools.tool_correctness_score`` (None for an
interaction that expected no tools) and, unless ``require_tools``, does not decide correctness.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pydantic

from ..errors import ConfigError
from ..model import MetricResult, Trace, Warning
from ..stats import BayesianMode, FrequentistMode, StatisticalMode, quality_assessment
from ._base import MetricContext, metric
from ._judged import JudgeFailed, Session
from ._sections import Section
from .agentic_tools import check_weights, tool_correctness_score
from .reference import exact_match, numeric_score, token_f1

MODES = ("frequentist", "bayesian")


class CorrectnessVerdict(pydantic.BaseModel):
    evidence: list[str] = pydantic.Field(description="Short verbatim quotes from the answer that agree or "
                                         "disagree with the reference.")
    reasoning: str
    correctness: float = pydantic.Field(ge=0.0, le=1.0, description="0.0 (wrong) to 1.0 (fully correct).")


def reference_correctness(expected: str, actual: str) -> tuple[float, str]:
    """Correctness without a judge, and the matcher that produced it."""
    if exact_match(expected, actual):
        return 1.0, "exact"
    numeric = numeric_score(expected, actual)
    if numeric is not None:
        return numeric, "numeric"
    return token_f1(expected, actual), "token_f1"


def interactions(trace: Trace) -> list[int]:
    """Indices of the turns that are interactions (see the module doc); [] when there is no reference."""
    idx = [i for i, t in enumerate(trace.turns) if t.expected is not None and t.expected.output is not None]
    if idx:
        return idx
    if trace.expected is not None and trace.expected.output is not None:
        answered = [i for i, t in enumerate(trace.turns) if t.output is not None]
        return [answered[-1] if answered else len(trace.turns) - 1] if trace.turns else []
    return []


def _reference(trace: Trace, i: int) -> str:
    t = trace.turns[i]
    if t.expected is not None and t.expected.output is not None:
        return t.expected.output
    assert trace.expected is not None and trace.expected.output is not None
    return trace.expected.output


@metric("agentic_correctness", dimension="response_quality", requires=("expected_output",), default=False,
        judge_calls="1 per interaction (0 without a judge)",
        summary="share of interactions whose answer correctness >= 0.7 (judge, else reference matchers); "
                "passed iff all are; pass@k, pass^k, tool correctness in details (Fair Forge)")
@dataclass(frozen=True, kw_only=True)
class AgenticCorrectness:
    """Fair Forge's Agentic metric: is every interaction of the conversation answered correctly?

    Opt-in: select it by name (a Fair Forge evaluation is a deliberate choice, and without a judge
    its string matchers would fail free-text answers in a default run).
    """

    threshold: float = 1.0
    """On the share of correct interactions: 1.0 = pass iff fully correct (as in Fair Forge)."""
    answer_threshold: float = 0.7
    """An interaction is correct iff its correctness >= this (Fair Forge's ``threshold``)."""
    k: int = 3
    statistical_mode: str | Any = "frequentist"
    """'frequentist', 'bayesian', or an ``assay.stats`` StatisticalMode instance."""
    ci_level: float = 0.95
    tool_threshold: float = 1.0
    tool_weights: dict[str, float] | None = None
    require_tools: bool = False
    """Also require tool correctness (where tools were expected) for an interaction to be correct."""

    def __post_init__(self) -> None:
        name = "metric 'agentic_correctness'"
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ConfigError(f"{name}: k must be an integer >= 1, got {self.k!r}")
        for field in ("answer_threshold", "tool_threshold"):
            if not 0.0 <= getattr(self, field) <= 1.0:
                raise ConfigError(f"{name}: {field} must be in [0, 1], got {getattr(self, field)!r}")
        if isinstance(self.statistical_mode, str) and self.statistical_mode not in MODES:
            raise ConfigError.unknown(f"statistical mode of {name}:", self.statistical_mode, MODES)
        if not isinstance(self.statistical_mode, (str, StatisticalMode)):
            raise ConfigError(f"{name}: statistical_mode must be one of {MODES} or a StatisticalMode, "
                              f"got {self.statistical_mode!r}")
        check_weights(self.tool_weights)

    def mode(self) -> Any:
        if not isinstance(self.statistical_mode, str):
            return self.statistical_mode
        return FrequentistMode() if self.statistical_mode == "frequentist" else BayesianMode(ci_level=self.ci_level)

    async def score(self, ctx: MetricContext) -> MetricResult:
        trace = ctx.trace
        idx = interactions(trace)
        if not idx:
            return ctx.null(Warning.MISSING_DATA, "no expected output (ground truth) for any interaction")
        answers = [trace.turns[i].output for i in idx]
        if all(a is None for a in answers):
            return ctx.null(Warning.MISSING_DATA, "no agent answer in any interaction")
        if ctx.judge is None:
            s = None
            graded = [self._by_reference(trace, i) for i in idx]
        else:
            s = Session.open(self, ctx)
            got = await asyncio.gather(*(self._by_judge(s, trace, i) for i in idx), return_exceptions=True)
            for g in got:  # an error outranks a skip; any other exception is the metric's own
                if isinstance(g, BaseException) and not isinstance(g, JudgeFailed):
                    raise g
            failed = [g.result for g in got if isinstance(g, JudgeFailed)]
            if failed:
                worst = next((f for f in failed if f.warning is Warning.JUDGE_ERROR), failed[0])
                worst.details["interactions_failed"] = len(failed)
                return s.finish(worst)
            graded = got  # type: ignore[assignment]
        return self._result(ctx, s, idx, graded)  # type: ignore[arg-type]

    def _by_reference(self, trace: Trace, i: int) -> dict[str, Any]:
        answer = trace.turns[i].output
        if answer is None:
            return {"score": 0.0, "method": "no answer", "reason": "no answer", "evidence": []}
        score, how = reference_correctness(_reference(trace, i), answer)
        return {"score": score, "method": how, "reason": f"{how} {score:.2f}", "evidence": []}

    async def _by_judge(self, s: Session, trace: Trace, i: int) -> dict[str, Any]:
        t = trace.turns[i]
        if t.output is None:
            return {"score": 0.0, "method": "no answer", "reason": "no answer", "evidence": []}
        sections = [Section("EXPECTED_ANSWER", _reference(trace, i), "The reference answer:", source=False),
                    Section("AGENT_ANSWER", t.output, "The agent's answer:")]
        if t.input is not None:
            sections.insert(0, Section("USER_MESSAGE", t.input, "The user's message:"))
        v = await s.ask(f"turn_{i + 1}", CorrectnessVerdict, sections, prompt="main")
        evidence, _ = s.verify(v.evidence, texts=[t.output])
        return {"score": v.correctness, "method": "judge", "reason": v.reasoning, "evidence": evidence}

    def _tools(self, trace: Trace, i: int, single: bool) -> dict[str, Any] | None:
        t = trace.turns[i]
        default_order = trace.expected.tool_order if trace.expected is not None else "strict"
        if t.expected is not None and t.expected.tool_calls is not None:
            expected, order, used = t.expected.tool_calls, t.expected.tool_order or default_order, t.tool_calls
        elif single and trace.expected is not None and trace.expected.tool_calls is not None:
            expected, order, used = trace.expected.tool_calls, default_order, trace.all_tool_calls()
        else:
            return None
        return tool_correctness_score(used, expected, order == "strict", t.uses_tool_results, self.tool_weights,
                                      self.tool_threshold)

    def _result(self, ctx: MetricContext, s: Session | None, idx: list[int], graded: list[dict[str, Any]]) -> MetricResult:
        trace = ctx.trace
        scores = [min(1.0, max(0.0, float(g["score"]))) for g in graded]
        tools = [self._tools(trace, i, len(idx) == 1) for i in idx]
        correct = [sc >= self.answer_threshold - 1e-12 and (not self.require_tools or tc is None or tc["is_correct"])
                   for sc, tc in zip(scores, tools)]
        n, c = len(idx), sum(correct)
        est = self.mode().estimate(n, c, self.k)
        method = "judge" if s is not None else "reference"
        details: dict[str, Any] = {
            "total_interactions": n, "correct_interactions": c, "is_fully_correct": c == n,
            "threshold": self.answer_threshold, "correctness_scores": scores,
            "correct_indices": [j for j, ok in enumerate(correct) if ok],
            "interaction_turns": [i + 1 for i in idx],
            "tool_correctness_scores": tools, "k": self.k,
            "pass_at_k": est.pass_at_k, "pass_at_k_ci_low": est.pass_at_k_ci_low,
            "pass_at_k_ci_high": est.pass_at_k_ci_high, "pass_pow_k": est.pass_pow_k,
            "pass_pow_k_ci_low": est.pass_pow_k_ci_low, "pass_pow_k_ci_high": est.pass_pow_k_ci_high,
            "statistical_mode": est.mode, "assessment": quality_assessment(est.pass_at_k, est.pass_pow_k),
            "correctness_method": method,
        }
        if method == "reference":
            details["reference_matchers"] = [g["method"] for g in graded]
        no_answer = [i + 1 for i, g in zip(idx, graded) if g["method"] == "no answer"]
        if no_answer:
            details["turns_without_answer"] = no_answer
        how = "judge" if s is not None else "no judge: reference matchers (exact / numeric / token F1)"
        reason = (f"{c} of {n} interactions correct (correctness >= {self.answer_threshold:g}, {how}); "
                  f"pass@{self.k} {est.pass_at_k:.3f}, pass^{self.k} {est.pass_pow_k:.3f}")
        wrong = [f"turn {i + 1}: {g['reason']}" for i, g, ok in zip(idx, graded, correct) if not ok]
        if wrong:
            reason += "; " + "; ".join(wrong)
        evidence = [e for g in graded for e in g["evidence"]]
        if s is None:
            return ctx.result(c / n, reason, evidence, details)
        return s.result(c / n, reason, evidence, details)
