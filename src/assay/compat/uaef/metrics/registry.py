"""UAEF's custom-metric contract (``uaef.metrics.registry``) on assay's registry.

``register_metric(MyMetric)`` turns a :class:`BaseMetric` subclass into an assay metric with the
same name, in the dimension ``get_dimension()`` names (snake_case: "Response Quality" and
"response_quality" are the same dimension, so the dimension weights apply, unlike in UAEF). The
metric then runs wherever assay metrics run: ``evaluate`` here, ``assay.evaluate``, the CLI in
the same process. It receives a UAEF :class:`EvaluationInput` built from the trace and returns a
:class:`MetricScore` (or a float); a None score with ``metadata['warning']`` is a null result with
that warning, never a 0.
"""

from __future__ import annotations

import abc
import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ....errors import ConfigError
from ....metrics import MetricContext, metric
from ....metrics._base import REGISTRY
from ....model import MetricResult, Warning
from .._convert import to_input
from ..models import EvaluationInput, MetricScore

USE_CASE_METRICS = ("containment", "resolution")
_enabled: set[str] = set()
_WARNINGS = {"api_error": Warning.JUDGE_ERROR, **{w.value: w for w in Warning}}


class BaseMetric(abc.ABC):
    """A UAEF metric: ``get_name`` and ``calculate`` are required, the rest have defaults."""

    @abc.abstractmethod
    def calculate(self, evaluation_input: EvaluationInput) -> MetricScore:
        """The score for one input: a MetricScore (or a float in [0, 1])."""

    async def calculate_async(self, evaluation_input: EvaluationInput) -> MetricScore:
        """Override for metrics that wait on I/O; the default calls ``calculate``."""
        return self.calculate(evaluation_input)

    @abc.abstractmethod
    def get_name(self) -> str:
        """The registry name, e.g. "my_metric"."""

    def get_dimension(self) -> str | None:
        return None

    def get_description(self) -> str | None:
        return None

    def requires_ground_truth(self) -> bool:
        return False

    def requires_llm_judge(self) -> bool:
        return False

    def get_dependencies(self) -> dict[str, list[str]]:
        return {}


def dimension_key(name: str | None) -> str:
    """UAEF's display name ("Tool Calling") or a key ("tool_calling") as assay's dimension key."""
    if not name or not name.strip():
        return "custom"
    return re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_") or "custom"


def to_result(out: Any, name: str) -> MetricResult:
    """What a UAEF metric returned, as an assay result."""
    if isinstance(out, bool) or out is None:
        return MetricContext.null(Warning.METRIC_ERROR, f"calculate() returned {out!r}, expected a MetricScore")
    if isinstance(out, (int, float)):
        return MetricContext.result(float(out))
    if isinstance(out, Mapping):
        out = MetricScore.model_validate({"metric_name": name, **out})
    score, reasoning = getattr(out, "score", None), getattr(out, "reasoning", None) or ""
    meta = dict(getattr(out, "metadata", None) or {})
    if score is None:
        w = meta.pop("warning", None)
        warning = _WARNINGS.get(str(w), Warning.MISSING_DATA)
        return MetricContext.null(warning, reasoning or f"no score ({w or 'no reason given'})", meta)
    return MetricContext.result(float(score), reasoning, details=meta)


def _adapter(cls: Any, instance: BaseMetric) -> type:
    name, dim = instance.get_name(), dimension_key(instance.get_dimension())
    threshold = getattr(instance, "threshold", 0.7)
    threshold = float(threshold) if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) else 0.7
    overrides_async = cls.calculate_async is not BaseMetric.calculate_async and \
        inspect.iscoroutinefunction(getattr(cls, "calculate_async", None))
    summary = instance.get_description() or f"custom UAEF metric {cls.__qualname__}"

    if overrides_async:
        async def score(self: Any, ctx: MetricContext) -> MetricResult:
            return to_result(await cls().calculate_async(to_input(ctx.trace)), name)
    else:
        def score(self: Any, ctx: MetricContext) -> MetricResult:  # type: ignore[misc]
            return to_result(cls().calculate(to_input(ctx.trace)), name)

    body = {"__annotations__": {"threshold": float}, "threshold": threshold, "score": score,
            "__doc__": summary, "__module__": cls.__module__, "uaef_class": cls}
    adapted = dataclass(frozen=True, kw_only=True)(type(f"UAEF{cls.__name__}", (), body))
    requires = ("ground_truth",) if instance.requires_ground_truth() else ()
    return metric(name, dimension=dim, requires=requires, summary=summary)(adapted)


def register_metric(metric_class: type) -> None:
    """Add a UAEF metric class to assay's registry (calling it again with the same class is a no-op).

    Raises ConfigError for a class that is not a BaseMetric-like class (needs ``get_name`` and
    ``calculate``) or whose name another metric already has.
    """
    if not isinstance(metric_class, type) or not callable(getattr(metric_class, "get_name", None)) \
            or not callable(getattr(metric_class, "calculate", None)):
        raise ConfigError(f"register_metric needs a BaseMetric subclass, got {metric_class!r}")
    try:
        instance = metric_class()
    except TypeError as exc:
        raise ConfigError(f"register_metric: cannot create {metric_class.__name__}(): {exc}") from None
    name = instance.get_name()
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{metric_class.__name__}.get_name() must return a non-empty string, got {name!r}")
    if name in REGISTRY:
        if getattr(REGISTRY.get(name), "uaef_class", None) is metric_class:
            return
        raise ConfigError(f"metric {name!r} is already registered ({REGISTRY.get(name).__qualname__}); "
                          "give the custom metric another name")
    _adapter(metric_class, instance)


def register_use_case_specific_metrics() -> None:
    """Add the contact-center metrics (containment, resolution) to ``evaluate``'s default set.

    They are always selectable by name; this only makes a default run (``metrics=None``) include
    them, as UAEF's registry does. Idempotent.
    """
    _enabled.update(USE_CASE_METRICS)


def enabled_opt_in() -> frozenset[str]:
    return frozenset(_enabled)


def list_metrics() -> list[str]:
    """Every registered metric name (assay's built-ins, integrations and registered UAEF metrics)."""
    return REGISTRY.names()


def list_metrics_by_dimension() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for spec in REGISTRY.specs():
        out.setdefault(spec.dimension, []).append(spec.name)
    return out


def get_metric(metric_name: str, **kwargs: Any) -> Any:
    """An assay metric instance by name, with parameters."""
    return REGISTRY.create(metric_name, **kwargs)


__all__ = [
    "BaseMetric", "dimension_key", "get_metric", "list_metrics", "list_metrics_by_dimension", "register_metric",
    "register_use_case_specific_metrics",
]
