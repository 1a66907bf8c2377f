"""``Agentic.run``: Fair Forge's entry point, scoring with the core metric ``agentic_correctness``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pydantic

from ...engine import Evaluation
from ...errors import AssayError, ConfigError
from ...importers.fair_forge import dataset_to_trace
from ...judge import make_judge
from ...metrics._base import REGISTRY
from ...model import Trace, TraceResult
from ...stats import FrequentistMode, StatisticalMode
from .. import _display
from .core.retriever import Retriever
from .schemas.agentic import AgenticMetric, ToolCorrectnessScore
from .schemas.common import Dataset

CORE = "agentic_correctness"


class AgenticJudgeError(AssayError):
    """The judge gave no usable verdict for some conversations (after retries and re-asks).

    Raised once every conversation has been tried. ``results`` holds the AgenticMetric of each
    conversation that was scored; ``failures`` maps each other session id to why it was not
    (the judge's error and, in ``raw``, its raw reply).
    """

    def __init__(self, failures: Mapping[str, str], raw: Mapping[str, str | None],
                 results: list[AgenticMetric], total: int) -> None:
        self.failures, self.raw, self.results = dict(failures), dict(raw), results
        listed = "; ".join(f"{sid!r}: {why}" for sid, why in list(self.failures.items())[:3])
        more = f" (and {len(self.failures) - 3} more)" if len(self.failures) > 3 else ""
        super().__init__(f"the judge failed on {len(self.failures)} of {total} conversation(s): {listed}{more}. "
                         "The other conversations' results are in this error's .results")


@dataclass(frozen=True, slots=True)
class _Message:
    content: Any
    usage_metadata: Any = None


class _Unwrapping:
    """A chat model whose replies are cut to the text between the JSON markers, when present.

    Used with ``use_structured_output=False``: the judge is asked for bare JSON, and a reply that
    wraps it as ``bos_json_clause ... eos_json_clause`` is unwrapped before parsing.
    """

    def __init__(self, model: Any, bos: str, eos: str) -> None:
        self.model, self.bos, self.eos = model, bos, eos

    def unwrap(self, text: str) -> str:
        start = text.find(self.bos) if self.bos else -1
        if start < 0:
            return text
        body = text[start + len(self.bos):]
        end = body.rfind(self.eos) if self.eos else -1
        return (body[:end] if end >= 0 else body).strip()

    async def ainvoke(self, messages: Any, *args: Any, **kwargs: Any) -> _Message:
        reply = await self.model.ainvoke(messages, *args, **kwargs)
        content = getattr(reply, "content", reply)
        if isinstance(content, str):
            content = self.unwrap(content)
        return _Message(content, getattr(reply, "usage_metadata", None))


def _model_label(model: Any) -> str:
    for attr in ("model_name", "model", "model_id", "name"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__



def load_datasets(retriever: Any, kwargs: Mapping[str, Any], who: str) -> list[Dataset]:
    """Fair Forge's ``retriever`` argument (a Retriever class or instance, or Datasets) as Datasets."""
    r = retriever
    if isinstance(r, type):
        if not issubclass(r, Retriever) and not callable(getattr(r, "load_dataset", None)):
            raise ConfigError(f"{who}: retriever {r.__name__} has no load_dataset()")
        r = r(**kwargs)
    elif kwargs:
        raise ConfigError(f"{who}: unknown options {sorted(kwargs)!r} (they go to the retriever "
                          "class, but an instance was given)")
    items = r.load_dataset() if callable(getattr(r, "load_dataset", None)) else r
    if not isinstance(items, Iterable) or isinstance(items, (str, bytes, Mapping)):
        raise ConfigError(f"{who}: expected a Retriever (class or instance) or a list of Datasets, got {r!r}")
    out = []
    for i, d in enumerate(items):
        try:
            out.append(d if isinstance(d, Dataset) else Dataset.model_validate(
                d.model_dump() if isinstance(d, pydantic.BaseModel) else d))
        except pydantic.ValidationError as exc:
            raise ConfigError(f"{who}: dataset {i} is not a Fair Forge Dataset: {exc}") from None
    return out


def judge_of(model: Any, structured: bool, bos: str, eos: str) -> Any:
    """Fair Forge's ``model`` argument as an assay judge (LangChain models unwrapped as Fair Forge does)."""
    if callable(getattr(model, "ainvoke", None)):
        if structured:
            return make_judge(model, name=_model_label(model))
        return make_judge(_Unwrapping(model, bos, eos), name=_model_label(model), structured=False)
    return make_judge(model)


class Agentic:
    """Fair Forge's Agentic metric: is every interaction of each conversation answered correctly?

    One judge call per interaction, all interactions of all conversations concurrently (Fair
    Forge runs them one at a time). Each conversation's AgenticMetric carries Fair Forge's fields:
    correctness per interaction (correct iff >= ``threshold``), pass@k and pass^k from n =
    interactions and c = correct ones under ``statistical_mode``, and tool correctness per
    interaction.

    ``model``: a LangChain chat model (anything with ``ainvoke``; its structured output is used
    when ``use_structured_output`` and it has ``with_structured_output``), or anything
    ``assay.judge.make_judge`` accepts (a model string, an eval_lib-style client, a Judge).

    Differences from Fair Forge, on purpose:

    - A judge failure is never a silent 0.0. The judge stack retries and re-asks; a conversation
      still without a verdict makes ``run`` raise :class:`AgenticJudgeError` after every
      conversation has been tried, with the scored conversations in ``.results`` and each
      failure's reason and raw reply.
    - Tool correctness follows the core metric: an interaction that expected tools but used none
      scores 0 on selection, parameters and sequence (Fair Forge skips it, so a missing call went
      unpunished); the i-th expected call of a name is compared with the i-th used call of that
      name; an unknown ``final_answer_uses_tools`` leaves utilization out (None) instead of 0.
      Tool correctness is reported, and does not decide answer correctness, as in Fair Forge.
    - ``BayesianMode`` reports exact posterior means and intervals by default.
    - ``verbose=True`` prints a summary table; ``verbose=False`` prints and logs nothing.
    """

    def __init__(self, retriever: Any, model: Any, k: int, *, threshold: float = 0.7, tool_threshold: float = 1.0,
                 tool_weights: Mapping[str, float] | None = None, statistical_mode: StatisticalMode | None = None,
                 use_structured_output: bool = True, bos_json_clause: str = "```json", eos_json_clause: str = "```",
                 strict: bool = True, verbose: bool = False, **kwargs: Any) -> None:
        if model is None:
            raise ConfigError("Agentic: model is required (a LangChain chat model or a judge model string)")
        self.retriever, self.model, self.k, self.verbose = retriever, model, k, verbose
        self.use_structured_output, self.strict = use_structured_output, strict
        self.bos_json_clause, self.eos_json_clause = bos_json_clause, eos_json_clause
        self.retriever_kwargs = kwargs
        mode = statistical_mode if statistical_mode is not None else FrequentistMode()
        try:  # the core metric validates k, the thresholds, the weights and the mode
            self.metric = REGISTRY.create(CORE, answer_threshold=threshold, k=k, statistical_mode=mode,
                                          tool_threshold=tool_threshold,
                                          tool_weights=None if tool_weights is None else dict(tool_weights))
        except ConfigError as exc:
            raise ConfigError(f"Agentic: {exc} (Agentic's threshold is the core's answer_threshold)") from None

    @classmethod
    def run(cls, retriever: Any, model: Any = None, k: int | None = None, **kwargs: Any) -> list[AgenticMetric]:
        """Evaluate every conversation the retriever loads; one AgenticMetric each, in order."""
        if k is None:
            raise ConfigError("Agentic.run: k is required (the number of attempts for pass@k and pass^k)")
        return cls(retriever, model, k, **kwargs).process()

    @classmethod
    async def arun(cls, retriever: Any, model: Any = None, k: int | None = None, **kwargs: Any) -> list[AgenticMetric]:
        """``run`` for async code: scores on the caller's event loop."""
        if k is None:
            raise ConfigError("Agentic.arun: k is required (the number of attempts for pass@k and pass^k)")
        return await cls(retriever, model, k, **kwargs).aprocess()

    # -- the pieces ----------------------------------------------------------------------------
    def datasets(self) -> list[Dataset]:
        return load_datasets(self.retriever, self.retriever_kwargs, "Agentic")

    def judge(self) -> Any:
        return judge_of(self.model, self.use_structured_output, self.bos_json_clause, self.eos_json_clause)

    def _evaluation(self) -> Evaluation:
        return Evaluation([self.metric], judge=self.judge())

    def process(self) -> list[AgenticMetric]:
        datasets = self.datasets()
        traces = [dataset_to_trace(d.model_dump(), default_id=f"conversation-{i + 1}") for i, d in enumerate(datasets)]
        results = [r for r in self._evaluation().stream(traces) if isinstance(r, TraceResult)]
        return self._finish(datasets, traces, results)

    async def aprocess(self) -> list[AgenticMetric]:
        datasets = self.datasets()
        traces = [dataset_to_trace(d.model_dump(), default_id=f"conversation-{i + 1}") for i, d in enumerate(datasets)]
        results = [r async for r in _only_results(self._evaluation().astream(traces))]
        return self._finish(datasets, traces, results)

    def _finish(self, datasets: list[Dataset], traces: list[Trace], results: list[TraceResult]) -> list[AgenticMetric]:
        out: list[AgenticMetric] = []
        failures: dict[str, str] = {}
        raw: dict[str, str | None] = {}
        for d, r in zip(datasets, results):
            core = r.metrics[CORE]
            if core.score is None:
                failures[d.session_id] = f"{core.warning}: {core.reason}"
                raw[d.session_id] = core.details.get("raw")
                continue
            out.append(to_agentic_metric(d, core.details))
        if self.verbose:
            self._show(out, failures)
        if failures:
            raise AgenticJudgeError(failures, raw, out, len(datasets))
        return out

    def _show(self, metrics: list[AgenticMetric], failures: Mapping[str, str]) -> None:
        rows = []
        for m in metrics:
            ci = "" if m.pass_at_k_ci_low is None else (
                f"[{m.pass_at_k_ci_low:.3f}, {m.pass_at_k_ci_high:.3f}] / "
                f"[{m.pass_pow_k_ci_low:.3f}, {m.pass_pow_k_ci_high:.3f}]")
            rows.append({"session": m.session_id, "correct": f"{m.correct_interactions}/{m.total_interactions}",
                         f"pass@{m.k}": f"{m.pass_at_k:.3f}", f"pass^{m.k}": f"{m.pass_pow_k:.3f}", "intervals": ci})
        rows += [{"session": sid, "correct": "judge error", "intervals": why} for sid, why in failures.items()]
        _display.sessions_table("Agentic", rows, ["session", "correct", f"pass@{self.k}", f"pass^{self.k}",
                                                  "intervals"])


async def _only_results(stream: AsyncIterator[Any]) -> AsyncIterator[TraceResult]:
    async for item in stream:
        if isinstance(item, TraceResult):
            yield item


def to_agentic_metric(dataset: Dataset, details: Mapping[str, Any]) -> AgenticMetric:
    """The core metric's details (which carry Fair Forge's fields) as Fair Forge's AgenticMetric."""
    tools = [None if t is None else ToolCorrectnessScore.model_validate(t) for t in details["tool_correctness_scores"]]
    return AgenticMetric(
        session_id=dataset.session_id, assistant_id=dataset.assistant_id,
        total_interactions=details["total_interactions"], correct_interactions=details["correct_interactions"],
        is_fully_correct=details["is_fully_correct"], threshold=details["threshold"],
        correctness_scores=list(details["correctness_scores"]), correct_indices=list(details["correct_indices"]),
        tool_correctness_scores=tools, k=details["k"],
        pass_at_k=details["pass_at_k"], pass_at_k_ci_low=details["pass_at_k_ci_low"],
        pass_at_k_ci_high=details["pass_at_k_ci_high"], pass_pow_k=details["pass_pow_k"],
        pass_pow_k_ci_low=details["pass_pow_k_ci_low"], pass_pow_k_ci_high=details["pass_pow_k_ci_high"])
