"""The runs page's trend: one name's runs over time, a chosen figure with its interval, and markers where
``compare`` finds a significant change from the run before.

Comparisons need both runs' traces, so only the last ``MARKED`` steps are tested; the answers of
finished runs never change and are kept (``_CACHE``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from ..errors import AssayError
from ..model import RunResult
from ..report._charts import legend, trend
from ..report._html import Markup, h
from ..store import RunStore, load_summary, run_series, stored_results
from ._layout import select, url

SERIES = 60
"""Runs of one name shown (the newest)."""
MARKED = 8
"""Consecutive pairs of runs (the newest) tested for a significant change."""
_CACHE: dict[tuple[str, str, str], str] = {}
_LOCK = threading.Lock()


def _figure(result: RunResult, metric: str) -> tuple[Any, Any, Any]:
    """(value, low, high) of ``metric`` (``name`` pass rate, ``name:mean``) or, for "", the trace pass rate."""
    if not metric:
        rows = ((result.statistics or {}).get("trials") or {}).get("trace_passed") or []
        row = next((r for r in rows if isinstance(r, Mapping) and r.get("k") == 1), None)
        if row is not None:
            return row.get("pass_at_k"), row.get("pass_at_k_ci_low"), row.get("pass_at_k_ci_high")
        n_pass, n_fail = result.run.get("n_passed") or 0, result.run.get("n_failed") or 0
        return (n_pass / (n_pass + n_fail) if n_pass + n_fail else None), None, None
    name, _, kind = metric.partition(":")
    s = result.summary.get(name)
    if s is None:
        return None, None, None
    value, ci = (s.mean, s.mean_ci) if kind == "mean" else (s.pass_rate, s.pass_rate_ci)
    return value, *(ci or (None, None))


def _marker(store: RunStore, a: str, b: str, metric: str, finished: bool) -> str:
    """``fail`` / ``pass`` when ``compare`` finds a significant fall / rise of the metric from run a to b."""
    from ..analysis._compare import compare_runs
    from ..analysis._compare import OVERALL

    key = (a, b, metric)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    runs = []
    for run_id in (a, b):
        r = load_summary(store, run_id)
        r.traces = [t for _, t in stored_results(store, run_id)]
        runs.append(r)
    try:
        comp = compare_runs(runs[0], runs[1], duplicates="last")  # as `assay compare` does
    except AssayError:
        return ""
    row = comp["metrics"].get(metric.partition(":")[0] or OVERALL) or {}
    state = "fail" if row.get("regression") else "pass" if row.get("improvement") else ""
    if finished:
        with _LOCK:
            _CACHE[key] = state
    return state


def section(store: RunStore, name: str, metric: str, params: Mapping[str, str]) -> Markup:
    series = run_series(store, name, limit=SERIES)
    if not series:
        return h("section", h("h2", f"Trend of {name}"), h("p", "No finished runs of this name yet.", class_="meta"),
                 id="trend")
    metrics = sorted({m for _, r in series for m in r.summary})
    options = [("", "trace pass rate (pass@1)")] + [o for m in metrics for o in ((m, f"{m} pass rate"),
                                                                                 (f"{m}:mean", f"{m} mean"))]
    points = []
    for k, (info, result) in enumerate(series):
        value, lo, hi = _figure(result, metric)
        state = ""
        if k and k >= len(series) - MARKED:
            prev = series[k - 1][0]
            state = _marker(store, prev.id, info.id, metric, info.status == "completed" and prev.status == "completed")
        points.append((info.started_at[5:16].replace("T", " "), value, lo, hi, state))
    chosen = dict(options).get(metric, metric)
    form = h("form", [h("input", type="hidden", name=k, value=v) for k, v in params.items() if v and k != "metric"],
             select("metric", "figure", options, metric), h("button", "Show", type="submit"),
             method="get", action="/", class_="filters view-filters")
    return h("section", h("h2", f"Trend of {name}: {chosen}"), form,
             h("figure", trend(points, label=f"{chosen} over the last {len(points)} runs of {name}"),
               legend([("circle", "point", "value"), ("line", "whisker", "its interval"),
                       ("circle", "point fail", "significant fall (compare)"),
                       ("circle", "point pass", "significant rise (compare)")]),
               h("figcaption", "Oldest left. Markers: ", h("code", "assay compare"), f" against the run before, for "
                               f"the last {MARKED} runs; ", h("a", "list these runs", href=url("/", name=name)), ".")),
             id="trend")
