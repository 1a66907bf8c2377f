"""Stickler-style structured output metrics and the assignment solver."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics.structured import confusion, levenshtein_similarity, linear_sum_assignment, similarity
from assay.model import Warning


def brute_force(cost):
    n, m = len(cost), len(cost[0])
    best = float("inf")
    if n <= m:
        for perm in itertools.permutations(range(m), n):
            best = min(best, sum(cost[i][j] for i, j in enumerate(perm)))
    else:
        for perm in itertools.permutations(range(n), m):
            best = min(best, sum(cost[i][j] for j, i in enumerate(perm)))
    return best


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 5).flatmap(lambda n: st.integers(1, 5).flatmap(
    lambda m: st.lists(st.lists(st.floats(0, 10, allow_nan=False), min_size=m, max_size=m), min_size=n, max_size=n))))
def test_assignment_is_optimal(cost):
    pairs = linear_sum_assignment(cost)
    assert len(pairs) == min(len(cost), len(cost[0]))
    assert len({i for i, _ in pairs}) == len(pairs) == len({j for _, j in pairs})
    assert sum(cost[i][j] for i, j in pairs) == pytest.approx(brute_force(cost))


def test_stickler_doc_example_counts():
    gt = {"name": "John", "age": 30, "address": "123 Main St"}
    est = {"name": "John", "age": 31, "phone": "555-1234"}
    assert confusion(gt, est) == {"tp": 1, "fa": 1, "fd": 1, "fn": 1, "tn": 0}


def test_stickler_list_example_counts():
    assert confusion(["red", "blue", "green"], ["red", "yellow", "orange", "blue"])["tp"] == 2
    c = confusion(["apple", "banana", "cherry"], ["aple", "bananna", "cheery"])
    assert c["tp"] == 3 and c["fd"] == 0


def test_similarity_lists_are_order_free_and_nested():
    gt = {"items": [{"sku": "A", "qty": 2}, {"sku": "B", "qty": 1}], "total": 30}
    est = {"items": [{"sku": "B", "qty": 1}, {"sku": "A", "qty": 2}], "total": "30"}
    assert similarity(gt, est) == 1.0
    assert similarity({"a": 1}, {"a": 1, "b": 2}) == 0.5
    assert similarity({"a": None}, {"a": ""}) == 1.0
    assert levenshtein_similarity("kitten", "sitting") == pytest.approx(1 - 3 / 7)


def t(answer, expected):
    return {"id": "s", "turns": [{"input": "extract", "output": answer}], "expected": {"output": expected}}


def test_metrics_on_doc_example(run):
    trace = t(json.dumps({"name": "John", "age": 31, "phone": "555-1234"}),
              json.dumps({"name": "John", "age": 30, "address": "123 Main St"}))
    assert run("stickler_field_precision", trace).score == pytest.approx(1 / 3)
    assert run("stickler_field_recall", trace).score == pytest.approx(1 / 2)
    assert run("stickler_field_f1", trace).score == pytest.approx(0.4)
    far = run("stickler_false_alarm_rate", trace)
    assert far.details["rate"] == pytest.approx(1 / 3) and far.score == pytest.approx(2 / 3)
    assert run("stickler_false_discovery_rate", trace).details["rate"] == pytest.approx(1 / 3)
    assert run("stickler_overall_score", trace).score == pytest.approx(1 / 4)


def test_field_weights(run):
    trace = t('{"a": 1, "b": 2}', '{"a": 1, "b": 3}')
    assert run("stickler_overall_score", trace).score == 0.5
    assert run("stickler_overall_score", trace, field_weights={"a": 3}).score == 0.75


def test_unparseable_answer_and_expected(run):
    bad = run("stickler_field_recall", t("sorry, no JSON", '{"a": 1}'))
    assert bad.score == 0.0 and "not valid JSON" in bad.reason
    assert run("stickler_field_precision", t("sorry", '{"a": 1}')).score == 0.0
    assert run("stickler_false_alarm_rate", t("sorry", '{"a": 1}')).warning == Warning.NOT_APPLICABLE
    assert run("stickler_overall_score", t("{}", "not json")).warning == Warning.INVALID_DATA
    assert run("stickler_overall_score", {"id": "s", "turns": [{"output": "{}"}]}).warning == Warning.MISSING_DATA


JSON = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.text("abc", max_size=4),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from("xyz"), c, max_size=3),
                    max_leaves=8)


@settings(max_examples=100, deadline=None)
@given(JSON, JSON)
def test_scores_bounded_and_identity(run, a, b):
    trace = t(json.dumps(b), json.dumps(a))
    for name in ("stickler_overall_score", "stickler_field_precision", "stickler_field_recall",
                 "stickler_field_f1", "stickler_false_alarm_rate", "stickler_false_discovery_rate"):
        s = run(name, trace).score
        assert s is None or 0.0 <= s <= 1.0
    assert similarity(a, a) == 1.0
    c = confusion(a, a)
    assert c["fa"] == c["fd"] == c["fn"] == 0
