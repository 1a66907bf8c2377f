"""``ReportDigest``: the report of a streamed run, drawn from a bounded digest, matches the whole run's."""

from __future__ import annotations

import re

import assay
from assay.report import ReportDigest, render_report


def trace(i: int) -> dict:
    ok = i % 3 != 0
    return {"id": f"t{i:03d}", "task_id": f"task{i // 2}", "turns": [{"input": "q", "output": "a", "latency_ms": 100.0 + i,
            "tool_calls": [{"name": "search" if ok else "weather", "arguments": {"q": "x" if i % 4 else "y"}}]}],
            "expected": {"tool_calls": [{"name": "search", "arguments": {"q": "x"}}]}}


def section(page: str, id_: str) -> str:
    m = re.search(rf'<section[^>]*id="{id_}".*?</section>', page, re.S)
    assert m, id_
    return m.group(0)


def test_a_digest_of_the_stream_draws_the_same_distributions_and_counts():
    run = assay.evaluate([trace(i) for i in range(90)], ["tool_selection_accuracy", "parameter_quality",
                                                         "latency_score"])
    assert run.run["n_failed"] == 45  # i % 3 == 0 (wrong tool) or i % 4 == 0 (wrong argument)
    digest = ReportDigest(limit=20).extend(run.traces)
    kept = digest.result(run)
    assert len(kept.traces) == 20 and all(not t.passed for t in kept.traces)  # failed first, as the table picks
    assert [t.id for t in kept.traces] == sorted(t.id for t in kept.traces)  # in input order
    whole = render_report(run, max_traces=20, max_views=5)
    streamed = render_report(kept, scores=digest, max_traces=20, max_views=5)
    for id_ in ("dimensions", "metrics"):  # histograms over all 90 traces, not the 20 kept
        assert section(streamed, id_) == section(whole, id_)
    for page in (whole, streamed):
        assert "Failures (45 of 90 traces)" in page and "Traces (90)" in page
        assert "70 more traces not shown" in page


def test_a_small_run_keeps_every_trace():
    run = assay.evaluate([trace(i) for i in range(6)], ["tool_selection_accuracy"])
    digest = ReportDigest(limit=20).extend(run.traces)
    assert [t.id for t in digest.result(run).traces] == [t.id for t in run.traces]
    assert digest.n_traces == 6 and digest.n_bad == 2  # t000 and t003
