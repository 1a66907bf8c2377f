"""The reasons of the hot deterministic metrics are built on a faster path (%-formatting, texts made
once per value); they must read exactly as the plain f-strings they replace, for any value."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics.performance import _g
from assay.metrics.tool_calling import _all_arguments, _all_in_order, _all_matched

latencies = st.floats(min_value=0, max_value=1e12, allow_nan=False) | st.integers(min_value=0, max_value=10**9)
budgets = st.floats(min_value=1e-3, max_value=1e9, allow_nan=False) | st.integers(min_value=1, max_value=10**7)


@settings(max_examples=300, deadline=None)
@given(latency=latencies, budget=budgets)
def test_latency_reason_is_the_f_string(build, run, latency, budget):
    r = run("latency_score", build(latency_ms=latency), threshold_ms=budget)
    assert r.reason == f"{r.details['latency_ms']:.0f} ms against a {budget:.0f} ms budget"


@settings(max_examples=300, deadline=None)
@given(x=st.integers(min_value=-10**12, max_value=10**12) | st.floats(allow_nan=False, allow_infinity=True))
def test_g_is_format_g(x):
    assert _g(x) == f"{x:g}"


@settings(max_examples=200, deadline=None)
@given(tokens=st.integers(min_value=0, max_value=10**9), quality=st.floats(min_value=0, max_value=1),
       expected=st.floats(min_value=1, max_value=1e7), cost=st.floats(min_value=0, max_value=1e4))
def test_efficiency_reasons_are_the_f_string(build, run, tokens, quality, expected, cost):
    t = build(usage={"total_tokens": tokens, "cost_usd": cost}, metadata={"quality_score": quality})
    r = run("token_efficiency", t, expected_tokens=expected)
    assert r.reason == (f"quality {quality:.2f} (metadata.quality_score); tokens {tokens:g} = "
                        f"{tokens / expected:.2f}x expected")
    c = run("cost_efficiency", t, expected_cost_usd=expected)
    assert c.reason == (f"quality {quality:.2f} (metadata.quality_score); cost (USD) {cost:g} = "
                        f"{cost / expected:.2f}x expected")


def test_all_matched_reasons_are_the_f_strings(tools, run):
    for n in (1, 3, 17):
        names = [f"t{i}" for i in range(n)]
        trace = tools(names, names)
        assert run("tool_selection_accuracy", trace).reason == f"{n} matched of {n} expected and called" \
            == _all_matched(n)
        assert run("tool_sequence_correctness", trace).reason == f"{n} of {n} calls match in order" \
            == _all_in_order(n)
        assert run("parameter_quality", trace).reason == f"mean argument match 1.00 over {n} expected calls" \
            == _all_arguments(n)
