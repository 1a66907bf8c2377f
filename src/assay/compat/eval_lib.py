"""eval_lib's conversation-metric API (eval-ai-library 0.8.2) over assay's core.

eval_lib's documentation snippets run with ``from eval_lib import ...`` changed to ``from assay.compat.eval_lib
import ...``::

    metric = FailureRateMetric(model="gpt-4o", threshold=0.7)
    results = asyncio.run(evaluate_conversations([conversation], [metric]))
    (_, [conv]), = results
    conv.metrics_data[0].score, conv.metrics_data[0].evaluation_log["evidence"]

The metrics are the core's ``failure_rate`` and ``goal_achievement_rate`` (see docs/metrics.md);
this module only converts test cases into traces, builds the judge from ``model`` and maps the
core results into eval_lib's shapes. What it returns mirrors ``eval_lib.evaluate_conversations``:
a list with one ``(None, [ConversationalTestCaseResult])`` tuple per conversation, in input
order; each result holds the dialogue, ``success`` (every metric passed) and ``metrics_data``,
one :class:`MetricResult` per metric with ``name``, ``score``, ``threshold``, ``success``,
``evaluation_cost``, ``reason``, ``evaluation_model`` and ``evaluation_log``. The log keeps
eval_lib's keys (``dialogue``, ``number_of_turns``, ``verdict``, ``evidence``, ``final_score``,
``threshold``, ``success``, ``final_reason``; goal achievement adds ``user_goal``,
``user_goal_source``, ``signals``, ``base_weight``, ``negative_signal_penalty``).

Differences from eval_lib, on purpose:

- Conversations are scored concurrently (the judge stack bounds the calls in flight, retries,
  re-asks malformed replies and caches verdicts); eval_lib scores them one after another.
- A judge failure is data, not an aborted run: that metric's result has ``score=None``,
  ``success=False``, the reason, and ``evaluation_log["error"]`` / ``["raw"]`` (eval_lib raises
  on the first malformed reply and loses the whole run). An unknown label is such a failure
  (eval_lib scores it 1.0).
- ``verbose=False`` prints nothing (eval_lib prints every result dict regardless);
  ``verbose=True`` prints one coloured box per result.
- Metric objects hold only their configuration, so one instance can be shared by concurrent runs.
- ``evaluation_cost`` is None when the judge's price is unknown, never a made-up 0.
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pydantic

from ..engine import Evaluation
from ..errors import ConfigError
from ..importers.eval_lib import test_case_to_trace
from ..judge import make_judge
from ..model import MetricResult as CoreResult
from ..model import Trace, TraceResult, Warning
from . import _display


class EvalTestCase(pydantic.BaseModel):
    """One exchange: the user's input and the agent's output, with optional ground truth."""

    input: str
    actual_output: str
    expected_output: str | None = None
    retrieval_context: list[str] | None = None
    tools_called: list[str] | None = None
    """Tool names only: eval_lib records no arguments."""
    expected_tools: list[str] | None = None
    reasoning: str | None = None
    name: str | None = None


class ConversationalEvalTestCase(pydantic.BaseModel):
    """A whole dialogue: one :class:`EvalTestCase` per turn."""

    turns: list[EvalTestCase]
    chatbot_role: str | None = None
    name: str | None = None


class CustomLLMClient(abc.ABC):
    """Base class for a judge model of your own (eval_lib's contract).

    ``chat_complete`` receives OpenAI-style messages and returns the reply text and its cost in
    USD (None when unknown). assay wraps the client in its judge stack (retries, re-asks,
    concurrency limit, cache), so the client only makes one call.
    """

    @abc.abstractmethod
    async def chat_complete(self, messages: list[dict[str, str]], temperature: float) -> tuple[str, float | None]:
        """One chat completion: (text, cost_usd or None)."""

    @abc.abstractmethod
    def get_model_name(self) -> str:
        """The model's name, for results and the judge cache."""


@dataclass(frozen=True, slots=True)
class MetricResult:
    """One metric on one conversation, in eval_lib's shape."""

    name: str
    score: float | None
    """None when the judge failed (see ``evaluation_log['error']``): never a silent 0 or 1."""
    threshold: float
    success: bool
    evaluation_cost: float | None
    reason: str
    evaluation_model: str
    evaluation_log: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConversationalTestCaseResult:
    """Every metric on one conversation; ``success`` is True iff every metric passed."""

    dialogue: list[dict[str, str]]
    success: bool
    metrics_data: list[MetricResult]
    name: str | None = None


def _model_name(model: Any) -> str:
    if isinstance(model, str):
        return model
    getter = getattr(model, "get_model_name", None)
    if callable(getter):
        return str(getter())
    return str(getattr(model, "model", None) or type(model).__name__)


def _dialogue_text(trace: Trace) -> str:
    return "\n".join(f"{i + 1}. User: {t.input}\n   Assistant: {t.output}"
                     for i, t in enumerate(trace.turns or ()))


@dataclass(frozen=True)
class _ConversationalMetric:
    """Configuration of one eval_lib metric; scoring is the core metric's, through the engine."""

    name: ClassVar[str]
    core_name: ClassVar[str]
    model: Any
    """A model string ("gpt-4o", "anthropic:...", "google:...", "ollama:llama3"), a
    :class:`CustomLLMClient`, a LangChain chat model or an ``assay.judge`` Judge."""
    threshold: float = 0.7
    verbose: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)) \
                or not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"{type(self).__name__}: threshold must be a number in [0, 1], got {self.threshold!r}")
        if self.model is None or (isinstance(self.model, str) and not self.model.strip()):
            raise ConfigError(f"{type(self).__name__}: model is required (e.g. 'gpt-4o' or a CustomLLMClient)")

    def core_params(self) -> dict[str, Any]:
        return {"name": self.core_name, "threshold": float(self.threshold)}

    def judge_key(self) -> Any:
        return self.model if isinstance(self.model, str) else id(self.model)

    def specific_log(self, r: CoreResult) -> dict[str, Any]:  # pragma: no cover - overridden
        return {}

    def to_result(self, r: CoreResult, trace: Trace) -> MetricResult:
        """The core result in eval_lib's shape (score None + error in the log when it failed)."""
        success = r.score is not None and r.score >= self.threshold
        log: dict[str, Any] = {"dialogue": _dialogue_text(trace), "number_of_turns": len(trace.turns or ())}
        if r.score is None:
            log.update(error=r.reason, warning=str(r.warning) if r.warning else None)
            if "raw" in r.details:
                log["raw"] = r.details["raw"]
        else:
            log.update(self.specific_log(r))
        log.update(final_score=r.score, threshold=self.threshold, success=success, final_reason=r.reason)
        if r.details.get("unverified_evidence"):
            log["unverified_evidence"] = r.details["unverified_evidence"]
        log["judge_calls"] = r.judge_calls
        if r.details.get("judge_model"):
            log["judge_model"] = r.details["judge_model"]
        return MetricResult(self.name, r.score, self.threshold, success, r.cost_usd, r.reason,
                            _model_name(self.model), log)

    def show(self, result: MetricResult, subject: str | None = None) -> None:
        if self.verbose:
            _display.result_box(result.name, result.score, result.success, result.reason, result.evaluation_cost,
                                result.evaluation_log, subject=subject)

    async def evaluate(self, test_case: ConversationalEvalTestCase | EvalTestCase) -> dict[str, Any]:
        """Score one conversation (eval_lib's per-metric API): a dict with ``name``, ``score``,
        ``success``, ``reason``, ``evaluation_cost`` and ``evaluation_log``."""
        trace = _to_trace(test_case, 0)
        judge = make_judge(self.model)
        (core,) = await _score(self, judge, [trace])
        result = self.to_result(core, trace)
        self.show(result, trace.id)
        return {"name": result.name, "score": result.score, "success": result.success, "reason": result.reason,
                "evaluation_cost": result.evaluation_cost, "evaluation_log": result.evaluation_log}


@dataclass(frozen=True)
class FailureRateMetric(_ConversationalMetric):
    """How the agent handles not knowing: hallucination 0.0, stall 0.4, mixed 0.6, honest_fallback /
    alternative_proposed / not_applicable 1.0; any verified fabrication forces hallucination. One
    judge call per conversation (core metric ``failure_rate``)."""

    name: ClassVar[str] = "failureRateMetric"
    core_name: ClassVar[str] = "failure_rate"

    def specific_log(self, r: CoreResult) -> dict[str, Any]:
        d = r.details
        log: dict[str, Any] = {
            "verdict": {"verdict": d.get("verdict"), "evidence": list(r.evidence), "reason": r.reason},
            "evidence": list(r.evidence),
            "findings": d.get("findings", []),
        }
        if d.get("priority_rule_applied"):
            log.update(priority_rule_applied=True, judge_verdict=d.get("judge_verdict"))
        return log


@dataclass(frozen=True)
class GoalAchievementRateMetric(_ConversationalMetric):
    """Did the user get what they came for: fully 1.0 / mostly 0.9 / partial 0.7 / minor 0.3 / none
    0.0, minus 0.1 per negative signal found in the dialogue, floor 0. Three judge calls with
    ``user_goal``, four without (core metric ``goal_achievement_rate``)."""

    name: ClassVar[str] = "goalAchievementRateMetric"
    core_name: ClassVar[str] = "goal_achievement_rate"
    user_goal: str | None = None

    def core_params(self) -> dict[str, Any]:
        params = super().core_params()
        if self.user_goal:
            params["user_goal"] = self.user_goal
        return params

    def specific_log(self, r: CoreResult) -> dict[str, Any]:
        d = r.details
        source = {"param": "user_provided", "trace": "user_provided", "inferred": "llm_inferred"}
        log: dict[str, Any] = {
            "user_goal": d.get("goal"),
            "user_goal_source": source.get(d.get("goal_source", ""), d.get("goal_source")),
            "signals": {k: d.get(k, []) for k in ("positive_signals", "negative_signals", "unmet_requests")},
            "verdict": {"verdict": d.get("verdict"), "reason": r.reason},
            "evidence": list(r.evidence),
            "base_weight": d.get("verdict_weight"),
            "negative_signal_penalty": d.get("penalty"),
        }
        if "summary" in d:
            log["summary"] = d["summary"]
        if "summary_error" in d:
            log["summary_error"] = d["summary_error"]
        return log


def _to_trace(case: Any, index: int) -> Trace:
    if isinstance(case, Trace):
        return case
    if isinstance(case, pydantic.BaseModel):
        data = case.model_dump()
    elif isinstance(case, dict):
        data = case
    else:
        raise ConfigError(f"conversation {index}: expected a ConversationalEvalTestCase, got {type(case).__name__}")
    return test_case_to_trace(data, default_id=f"conversation-{index + 1}")


async def _score(metric: _ConversationalMetric, judge: Any, traces: Sequence[Trace]) -> list[CoreResult]:
    """The core metric on every trace, concurrently (the engine's window, the judge's limits)."""
    evaluation = Evaluation([metric.core_params()], judge=judge)
    out: list[CoreResult] = []
    async for item in evaluation.astream(list(traces)):
        assert isinstance(item, TraceResult)  # Trace objects never produce input issues
        out.append(item.metrics.get(metric.core_name) or CoreResult(
            metric.core_name, None, warning=Warning.NOT_EVALUATED, reason="not scored"))
    return out


async def evaluate_conversations(conversations: Iterable[ConversationalEvalTestCase],
                                 metrics: Iterable[_ConversationalMetric],
                                 ) -> list[tuple[None, list[ConversationalTestCaseResult]]]:
    """Score every conversation with every metric, concurrently; results in input order.

    Returns ``[(None, [ConversationalTestCaseResult]), ...]``, one tuple per conversation, as
    eval_lib does. Metrics that share a model (the same string or the same client object) share
    one judge: one concurrency limit, one cache.
    """
    metric_list = list(metrics)
    for m in metric_list:
        if not isinstance(m, _ConversationalMetric):
            raise ConfigError(f"not an eval_lib conversation metric: {m!r} "
                              "(use FailureRateMetric or GoalAchievementRateMetric)")
    traces = [_to_trace(c, i) for i, c in enumerate(conversations)]
    if not traces or not metric_list:
        return [(None, [ConversationalTestCaseResult(_dialogue(t), True, [], t.id)]) for t in traces]
    judges: dict[Any, Any] = {}
    for m in metric_list:
        if m.judge_key() not in judges:
            judges[m.judge_key()] = make_judge(m.model)
    per_metric = await asyncio.gather(*(_score(m, judges[m.judge_key()], traces) for m in metric_list))
    results = []
    for i, trace in enumerate(traces):
        rows = [m.to_result(per_metric[j][i], trace) for j, m in enumerate(metric_list)]
        for m, row in zip(metric_list, rows):
            m.show(row, trace.id)
        results.append((None, [ConversationalTestCaseResult(_dialogue(trace), all(r.success for r in rows), rows,
                                                           trace.id)]))
    return results


def _dialogue(trace: Trace) -> list[dict[str, str]]:
    out = []
    for t in trace.turns or ():
        out.append({"role": "user", "content": t.input or ""})
        out.append({"role": "assistant", "content": t.output or ""})
    return out


def as_dict(result: Any) -> dict[str, Any]:
    """A result (or anything this module returns) as plain data, like eval_lib's ``asdict``."""
    return dataclasses.asdict(result)


__all__ = [
    "ConversationalEvalTestCase", "ConversationalTestCaseResult", "CustomLLMClient", "EvalTestCase",
    "FailureRateMetric", "GoalAchievementRateMetric", "MetricResult", "as_dict", "evaluate_conversations",
]
