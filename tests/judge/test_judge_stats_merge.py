"""One merge for judge counters: partials, juries and Dask shards all add them through JudgeStats."""

from __future__ import annotations

from assay.judge import JudgeStats


def _stats(**kw) -> JudgeStats:
    s = JudgeStats(**kw)
    return s


def test_merge_adds_counts_and_reasons_and_keeps_the_larger_peak():
    a = _stats(requests=3, calls=4, cost_usd=0.5, peak_concurrency=8, concurrency_limit=4,
               error_reasons={"HTTP 500": 1}, estimated_cost_usd=0.25)
    b = _stats(requests=2, calls=2, cost_usd=0.25, peak_concurrency=5, concurrency_limit=6,
               error_reasons={"HTTP 500": 2, "timeout": 1}, estimated_cost_usd=None)
    m = a.merge(b)
    assert (m.requests, m.calls, m.cost_usd, m.peak_concurrency, m.concurrency_limit) == (5, 6, 0.75, 8, 6)
    assert m.error_reasons == {"HTTP 500": 3, "timeout": 1} and m.estimated_cost_usd is None
    assert a.requests == 3 and a.error_reasons == {"HTTP 500": 1}  # the operands are left as they were
    assert a.merge(JudgeStats()) == a and JudgeStats().merge(a) == a


def test_since_is_what_was_counted_after_a_copy():
    s = _stats(requests=2, calls=2, input_tokens=100, error_reasons={"timeout": 1}, peak_concurrency=3)
    before = s.copy()
    s.requests += 5
    s.input_tokens += 40
    s.count_reason("timeout")
    s.count_reason("HTTP 429")
    s.peak_concurrency = 7
    d = s.since(before)
    assert (d.requests, d.input_tokens, d.peak_concurrency) == (5, 40, 7)
    assert d.error_reasons == {"timeout": 1, "HTTP 429": 1}
    assert before.merge(d).as_dict() == s.as_dict()


def test_from_dict_reads_what_as_dict_wrote_and_skips_unknown_keys():
    s = _stats(requests=1, skipped_reasons={"budget reached": 2})
    assert JudgeStats.from_dict({**s.as_dict(), "newer_counter": 9}) == s
