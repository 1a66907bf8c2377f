"""tool_selection_accuracy, tool_sequence_correctness, parameter_quality, mcp_compliance (seed 004)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics.tool_calling import is_mcp_tool, key_score, lcs_length, values_equal
from assay.model import Warning

NAMES = st.sampled_from(["search", "calculator", "weather", "parse", "save"])


# --------------------------------------------------------------------------- selection

@pytest.mark.parametrize("expected, actual, want", [
    (["search", "calculator"], ["search", "calculator"], 1.0),
    (["search", "calculator"], ["search", "weather"], 1 / 3),
    (["search", "calculator"], ["weather"], 0.0),
    (["search"], ["search", "search"], 0.5),
    ([], [], 1.0),
    ([], ["search"], 0.0),
], ids=["seed-good-1.0", "seed-partial-0.33", "seed-bad-0.0", "duplicate-call-is-extra", "nothing-nothing",
        "unexpected-call"])
def test_tool_selection_seed_examples(tools, run, expected, actual, want):
    r = run("tool_selection_accuracy", tools(expected, actual))
    assert r.score == pytest.approx(want, abs=0.005)


def test_tool_selection_without_expectations_is_null(tools, run):
    r = run("tool_selection_accuracy", tools(None, ["search"]))
    assert r.score is None and r.warning == Warning.MISSING_DATA


def test_tool_selection_reason_names_missing_and_extra(tools, run):
    r = run("tool_selection_accuracy", tools(["search", "calculator"], ["search", "weather"]))
    assert r.details["missing"] == ["calculator"] and r.details["unexpected"] == ["weather"]


@settings(max_examples=60, deadline=None)
@given(st.lists(NAMES, max_size=6), st.lists(NAMES, max_size=6), st.randoms())
def test_tool_selection_is_permutation_invariant_and_bounded(tools, run, expected, actual, rnd):
    a = run("tool_selection_accuracy", tools(expected, actual)).score
    shuffled_e, shuffled_a = list(expected), list(actual)
    rnd.shuffle(shuffled_e)
    rnd.shuffle(shuffled_a)
    b = run("tool_selection_accuracy", tools(shuffled_e, shuffled_a)).score
    assert a == pytest.approx(b) and 0.0 <= a <= 1.0


# --------------------------------------------------------------------------- sequence

@pytest.mark.parametrize("actual, want", [
    (["search", "parse", "save"], 1.0),
    (["search", "save", "parse"], 2 / 3),
    (["save", "search", "parse"], 2 / 3),
    (["save", "parse", "search"], 1 / 3),
    (["search", "parse", "save", "save"], 3 / 4),
    ([], 0.0),
], ids=["seed-good-1.0", "seed-partial-0.67", "rotated-lcs-2", "seed-bad-0.33", "extra-call", "no-calls"])
def test_tool_sequence_seed_examples(tools, run, actual, want):
    r = run("tool_sequence_correctness", tools(["search", "parse", "save"], actual))
    assert r.score == pytest.approx(want, abs=0.005)


def test_tool_sequence_seed_bad_example_value():
    # The seed prints 0.33 for [save, search, parse]; its LCS with [search, parse, save] is 2
    # (search, parse), so LCS / max(len) is 0.67. The 0.33 case is a reversed order.
    assert lcs_length(["search", "parse", "save"], ["save", "search", "parse"]) == 2
    assert lcs_length(["search", "parse", "save"], ["save", "parse", "search"]) == 1


def test_tool_sequence_order_any_ignores_order(tools, run):
    r = run("tool_sequence_correctness", tools(["search", "parse", "save"], ["save", "parse", "search"], order="any"))
    assert r.score == 1.0 and r.details["order_ignored"]


def test_tool_sequence_per_turn_segments(build, run, mk):
    t = build([
        {"input": "a", "tool_calls": [mk.call("b"), mk.call("a")],
         "expected": {"tool_calls": [mk.expected("a"), mk.expected("b")], "tool_order": "any"}},
        {"input": "b", "tool_calls": [mk.call("d"), mk.call("c")],
         "expected": {"tool_calls": [mk.expected("c"), mk.expected("d")]}},
    ])
    # turn 1 unordered: 2 of 2; turn 2 strict: LCS 1 of 2 -> 3 / 4
    assert run("tool_sequence_correctness", t).score == pytest.approx(0.75)


def test_tool_sequence_calls_in_turns_without_expectations_are_extra(build, run, mk):
    t = build([
        {"input": "a", "tool_calls": [mk.call("a")], "expected": {"tool_calls": [mk.expected("a")]}},
        {"input": "b", "tool_calls": [mk.call("x")]},
    ])
    assert run("tool_sequence_correctness", t).score == pytest.approx(0.5)


@settings(max_examples=60, deadline=None)
@given(st.lists(NAMES, max_size=6))
def test_tool_sequence_identical_is_one(tools, run, names):
    assert run("tool_sequence_correctness", tools(names, names)).score == 1.0


# --------------------------------------------------------------------------- parameters

@pytest.mark.parametrize("expected, actual, want", [
    ([("divide", {"dividend": 10, "divisor": 2})], [("divide", {"dividend": 10, "divisor": 2})], 1.0),
    ([("search", {"query": "paris", "limit": 10})], [("search", {"query": "paris"})], 0.5),
    ([("divide", {"dividend": 10, "divisor": 2})], [("divide", {"dividend": 2, "divisor": 10})], 0.0),
    ([("search", {"q": "a"})], [("weather", {"q": "a"})], 0.0),
    ([("search", {"q": "a"})], [("search", {"q": "a"}), ("search", {"q": "b"})], 0.5),
    ([("search", None)], [("search", {"anything": 1})], 1.0),
    ([("f", {"n": 1})], [("f", {"n": "1"})], 0.0),
    ([("f", {"n": 1})], [("f", {"n": 1.0})], 1.0),
    ([("f", {"flag": True})], [("f", {"flag": 1})], 0.0),
    ([("f", {"xs": [1, {"a": "b"}]})], [("f", {"xs": [1.0, {"a": "b"}]})], 1.0),
    ([("s", {"q": "a"}), ("s", {"q": "b"})], [("s", {"q": "b"}), ("s", {"q": "a"})], 1.0),
    ([("s", {"q": "a"}), ("t", {})], [("s", {"q": "a"})], 0.5),
    ([("s", {"q": "a"}), ("t", {}), ("u", {})], [("s", {"q": "a"}), ("x", {})], 1 / 3),
], ids=["seed-good-1.0", "seed-partial-0.5", "seed-bad-swapped-0.0", "name-not-called", "extra-call-scaled",
        "expected-args-none-any", "string-is-not-number", "int-equals-float", "bool-is-not-number",
        "nested-values", "same-name-any-order", "unmatched-expected-zero",
        "fewer-calls-not-inflated-uaef-bug"])
def test_parameter_quality_cases(tools, run, mk, expected, actual, want):
    exp = [mk.expected(n, a) for n, a in expected]
    act = [mk.call(n, a) for n, a in actual]
    r = run("parameter_quality", tools(exp, act))
    assert r.score == pytest.approx(want)


def test_parameter_quality_no_expected_calls_not_applicable(tools, run):
    r = run("parameter_quality", tools([], ["search"]))
    assert r.score is None and r.warning == Warning.NOT_APPLICABLE


def test_parameter_quality_missing_expectations(tools, run):
    assert run("parameter_quality", tools(None, ["search"])).warning == Warning.MISSING_DATA


@pytest.mark.parametrize("a, b, equal", [
    (1, 1.0, True), (1, "1", False), (True, 1, False), (None, None, True), ("a", "a", True),
    ({"a": [1, 2]}, {"a": [1, 2]}, True), ({"a": [1, 2]}, {"a": [2, 1]}, False), ([1], (1,), True),
    ({"a": 1}, {"a": 1, "b": 2}, False), (0, False, False),
], ids=lambda v: repr(v))
def test_values_equal(a, b, equal):
    assert values_equal(a, b) is equal


def test_key_score_union():
    assert key_score({"a": 1, "b": 2}, {"a": 1, "c": 3}) == pytest.approx(1 / 3)
    assert key_score({}, {}) == 1.0 and key_score(None, {"x": 1}) == 1.0


# --------------------------------------------------------------------------- MCP

TS = "2025-06-01T12:00:00Z"


@pytest.mark.parametrize("calls, want", [
    ([("search_docs", {"q": "test"}, TS)], 1.0),
    ([("search_docs", {"q": "a"}, TS), ("get_page", {}, TS), ("list_files", {}, TS), ("SearchDocs", {}, TS)], 0.75),
    ([("SearchDocs", {"q": "test"}, TS)], 0.0),
    ([("search_docs", {"q": "a"}, None)], 0.0),
    ([("search_docs", {"q": "a"}, "yesterday")], 0.0),
    ([("search-docs", {}, TS)], 0.0),
], ids=["seed-good-1.0", "seed-partial-0.75", "seed-bad-uppercase-0.0", "no-timestamp", "bad-timestamp",
        "kebab-name"])
def test_mcp_compliance_seed_examples_all_mcp(tools, run, mk, calls, want):
    act = [mk.call(n, a, **({"timestamp": ts} if ts else {})) for n, a, ts in calls]
    r = run("mcp_compliance", tools(None, act), all_mcp=True)
    assert r.score == pytest.approx(want)


def test_mcp_compliance_only_judges_mcp_tools(tools, run, mk):
    act = [mk.call("SearchDocs"), mk.call("mcp__files__read_file", {"path": "/a"}, timestamp=TS),
           mk.call("mcp__files__WriteFile", {}, timestamp=TS)]
    r = run("mcp_compliance", tools(None, act))
    assert r.score == pytest.approx(0.5)
    assert any("WriteFile" in e for e in r.evidence)


def test_mcp_compliance_not_applicable_without_mcp_tools(tools, run):
    r = run("mcp_compliance", tools(None, ["SearchDocs", "search"]))
    assert r.score is None and r.warning == Warning.NOT_APPLICABLE


def test_mcp_compliance_declared_tools(tools, run, mk):
    t = tools(None, [mk.call("lookup", timestamp=TS)], metadata={"mcp_tools": ["lookup"]})
    assert run("mcp_compliance", t).score == 1.0


@pytest.mark.parametrize("name, mcp", [
    ("mcp__github__create_issue", True), ("mcp_server_tool", True), ("mcp.fs.read", True), ("github__list", True),
    ("search", False), ("mcpserver", False), ("get_weather", False),
])
def test_is_mcp_tool(name, mcp):
    assert is_mcp_tool(name) is mcp


ARGS = st.dictionaries(st.sampled_from("abc"), st.one_of(st.integers(-3, 3), st.booleans(), st.text("xy", max_size=2),
                                                          st.none()), max_size=3)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(NAMES, ARGS), max_size=5), st.lists(st.tuples(NAMES, ARGS), max_size=5))
def test_parameter_quality_bounded_and_identity(tools, run, mk, expected, actual):
    exp = [mk.expected(n, a) for n, a in expected]
    r = run("parameter_quality", tools(exp, [mk.call(n, a) for n, a in actual]))
    assert r.score is None if not expected else 0.0 <= r.score <= 1.0
    if expected:
        same = run("parameter_quality", tools(exp, [mk.call(n, a) for n, a in expected]))
        assert same.score == 1.0
