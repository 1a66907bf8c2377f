"""Mergeable partials: a run split at any points and merged in any grouping equals one pass, digit for digit."""

from __future__ import annotations

import json
import pickle
import random
import subprocess
import sys
from array import array
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay import Evaluation
from assay.engine._aggregate import Dimensions, RunTotals, SummaryBuilder
from assay.engine._exact import SCALE_BITS, exact_units, units_by_value, units_mean
from assay.engine._statistics import StatisticsCollector
from assay.model import MetricResult, Warning

METRICS = ("alpha", "beta", "gamma")
DIMENSION_OF = {"alpha": "tool_calling", "beta": "response_quality", "gamma": "tool_calling"}
THRESHOLDS = {"alpha": 0.5, "beta": 0.7, "gamma": None}

scores = st.one_of(st.none(), st.floats(0, 1), st.sampled_from([0.0, 1.0, 0.1, 1 / 3, 5e-324]))
results = st.builds(
    lambda score, warning, calls, cost: MetricResult(
        score=score, passed=None if score is None else score >= 0.5,
        reason="" if score is not None else f"no score ({warning})",
        warning=warning if score is None else None, judge_calls=calls, tokens=7 * calls,
        cost_usd=cost if calls else None),
    scores, st.sampled_from([Warning.MISSING_DATA, Warning.JUDGE_ERROR, Warning.NOT_EVALUATED]),
    st.integers(0, 2), st.one_of(st.none(), st.floats(0, 0.01)))
traces = st.lists(st.tuples(st.sampled_from(["t1", "t2", "t3", "t4"]),
                            st.dictionaries(st.sampled_from(METRICS), results, min_size=0, max_size=3)),
                  min_size=0, max_size=40)


def _totals(intervals: bool) -> RunTotals:
    collector = StatisticsCollector() if intervals else None
    return RunTotals(DIMENSION_OF, THRESHOLDS, Dimensions.make(), collector)


def _feed(totals: RunTotals, part: list) -> list:
    return [totals.add_trace({k: r.replace(name=k) for k, r in metrics.items()}, task) for task, metrics in part]


def _finished(totals: RunTotals) -> tuple:
    summaries = totals.finish()
    stats = totals.collector.finish(summaries) if totals.collector is not None else {}
    return {k: s.to_dict() for k, s in summaries.items()}, stats


def _merge_randomly(parts: list[RunTotals], rng: random.Random) -> RunTotals:
    """Merge neighbours in a random order (a random bracketing of the ordered parts)."""
    parts = list(parts)
    while len(parts) > 1:
        i = rng.randrange(len(parts) - 1)
        parts[i:i + 2] = [parts[i].merge(parts[i + 1])]
    return parts[0]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces, st.lists(st.integers(0, 40), max_size=5), st.booleans(), st.integers(0, 2**32 - 1))
def test_split_and_merged_totals_equal_one_pass(data: list, cuts: list[int], intervals: bool, seed: int) -> None:
    whole = _totals(intervals)
    verdicts = _feed(whole, data)
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    parts, split_verdicts = [], []
    for lo, hi in zip(bounds, bounds[1:]):
        t = _totals(intervals)
        split_verdicts += _feed(t, data[lo:hi])
        parts.append(pickle.loads(pickle.dumps(t)))  # as a worker would send it
    merged = _merge_randomly(parts, random.Random(seed)) if parts else _totals(intervals)
    assert split_verdicts == verdicts  # a trace's dimensions, overall and verdict are its own
    assert _finished(merged) == _finished(whole)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e300, 1e300), max_size=60), st.integers(0, 60))
def test_exact_units_is_the_exact_sum(values: list[float], cut: int) -> None:
    exact = sum(map(Fraction, values), Fraction(0))
    assert Fraction(exact_units(values), 1 << SCALE_BITS) == exact
    assert exact_units(values[:cut]) + exact_units(values[cut:]) == exact_units(values)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([5e-324, -5e-324, 0.0, -0.0]),
                max_size=80))
def test_the_sum_value_by_value_is_the_vectorised_one(values: list[float]) -> None:
    """Without numpy loaded a small sum is taken in Python ints: the same integer (subnormals, signs, extremes)."""
    assert units_by_value(values) == exact_units(array("d", values))


def test_a_run_without_intervals_needs_no_numpy() -> None:
    """Its exact sums are taken without numpy below ``SMALL`` values: a judge run without intervals no longer
    imported numpy (~60-80 ms) after its last reply for them."""
    code = ("import json, sys\n"
            "from assay import Evaluation\n"
            "traces = [{'id': f't{i}', 'turns': [{'input': 'q', 'output': 'a', 'latency_ms': 100 * i}]} for i in range(50)]\n"
            "r = Evaluation(['latency_score']).run(traces, intervals=False)\n"
            "print(json.dumps([r.summary['latency_score'].mean, 'numpy' in sys.modules]))\n")
    mean, numpy_loaded = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                                   text=True).stdout)
    assert numpy_loaded is False
    assert mean == Evaluation(["latency_score"]).run(
        [{"id": f"t{i}", "turns": [{"input": "q", "output": "a", "latency_ms": 100 * i}]} for i in range(50)],
        intervals=False).summary["latency_score"].mean


def test_the_mean_is_rounded_once() -> None:
    """Ten 0.1s: a running float sum gives 0.9999999999999999 (mean 0.09999999999999999); the exact mean is 0.1."""
    b = SummaryBuilder({"m": "custom"}, {"m": 0.5})
    for _ in range(10):
        b.add({"m": MetricResult(name="m", score=0.1, passed=False)})
    assert b.finish()["m"].mean == 0.1 == units_mean(exact_units([0.1] * 10), 10)


def test_summary_builder_merges_like_run_totals() -> None:
    """The store's and the plugin's builder (no columns) merges to the same summaries as one pass."""
    rows = [{"m": MetricResult(name="m", score=i / 7, passed=i % 2 == 0, judge_calls=1, tokens=3, cost_usd=0.1)}
            for i in range(30)]
    one = SummaryBuilder({"m": "custom"}, {"m": 0.5})
    for r in rows:
        one.add(r)
    a, b = SummaryBuilder({"m": "custom"}, {"m": 0.5}), SummaryBuilder({"m": "custom"}, {"m": 0.5})
    for r in rows[:11]:
        a.add(r)
    for r in rows[11:]:
        b.add(r)
    assert {k: s.to_dict() for k, s in a.merge(b).finish().items()} == \
        {k: s.to_dict() for k, s in one.finish().items()}


def test_merging_different_statistics_settings_is_refused() -> None:
    with pytest.raises(ValueError, match="task sets"):
        StatisticsCollector(task_set="common").merge(StatisticsCollector(task_set="all"))
    with pytest.raises(ValueError, match="with and without intervals"):
        _totals(True).merge(_totals(False))


def _repeated_traces(n_tasks: int = 9, trials: int = 4) -> list[dict]:
    rng = random.Random(7)
    out = []
    for trial in range(trials):
        for t in range(n_tasks):
            ok = rng.random() < 0.3 + 0.07 * t
            out.append({"id": f"task{t}-{trial}", "task_id": f"task{t}", "trial": trial,
                        "turns": [{"input": "What is the refund window?",
                                   "output": "30 days" if ok else "I am not sure",
                                   "latency_ms": rng.randint(100, 3000)}],
                        "expected": {"output": "30 days"}})
    return out


@pytest.mark.parametrize("cuts", [(5,), (1, 17, 18, 30), tuple(range(1, 36))])
def test_engine_parts_with_tasks_across_cuts_equal_one_run(cuts: tuple[int, ...]) -> None:
    """Evaluation.accumulate over slices, merged, finishes to the single run's summaries and pass@k curves."""
    data = _repeated_traces()
    ev = Evaluation(["contains:values=['30 days']", "latency_score:threshold_ms=1500"])
    single = ev.run(data, keep_traces=False)
    assert single.statistics["trials"]["trace_passed"]  # tasks repeat: pass@k curves exist
    bounds = [0, *cuts, len(data)]
    parts = [ev.accumulate(data[lo:hi], keep_traces=False) for lo, hi in zip(bounds, bounds[1:])]
    rng = random.Random(len(cuts))
    while len(parts) > 1:
        i = rng.randrange(len(parts) - 1)
        parts[i:i + 2] = [parts[i].merge(parts[i + 1])]
    merged = ev.finish(parts[0], data, 0.0)
    assert {k: s.to_dict() for k, s in merged.summary.items()} == \
        {k: s.to_dict() for k, s in single.summary.items()}
    assert merged.statistics == single.statistics
    assert [t.id for t in merged.failed] == [t.id for t in single.failed]
    assert (merged.run["n_traces"], merged.run["n_passed"], merged.run["n_failed"]) == \
        (single.run["n_traces"], single.run["n_passed"], single.run["n_failed"])
