"""The hot deterministic metrics take shortcuts for the usual trace; each must give what the general
computation gives, for any input (the shortcut and the reference are both called here)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics._memo import TraceView
from assay.metrics.tool_calling import _as_expected, key_score, match_arguments
from assay.model import ExpectedToolCall, ToolCall, Trace, Usage

NAN = math.nan  # one object: equal to itself as a dict value, never as an argument
scalars = st.sampled_from([0, 1, 2, 1.0, 2.0, True, False, None, "1", "a", "b", NAN, -0.0, 0.0])
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=2) | st.tuples(inner)
                      | st.dictionaries(st.sampled_from("xy"), inner, max_size=2), max_leaves=4)
arguments = st.dictionaries(st.sampled_from("abc"), values, max_size=3)
names = st.sampled_from(["f", "g", "h"])
expected_calls = st.lists(st.builds(ExpectedToolCall, name=names, arguments=arguments | st.none()), max_size=5)


@st.composite
def call_pairs(draw):
    """Expected calls and actual calls, the actual ones often copies of the expected (the usual case)."""
    expected = draw(expected_calls)
    actual = []
    for e in expected:
        if draw(st.booleans()):
            args = dict(e.arguments) if e.arguments is not None else draw(arguments)
            actual.append(ToolCall(name=e.name, arguments=args))
        else:
            actual.append(ToolCall(name=draw(names), arguments=draw(arguments)))
    actual += [ToolCall(name=draw(names), arguments=draw(arguments)) for _ in range(draw(st.integers(0, 2)))]
    if draw(st.booleans()):
        actual = draw(st.permutations(actual))
    return expected, actual


def _prefix_by_key_score(expected, actual) -> int:
    n = 0
    for e, a in zip(expected, actual):
        if e.name != a.name or (e.arguments is not None and key_score(e.arguments, a.arguments) != 1.0):
            break
        n += 1
    return n


@settings(max_examples=600, deadline=None)
@given(call_pairs())
def test_the_as_expected_prefix_is_what_key_score_finds(pair):
    expected, actual = pair
    assert _as_expected(expected, actual) == _prefix_by_key_score(expected, actual)


@settings(max_examples=600, deadline=None)
@given(call_pairs())
def test_matching_after_the_prefix_is_the_matching_from_the_start(pair):
    expected, actual = pair
    called = [c.name for c in actual]
    assert match_arguments(expected, actual, called, _as_expected(expected, actual)) == \
        match_arguments(expected, actual, called, 0)


turn_usage = st.builds(Usage, input_tokens=st.none() | st.integers(-5, 10**6), output_tokens=st.none()
                       | st.integers(0, 10**6), total_tokens=st.none() | st.integers(-5, 10**6),
                       cost_usd=st.none() | st.floats(-1, 10, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(usage=turn_usage | st.none(), turns=st.integers(1, 3))
def test_the_view_usage_is_the_total_usage(usage, turns):
    t = Trace(id="t", turns=[{"input": "q", "usage": usage}] * turns)
    t = Trace.model_validate(t.model_dump())
    assert TraceView(t).usage() == t.total_usage()


@settings(max_examples=200, deadline=None)
@given(pair=call_pairs(), turns=st.integers(1, 3), on_trace=st.booleans())
def test_the_view_tools_are_the_trace_tools(pair, turns, on_trace):
    expected, actual = pair
    data = {"id": "t", "turns": [{"input": "q", "tool_calls": [c.model_dump() for c in actual]}] * turns}
    exp = [e.model_dump() for e in expected]
    if on_trace:
        data["expected"] = {"tool_calls": exp}
    else:
        data["turns"][0] = {**data["turns"][0], "expected": {"tool_calls": exp}}
    t = Trace.model_validate(data)
    v = TraceView(t)
    assert v.tools() == (t.expected_tool_calls(), t.all_tool_calls())
    assert v.names() == (None if t.expected_tool_calls() is None else [c.name for c in t.expected_tool_calls()],
                         [c.name for c in t.all_tool_calls()])


def _reference_matching(expected, actual):
    """parameter_quality's matching as specified: each expected call, in order, takes the best-scoring
    unused same-name call (the first of the best), by comparing it with every one of them."""
    used = [False] * len(actual)
    per_call, notes = [], []
    for e in expected:
        best_i, best = -1, -1.0
        for i, a in enumerate(actual):
            if not used[i] and a.name == e.name:
                sc = 1.0 if e.arguments is None else key_score(e.arguments, a.arguments)
                if sc > best:
                    best_i, best = i, sc
        if best_i < 0:
            per_call.append(0.0)
            notes.append(f"{e.name}: not called")
            continue
        used[best_i] = True
        per_call.append(best)
        if best < 1.0:
            notes.append(f"{e.name}: {best:.2f} of arguments match")
    return per_call, notes


@settings(max_examples=600, deadline=None)
@given(call_pairs())
def test_indexed_matching_is_the_exhaustive_matching(pair):
    # fewer same-name calls than MATCH_CANDIDATES: the index and bounded search find what comparing
    # every pair finds, NaNs, 1 == 1.0, True != 1 and nested values included
    expected, actual = pair
    called = [c.name for c in actual]
    assert match_arguments(expected, actual, called) == _reference_matching(expected, actual)


@settings(max_examples=600, deadline=None)
@given(call_pairs(), st.integers(0, 2))
def test_few_calls_are_matched_as_the_index_matches_them(pair, done):
    # match_arguments weighs a few calls directly (_match_few); the index (_Pool) must agree wherever
    # the direct way answers (it declines values without an exact form: NaN, tuples)
    from assay.metrics import tool_calling

    expected, actual = pair
    done = min(done, _as_expected(expected, actual))
    called = [c.name for c in actual]
    few = tool_calling._match_few(expected, actual, called, done)
    few_before = tool_calling._FEW
    tool_calling._FEW = -1  # the index alone
    try:
        indexed = match_arguments(expected, actual, called, done)
    finally:
        tool_calling._FEW = few_before
    if few is not None:
        assert few == indexed
    assert match_arguments(expected, actual, called, done) == indexed


def test_few_calls_decline_values_without_an_exact_form():
    expected = [ExpectedToolCall(name="f", arguments={"a": NAN})]
    actual = [ToolCall(name="f", arguments={"a": NAN})]
    from assay.metrics import tool_calling

    assert tool_calling._match_few(expected, actual, ["f"], 0) is None
    assert tool_calling._match_few([ExpectedToolCall(name="f", arguments={"a": [1, {"b": 2.0}]})],
                                   [ToolCall(name="f", arguments={"a": [1, {"b": 2}]})], ["f"], 0) == ([1.0], [])
