"""RAGAS and DeepEval metrics (UAEF's integrations), scored through the judge configured in assay.

Registered as ``ragas_*`` and ``deepeval_*`` whether or not the libraries are installed, so
``assay metrics`` lists them; they are opt-in (never in the default set). Selected without their
extra, each trace gets a ``not_evaluated`` result whose reason names the pip command
(``pip install 'assay[ragas]'`` / ``'assay[deepeval]'``). Nothing here imports either library
until a metric scores.

Each library metric scores the trace's last answered exchange (input, reply, that turn's context,
its expected output, the trace's tool calls), as UAEF's connectors do, using the library's own
prompts with assay's judge standing in for the library's model (``_deepeval.py``,
``_ragas.py``). A judge failure is a ``judge_error`` result with the raw reply; a missing input
(no context for faithfulness, no reference for recall) is ``missing_data`` without a judge call.
``deepeval_hallucination`` is reported so that 1.0 means no hallucination, like assay's
``hallucination_score``: DeepEval 4 scores it that way; for earlier versions, which report the
hallucination rate, the score is 1 - that rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ...errors import ConfigError
from ...model import MetricResult
from .._base import MetricContext, metric
from . import _deepeval, _ragas


@dataclass(frozen=True, kw_only=True)
class RagasMetric:
    """Base of the ``ragas_*`` metrics: the RAGAS metric ``library_metric`` on the last exchange."""

    threshold: float = 0.7
    library_metric: ClassVar[str] = ""
    needs: ClassVar[tuple[str, ...]] = ()

    async def score(self, ctx: MetricContext) -> MetricResult:
        return await _ragas.score(self, ctx)


@dataclass(frozen=True, kw_only=True)
class DeepEvalMetric:
    """Base of the ``deepeval_*`` metrics: the DeepEval metric ``library_metric`` on the last exchange."""

    threshold: float = 0.7
    library_metric: ClassVar[str] = ""
    needs: ClassVar[tuple[str, ...]] = ()

    async def score(self, ctx: MetricContext) -> MetricResult:
        return await _deepeval.score(self, ctx)


RAGAS: dict[str, tuple[str, str, tuple[str, ...], str]] = {
    # name: (dimension, requires, needs, summary)
    "faithfulness": ("response_quality", ("judge", "context"), ("output", "context"),
                     "RAGAS: share of the reply's claims supported by the retrieved context"),
    "context_precision": ("response_quality", ("judge", "context", "expected_output"), ("context", "reference"),
                          "RAGAS: are the relevant retrieved chunks ranked first (against the reference)"),
    "context_recall": ("response_quality", ("judge", "context", "expected_output"), ("context", "reference"),
                       "RAGAS: share of the reference's claims found in the retrieved context"),
    "answer_precision": ("response_quality", ("judge", "expected_output"), ("output", "reference"),
                         "RAGAS factual correctness (precision): share of the reply's claims the reference supports"),
    "answer_recall": ("response_quality", ("judge", "expected_output"), ("output", "reference"),
                      "RAGAS factual correctness (recall): share of the reference's claims the reply covers"),
    "answer_correctness": ("response_quality", ("judge", "expected_output"), ("output", "reference"),
                           "RAGAS answer correctness, factual part (statement F1 against the reference)"),
    "tool_call_accuracy": ("tool_calling", ("expected_tools",), ("expected_tools",),
                           "RAGAS: tool names and arguments against the expected calls (no judge)"),
}

DEEPEVAL: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...], str]] = {
    # name: (DeepEval class, dimension, requires, needs, summary)
    "contextual_precision": ("ContextualPrecisionMetric", "response_quality", ("judge", "context", "expected_output"),
                             ("output", "context", "reference"),
                             "DeepEval: relevant retrieved chunks ranked above irrelevant ones"),
    "contextual_recall": ("ContextualRecallMetric", "response_quality", ("judge", "context", "expected_output"),
                          ("output", "context", "reference"),
                          "DeepEval: share of the expected output attributable to the retrieved context"),
    "contextual_relevancy": ("ContextualRelevancyMetric", "response_quality", ("judge", "context"),
                             ("output", "context"), "DeepEval: share of retrieved statements relevant to the input"),
    "hallucination": ("HallucinationMetric", "response_quality", ("judge", "context"), ("output", "context"),
                      "DeepEval: share of contexts the reply agrees with (1.0 = no hallucination)"),
    "faithfulness": ("FaithfulnessMetric", "response_quality", ("judge", "context"), ("output", "context"),
                     "DeepEval: share of the reply's claims consistent with the retrieved context"),
    "answer_relevancy": ("AnswerRelevancyMetric", "response_quality", ("judge",), ("output",),
                         "DeepEval: share of the reply's statements relevant to the input"),
    "tool_correctness": ("ToolCorrectnessMetric", "tool_calling", ("expected_tools",), ("expected_tools",),
                         "DeepEval: expected tools called (names; arguments with check_arguments=True)"),
}


def _declare(base: type, name: str, dimension: str, requires: tuple[str, ...], summary: str, body: dict[str, Any],
             judge_calls: str) -> type:
    cls = dataclass(frozen=True, kw_only=True)(type(name.title().replace("_", ""), (base,),
                                                     {**body, "__doc__": summary, "__module__": __name__}))
    return metric(name, dimension=dimension, requires=requires, summary=summary, default=False,
                  judge_calls=judge_calls)(cls)


for _kind, (_dim, _req, _needs, _summary) in RAGAS.items():
    if _kind != "tool_call_accuracy":  # declared below, with its own parameter
        _declare(RagasMetric, f"ragas_{_kind}", _dim, _req, _summary, {"library_metric": _kind, "needs": _needs},
                 "RAGAS-defined (2-4)")


@metric("ragas_tool_call_accuracy", dimension="tool_calling", requires=("expected_tools",), default=False,
        summary=RAGAS["tool_call_accuracy"][3])
@dataclass(frozen=True, kw_only=True)
class RagasToolCallAccuracy(RagasMetric):
    """RAGAS ToolCallAccuracy: tool names and arguments against the expected calls (no judge)."""

    library_metric: ClassVar[str] = "tool_call_accuracy"
    needs: ClassVar[tuple[str, ...]] = ("expected_tools",)
    strict_order: bool = True


for _kind, (_cls, _dim, _requires, _needs, _summary) in DEEPEVAL.items():
    if _kind != "tool_correctness":  # declared below, with its own parameters
        _declare(DeepEvalMetric, f"deepeval_{_kind}", _dim, _requires, _summary,
                 {"library_metric": _cls, "needs": _needs}, "DeepEval-defined (2-3)")


@metric("deepeval_tool_correctness", dimension="tool_calling", requires=("expected_tools",), default=False,
        summary=DEEPEVAL["tool_correctness"][4])
@dataclass(frozen=True, kw_only=True)
class DeepEvalToolCorrectness(DeepEvalMetric):
    """DeepEval ToolCorrectnessMetric: were the expected tools called (deterministic, no judge)."""

    library_metric: ClassVar[str] = "ToolCorrectnessMetric"
    needs: ClassVar[tuple[str, ...]] = ("expected_tools",)
    check_arguments: bool = False
    """Also compare arguments (DeepEval's ToolCallParams.INPUT_PARAMETERS)."""
    consider_order: bool = False


@metric("deepeval_geval", dimension="custom", requires=("judge",), default=False, judge_calls="DeepEval-defined (2)",
        summary="DeepEval G-Eval: your criteria (or evaluation steps), judged with DeepEval's prompts")
@dataclass(frozen=True, kw_only=True)
class DeepEvalGEval(DeepEvalMetric):
    """DeepEval G-Eval on the last exchange with your ``criteria`` or ``evaluation_steps``.

    assay's own ``criteria_metric`` does the same with fenced data and checked quotes.
    """

    library_metric: ClassVar[str] = "GEval"
    needs: ClassVar[tuple[str, ...]] = ("output",)
    criteria: str = ""
    evaluation_steps: tuple[str, ...] = ()
    criteria_name: str = "GEval"

    def __post_init__(self) -> None:
        if not self.criteria.strip() and not self.evaluation_steps:
            raise ConfigError("metric 'deepeval_geval' needs criteria=... or evaluation_steps=[...]")
        object.__setattr__(self, "evaluation_steps", tuple(self.evaluation_steps))


__all__ = ["DEEPEVAL", "RAGAS", "DeepEvalGEval", "DeepEvalMetric", "DeepEvalToolCorrectness", "RagasMetric",
           "RagasToolCallAccuracy"]
