"""UAEF's connectors (``uaef.integrations``): RAGAS and DeepEval metrics called directly.

Thin wrappers over ``evaluate`` with the ``ragas_*`` / ``deepeval_*`` metrics, so the scores come
from the same code as a normal run, through the judge given here (or ASSAY_JUDGE)::

    deepeval = DeepEvalConnector(judge="openai:gpt-4o-mini")
    scores = deepeval.calculate_metrics(evaluation_input, ["hallucination", "contextual_recall"])
    geval = deepeval.calculate_geval(evaluation_input, criteria="Does the response give next steps?")

Without the extra each score is None with ``metadata['warning'] == 'not_evaluated'`` and the pip
command in its reasoning (UAEF raises ImportError).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from typing import Any

from ...errors import ConfigError
from .api import evaluate
from .models import MetricScore

_METRICS = {
    "ragas": ("faithfulness", "context_precision", "context_recall", "answer_precision", "answer_recall",
              "answer_correctness", "tool_call_accuracy"),
    "deepeval": ("contextual_precision", "contextual_recall", "contextual_relevancy", "hallucination",
                 "faithfulness", "answer_relevancy", "tool_correctness", "geval"),
}


class _Connector:
    library = ""

    def __init__(self, judge: Any = None, *, model: Any = None, **judge_options: Any) -> None:
        self.judge, self.model, self.judge_options = judge, model, judge_options

    def is_available(self) -> bool:
        return importlib.util.find_spec(self.library) is not None

    def list_available_metrics(self) -> list[str]:
        return [m for m in _METRICS[self.library] if m != "geval"]

    def _run(self, evaluation_input: Any, metrics: list[Any]) -> Any:
        return evaluate(trace=evaluation_input, metrics=metrics, judge=self.judge, model=self.model,
                        **self.judge_options)

    def calculate_metrics(self, evaluation_input: Any, metric_names: Iterable[str]) -> dict[str, MetricScore]:
        """Scores by the library's metric name (``"faithfulness"``), for one EvaluationInput."""
        names = list(metric_names)
        unknown = [n for n in names if n not in self.list_available_metrics()]
        if unknown:
            raise ConfigError.unknown(f"{self.library} metric", unknown[0], self.list_available_metrics())
        result = self._run(evaluation_input, [f"{self.library}_{n}" for n in names])
        return {n: result.metric_scores[f"{self.library}_{n}"] for n in names}


class RAGASConnector(_Connector):
    """RAGAS metrics (``ragas_*``) for one EvaluationInput."""

    library = "ragas"


class DeepEvalConnector(_Connector):
    """DeepEval metrics (``deepeval_*``) for one EvaluationInput, and G-Eval with your criteria."""

    library = "deepeval"

    def calculate_geval(self, evaluation_input: Any, criteria: str = "",
                        evaluation_steps: Iterable[str] = (), name: str = "GEval") -> MetricScore:
        result = self._run(evaluation_input, [{"name": "deepeval_geval", "criteria": criteria,
                                               "evaluation_steps": tuple(evaluation_steps), "criteria_name": name}])
        return result.metric_scores["deepeval_geval"]


__all__ = ["DeepEvalConnector", "RAGASConnector"]
