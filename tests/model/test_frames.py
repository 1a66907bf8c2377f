"""RunResult.to_pandas() / to_polars(): one row per trace x metric; a clear error without the extra."""

from __future__ import annotations

import math
import sys

import pytest

from assay import ConfigError, Trace, evaluate
from assay.model._frames import COLUMNS, rows

TRACES = [
    Trace.model_validate({"id": f"t{i}", "task_id": "weather", "trial": i, "latency_ms": 1000 + 2000 * i,
                          "turns": [{"input": "Weather in Paris?", "output": "18°C",
                                     "tool_calls": [{"name": "get_weather" if i else "search"}]}],
                          "expected": {"tool_calls": [{"name": "get_weather"}]}})
    for i in range(2)
] + [Trace.model_validate({"id": "other", "turns": [{"input": "hi", "output": "hello"}]})]
METRICS = ["tool_selection_accuracy", "latency_score"]


@pytest.fixture(scope="module")
def result():  # type: ignore[no-untyped-def]
    return evaluate(TRACES, METRICS)


def test_rows_are_trace_by_metric_with_dimension_task_and_trial(result) -> None:  # type: ignore[no-untyped-def]
    got = [(r["trace_id"], r["metric"], r["dimension"], r["task_id"], r["trial"], r["score"], r["passed"], r["warning"])
           for r in rows(result)]
    assert got == [
        ("t0", "tool_selection_accuracy", "tool_calling", "weather", 0, 0.0, False, None),
        ("t0", "latency_score", "performance", "weather", 0, 1.0, True, None),
        ("t1", "tool_selection_accuracy", "tool_calling", "weather", 1, 1.0, True, None),
        ("t1", "latency_score", "performance", "weather", 1, pytest.approx(2000 / 3000), False, None),
        ("other", "tool_selection_accuracy", "tool_calling", "other", None, None, None, "missing_data"),
        ("other", "latency_score", "performance", "other", None, None, None, "missing_data"),
    ]
    assert all(list(r) == list(COLUMNS) for r in rows(result))


def test_to_pandas(result) -> None:  # type: ignore[no-untyped-def]
    pd = pytest.importorskip("pandas")
    df = result.to_pandas()
    assert isinstance(df, pd.DataFrame) and list(df.columns) == list(COLUMNS) and len(df) == 6
    assert str(df["score"].dtype) == "float64" and math.isnan(df["score"].iloc[4])
    assert df["passed"].isna().tolist() == [False, False, False, False, True, True]
    means = df.groupby("metric")["score"].mean()  # NaN (no score) is left out, as in assay's own means
    assert means["tool_selection_accuracy"] == pytest.approx(0.5)
    assert df.loc[df.trace_id == "t1", "trial"].tolist() == [1, 1]
    assert df.loc[df.trace_id == "other", "warning"].tolist() == ["missing_data", "missing_data"]


def test_to_polars(result) -> None:  # type: ignore[no-untyped-def]
    pl = pytest.importorskip("polars")
    df = result.to_polars()
    assert isinstance(df, pl.DataFrame) and df.columns == list(COLUMNS) and df.height == 6
    assert df["score"].null_count() == 2 and df["passed"].dtype == pl.Boolean
    assert df.filter(pl.col("metric") == "tool_selection_accuracy")["score"].mean() == pytest.approx(0.5)


@pytest.mark.parametrize(("method", "package"), [("to_pandas", "pandas"), ("to_polars", "polars")])
def test_without_the_package_the_error_carries_the_pip_command(result, monkeypatch, method, package) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, package, None)  # import now raises ImportError
    with pytest.raises(ConfigError, match=rf"RunResult.{method}\(\) needs the optional package '{package}': "
                                          rf"pip install 'assay\[{package}\]'"):
        getattr(result, method)()


def test_import_assay_does_not_import_pandas() -> None:
    import subprocess

    code = "import assay, sys; print('pandas' in sys.modules, 'polars' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False False"
