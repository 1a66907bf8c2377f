"""Builders for store tests; module-level functions so multiprocessing can pickle them."""

from __future__ import annotations

import os

from assay.model import MetricResult, Trace, TraceResult


def trace_result(i: int, score: float = 1.0, run: str = "") -> TraceResult:
    m = MetricResult(name="m", score=score, passed=score >= 0.7, threshold=0.7, reason=f"r{i}")
    return TraceResult(id=f"{run}t{i}", task_id=f"task{i % 3}", trial=i, metrics={"m": m}, passed=score >= 0.7,
                       source=f"in.jsonl:{i + 1}")


def trace(i: int, run: str = "") -> Trace:
    return Trace(id=f"{run}t{i}", turns=[{"input": f"q{i}", "output": f"a{i}"}])


METRICS = [{"name": "m", "version": "1", "dimension": "custom", "params": {"threshold": 0.7}}]


def write_run(path: str, tag: str, n: int, batch: int) -> str:
    """One process recording a complete run of ``n`` traces (multiprocessing worker)."""
    from assay.engine._aggregate import SummaryBuilder
    from assay.model import RunResult
    from assay.store import RunStore

    rec = RunStore(path).start(inputs=[{"path": f"{tag}.jsonl", "sha256": None, "bytes": None}], metrics=METRICS,
                               batch_size=batch, flush_interval_s=3600)
    builder = SummaryBuilder({"m": "custom"}, {"m": 0.7})
    results = []
    for i in range(n):
        r = trace_result(i, 1.0 if i % 4 else 0.5, run=tag)
        rec.add(r, trace(i, run=tag))
        builder.add(r.metrics)
        results.append(r)
    rec.finish(RunResult(results, builder.finish(), {"n_traces": n}))
    return rec.run_id


def crash_midway(path: str, n: int, batch: int) -> None:
    """Record ``n`` traces without finishing, then die the hard way (no cleanup, no finally)."""
    from assay.store import RunStore

    rec = RunStore(path).start(inputs=[], metrics=METRICS, batch_size=batch, flush_interval_s=3600)
    for i in range(n):
        rec.add(trace_result(i), trace(i))
    os._exit(3)
