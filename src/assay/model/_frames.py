"""Run results as a table: one row per trace x metric, for pandas or polars (optional extras)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import ConfigError

COLUMNS = ("trace_id", "task_id", "trial", "source", "metric", "dimension", "score", "passed", "threshold",
           "warning", "reason", "judge_calls", "tokens", "cost_usd")
"""The columns, in order; ``warning`` is the warning's name or None."""


def rows(result: Any) -> Iterator[dict[str, Any]]:
    """One plain dict per trace x metric instance, in trace order, then metric order."""
    summary = result.summary
    for t in result.traces:
        for name, m in t.metrics.items():
            s = summary.get(name)
            yield {"trace_id": t.id, "task_id": t.task_id, "trial": t.trial, "source": t.source, "metric": name,
                   "dimension": s.dimension if s is not None else None, "score": m.score, "passed": m.passed,
                   "threshold": m.threshold, "warning": None if m.warning is None else str(m.warning),
                   "reason": m.reason, "judge_calls": m.judge_calls, "tokens": m.tokens, "cost_usd": m.cost_usd}


def _columns(result: Any) -> dict[str, list[Any]]:
    data: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    for row in rows(result):
        for c in COLUMNS:
            data[c].append(row[c])
    return data


def to_pandas(result: Any) -> Any:
    """A pandas DataFrame of ``rows(result)``; score is float (NaN for no score), passed nullable boolean."""
    try:
        import pandas as pd  # imported here: pandas is an optional extra
    except ImportError:
        raise ConfigError.missing_extra("RunResult.to_pandas()", "pandas", "pandas") from None
    data = _columns(result)
    frame = pd.DataFrame({c: data[c] for c in COLUMNS})
    frame["score"] = frame["score"].astype("float64")
    for c in ("passed",):
        frame[c] = frame[c].astype("boolean")
    frame["trial"] = frame["trial"].astype("Int64")
    return frame


def to_polars(result: Any) -> Any:
    """A polars DataFrame of ``rows(result)`` (nulls for no score / no verdict)."""
    try:
        import polars as pl  # imported here: polars is an optional extra
    except ImportError:
        raise ConfigError.missing_extra("RunResult.to_polars()", "polars", "polars") from None
    schema = {"trace_id": pl.Utf8, "task_id": pl.Utf8, "trial": pl.Int64, "source": pl.Utf8, "metric": pl.Utf8,
              "dimension": pl.Utf8, "score": pl.Float64, "passed": pl.Boolean, "threshold": pl.Float64,
              "warning": pl.Utf8, "reason": pl.Utf8, "judge_calls": pl.Int64, "tokens": pl.Int64, "cost_usd": pl.Float64}
    return pl.DataFrame(_columns(result), schema=schema)


__all__ = ["COLUMNS", "rows", "to_pandas", "to_polars"]
