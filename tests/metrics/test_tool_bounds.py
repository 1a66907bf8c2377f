"""The tool-calling metrics stay bounded on hostile traces: exact within their caps (sequence: invalid_data
beyond; parameters: a bounded search, never a refusal)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics import tool_calling
from assay.metrics.tool_calling import lcs_length


def _dp(a: list[str], b: list[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=40), st.lists(st.sampled_from("abcde"), max_size=40))
def test_bit_parallel_lcs_equals_the_table(a: list[str], b: list[str]) -> None:
    assert lcs_length(a, b) == _dp(a, b)


def test_a_long_sequence_with_one_difference_is_exact_and_fast() -> None:
    a = [f"t{i % 50}" for i in range(200_000)]
    b = list(a)
    b[100_000] = "other"
    assert lcs_length(a, b) == 199_999  # the common start and end never reach the bit vectors


def test_sequence_beyond_the_cap_is_invalid_data(monkeypatch: pytest.MonkeyPatch, tools, run) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(tool_calling, "MAX_LCS_CELLS", 100)
    names = [f"t{i}" for i in range(20)]
    r = run("tool_sequence_correctness", tools(names, list(reversed(names))))
    assert r.score is None and str(r.warning) == "invalid_data" and "400 comparisons" in r.reason
    assert run("tool_sequence_correctness", tools(names, names)).score == 1.0  # equal: no comparisons


def test_parameter_matching_is_linear_and_never_refuses(monkeypatch: pytest.MonkeyPatch, tools, run, mk) -> None:  # type: ignore[no-untyped-def]
    # every call the same tool, every argument different (the shape that was quadratic and then refused
    # beyond 300,000 comparisons): the argument comparisons per call stay constant as the trace grows
    counts = []
    real = tool_calling.key_score

    def counting(e, a):  # type: ignore[no-untyped-def]
        counts[-1] += 1
        return real(e, a)

    monkeypatch.setattr(tool_calling, "key_score", counting)
    for n in (100, 1_000, 20_000):
        counts.append(0)
        expected = [mk.expected("t", {"i": i, "k": 0}) for i in range(n)]
        r = run("parameter_quality", tools(expected, [mk.call("t", {"i": -i - 1, "k": 0}) for i in range(n)]))
        assert r.warning is None and r.score == 0.5  # k equal, i not: 1 of 2 keys, for every call
        assert counts[-1] <= (tool_calling.MATCH_CANDIDATES + 1) * n
    assert counts[2] / 20_000 <= 1.05 * counts[1] / 1_000  # per call: no growth with the trace
    counts.append(0)
    same = [mk.call("t", {"i": i, "k": 0}) for i in range(20_000)]
    shuffled = same[10_000:] + same[:10_000]  # exact matches, out of order: found through the index
    assert run("parameter_quality", tools(expected, shuffled)).score == 1.0
    assert counts[-1] <= 1  # only the in-order check of the first call compares arguments


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from("abc"), min_size=60, max_size=300), st.lists(st.sampled_from("abcd"), min_size=60,
                                                                            max_size=300))
def test_bit_parallel_lcs_equals_the_table_over_many_words(a: list[str], b: list[str]) -> None:
    assert lcs_length(a, b) == _dp(a, b)  # bit vectors of several machine words, carries across them


def test_a_20000_call_trace_is_scored_not_refused(tools, run) -> None:  # type: ignore[no-untyped-def]
    import random

    rng = random.Random(7)
    names = [f"tool_{i}" for i in range(20)]
    expected = [rng.choice(names) for _ in range(20_000)]
    called = [rng.choice(names) for _ in range(20_000)]
    r = run("tool_sequence_correctness", tools(expected, called))
    assert r.warning is None and r.score == lcs_length(expected, called) / 20_000
    assert 0.3 < r.score < 0.5  # ~0.36 for random calls over 20 tools
    assert tool_calling.MAX_LCS_CELLS >= 1_000_000 * 1_000_000
