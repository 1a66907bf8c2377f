"""RAGAS metrics scored through assay's judge (the ``ragas`` extra; imported only when used).

assay's judge stands in for RAGAS's LLM: an ``InstructorBaseRagasLLM`` whose ``agenerate(prompt,
response_model)`` sends RAGAS's own prompt to the judge with RAGAS's own response model. The
metrics are RAGAS's "collections" metrics (ragas >= 0.3); ``ragas_answer_correctness`` scores
the factual part only (weights [1, 0]): assay has no embedding model to offer for the semantic
part. Importing ragas (which this module does only when a ragas metric scores) starts ragas's
analytics thread and exit hook whatever the environment says; RAGAS_DO_NOT_TRACK=true stops it
sending anything (offline it cannot send either).
"""

from __future__ import annotations

import functools
import math
from typing import Any

from ...model import MetricResult
from .._base import MetricContext
from ._bridge import Exchange, Recorder, start, version


@functools.cache
def llm_class() -> type:
    """The InstructorBaseRagasLLM subclass that forwards RAGAS's calls to an assay judge."""
    from ragas.llms.base import InstructorBaseRagasLLM

    class AssayJudgeLLM(InstructorBaseRagasLLM):  # type: ignore[misc, valid-type]
        def __init__(self, recorder: Recorder) -> None:
            self.recorder = recorder

        async def agenerate(self, prompt: str, response_model: Any) -> Any:
            return await self.recorder.ask(prompt, response_model)

        def generate(self, prompt: str, response_model: Any) -> Any:
            raise NotImplementedError("assay runs RAGAS metrics with ascore")

    return AssayJudgeLLM


def _tool_calls(calls: Any) -> list[Any]:
    from ragas.messages import ToolCall

    return [ToolCall(name=c.name, args=dict(getattr(c, "arguments", None) or {})) for c in calls]


async def _run(kind: str, m: Any, llm: Any, ex: Exchange) -> Any:
    import ragas.metrics.collections as rc

    if kind == "faithfulness":
        return await rc.Faithfulness(llm=llm).ascore(user_input=ex.input, response=ex.output,
                                                     retrieved_contexts=ex.contexts)
    if kind == "context_precision":
        return await rc.ContextPrecisionWithReference(llm=llm).ascore(
            user_input=ex.input, reference=ex.reference, retrieved_contexts=ex.contexts)
    if kind == "context_recall":
        return await rc.ContextRecall(llm=llm).ascore(user_input=ex.input, retrieved_contexts=ex.contexts,
                                                      reference=ex.reference)
    if kind in ("answer_precision", "answer_recall"):
        mode = kind.split("_")[1]
        return await rc.FactualCorrectness(llm=llm, mode=mode).ascore(response=ex.output, reference=ex.reference)
    if kind == "answer_correctness":
        return await rc.AnswerCorrectness(llm=llm, weights=[1.0, 0.0]).ascore(
            user_input=ex.input, response=ex.output, reference=ex.reference)
    if kind == "tool_call_accuracy":
        from ragas.messages import AIMessage, HumanMessage

        conversation = [HumanMessage(content=ex.input), AIMessage(content=ex.output or "",
                                                                  tool_calls=_tool_calls(ex.tool_calls))]
        return await rc.ToolCallAccuracy(strict_order=m.strict_order).ascore(
            user_input=conversation, reference_tool_calls=_tool_calls(ex.expected_tools or ()))
    raise ValueError(f"unknown RAGAS metric {kind!r}")  # pragma: no cover - the table is fixed


async def score(m: Any, ctx: MetricContext) -> MetricResult:
    """Score one trace with the RAGAS metric named by ``m.library_metric``."""
    started = start(ctx, m, "ragas")
    if isinstance(started, MetricResult):
        return started
    ex, recorder = started
    try:
        llm = llm_class()(recorder) if ctx.judge is not None else None
        out = await _run(m.library_metric, m, llm, ex)
    except Exception as exc:  # noqa: BLE001 - the library's failure is this result's error
        return recorder.failure(ctx, exc)
    value = getattr(out, "value", out)
    details = {"library": "ragas", "library_version": version("ragas"), "library_metric": m.library_metric,
               "library_score": value}
    if not isinstance(value, (int, float)) or math.isnan(value):  # NaN: RAGAS could not score it
        return recorder.finish(ctx.null("invalid_data", f"RAGAS returned no score ({value!r})", details))
    return recorder.finish(ctx.result(min(1.0, max(0.0, float(value))), str(getattr(out, "reason", "") or ""),
                                      details=details))
