"""DeepEval metrics scored through assay's judge (the ``deepeval`` extra; imported only when used).

assay's judge stands in for DeepEval's model: a ``DeepEvalBaseLLM`` whose ``a_generate(prompt,
schema)`` sends DeepEval's own prompt to the judge with DeepEval's own verdict schema, so
retries, re-asks, concurrency limits, the cache and the accounting are assay's. DeepEval's prompts
are used as they are (no fencing, no quote checks).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

from ...model import MetricResult
from .._base import MetricContext
from ._bridge import Exchange, Recorder, start, version


@functools.cache
def llm_class() -> type:
    """The DeepEvalBaseLLM subclass that forwards DeepEval's calls to an assay judge."""
    from deepeval.models import DeepEvalBaseLLM

    class AssayJudgeLLM(DeepEvalBaseLLM):  # type: ignore[misc, valid-type]
        def __init__(self, recorder: Recorder) -> None:  # DeepEvalBaseLLM's __init__ would parse a name
            self.recorder = recorder
            self.name = str(getattr(recorder.judge, "model", "assay-judge"))
            self.model = self

        def load_model(self, *args: Any, **kwargs: Any) -> Any:
            return self

        def get_model_name(self, *args: Any, **kwargs: Any) -> str:
            return self.name

        async def a_generate(self, prompt: Any, schema: Any = None, **kwargs: Any) -> Any:
            return await self.recorder.ask(prompt, schema)

        def generate(self, prompt: Any, schema: Any = None, **kwargs: Any) -> Any:
            raise NotImplementedError("assay runs DeepEval metrics with a_measure (async_mode=True)")

    return AssayJudgeLLM


def _tool(call: Any, tool_cls: type) -> Any:
    args = getattr(call, "arguments", None)
    return tool_cls(name=call.name, input_parameters=None if args is None else dict(args),
                    output=getattr(call, "result", None))


def _test_case(ex: Exchange) -> Any:
    from deepeval.test_case import LLMTestCase, ToolCall

    return LLMTestCase(input=ex.input, actual_output=ex.output, expected_output=ex.reference,
                       context=ex.contexts or None, retrieval_context=ex.contexts or None,
                       tools_called=[_tool(c, ToolCall) for c in ex.tool_calls],
                       expected_tools=None if ex.expected_tools is None else
                       [_tool(c, ToolCall) for c in ex.expected_tools])


def rate_is_inverted() -> bool:
    """Whether this DeepEval scores hallucination as a rate (lower is better): before 4.0.

    DeepEval 4 flipped HallucinationMetric to "higher is better" (share of contexts the reply
    agrees with); earlier versions report the share it contradicts.
    """
    head = version("deepeval").split(".")[0]
    return head.isdigit() and int(head) < 4


def _test_case_params() -> Any:
    """The enum of test-case fields: ``SingleTurnParams`` from DeepEval 4 (``LLMTestCaseParams``,
    its old name, now warns), ``LLMTestCaseParams`` before."""
    try:
        from deepeval.test_case import SingleTurnParams
    except ImportError:
        from deepeval.test_case import LLMTestCaseParams as SingleTurnParams
    return SingleTurnParams


def _build(m: Any, model: Any, ex: Exchange) -> Any:
    import deepeval.metrics as dm

    kind = m.library_metric
    common = {"threshold": m.threshold, "model": model, "async_mode": True}
    if kind == "HallucinationMetric":
        if rate_is_inverted():
            return dm.HallucinationMetric(**{**common, "threshold": 1.0 - m.threshold})
        with warnings.catch_warnings():  # DeepEval 4's notice that it flipped the direction: handled above
            warnings.filterwarnings("ignore", message=".HallucinationMetric. now scores in the same direction",
                                    category=DeprecationWarning)
            return dm.HallucinationMetric(**common)
    if kind == "ToolCorrectnessMetric":
        from deepeval.test_case import ToolCallParams

        params = [ToolCallParams.INPUT_PARAMETERS] if m.check_arguments else []
        return dm.ToolCorrectnessMetric(evaluation_params=params, should_consider_ordering=m.consider_order,
                                        **common)
    if kind == "GEval":
        fields = _test_case_params()
        params = [fields.INPUT, fields.ACTUAL_OUTPUT]
        if ex.reference is not None:
            params.append(fields.EXPECTED_OUTPUT)
        return dm.GEval(name=m.criteria_name, criteria=m.criteria or None,
                        evaluation_steps=list(m.evaluation_steps) or None, evaluation_params=params, **common)
    return getattr(dm, kind)(**common)


async def score(m: Any, ctx: MetricContext) -> MetricResult:
    """Score one trace with the DeepEval metric named by ``m.library_metric``."""
    started = start(ctx, m, "deepeval")
    if isinstance(started, MetricResult):
        return started
    ex, recorder = started
    try:
        library_metric = _build(m, llm_class()(recorder), ex)
        await library_metric.a_measure(_test_case(ex), _show_indicator=False)
    except Exception as exc:  # noqa: BLE001 - the library's failure is this result's error
        return recorder.failure(ctx, exc)
    raw = float(library_metric.score)
    value = 1.0 - raw if m.library_metric == "HallucinationMetric" and rate_is_inverted() else raw
    details = {"library": "deepeval", "library_version": version("deepeval"), "library_metric": m.library_metric,
               "library_score": raw, "library_success": getattr(library_metric, "success", None)}
    return recorder.finish(ctx.result(min(1.0, max(0.0, value)), str(library_metric.reason or ""), details=details))
