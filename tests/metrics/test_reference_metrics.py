"""Reference matchers: pure functions, level handling, and the metrics through the engine."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import assay
from assay import ConfigError
from assay.metrics.reference import (
    extract_numbers, normalise, numbers_match, numeric_score, parse_json_output, schema_errors, token_f1,
)
from assay.model import Warning


@pytest.mark.parametrize("text, want", [
    ("The Eiffel Tower!", "eiffel tower"), ("  a  cat,   an apple ", "cat apple"), ("PARIS.", "paris"),
    ("“Quoted” — text…", "quoted text"), ("\uff21\uff22\uff23", "abc"), ("", ""),
], ids=["article-punct", "whitespace", "case", "typographic", "fullwidth", "empty"])
def test_normalise(text, want):
    assert normalise(text) == want


@pytest.mark.parametrize("gold, pred, want", [
    ("Paris", "paris", 1.0), ("the cat sat", "cat sat down", 0.8), ("abc", "xyz", 0.0), ("", "", 1.0),
    ("a", "", 1.0), ("word", "", 0.0),
], ids=["same", "partial", "disjoint", "both-empty", "article-only-vs-empty", "one-empty"])
def test_token_f1(gold, pred, want):
    assert token_f1(gold, pred) == pytest.approx(want)


@pytest.mark.parametrize("text, want", [
    ("It costs 1,284.50 dollars", [1284.5]), ("5-7 business days", [5, 7]), ("-3 degrees", [-3]),
    ("1e3 and .5", [1000, 0.5]), ("version v2 of A4 paper", []), ("2025-06-01", [2025, 6, 1]),
], ids=["thousands", "range", "negative", "exp-and-leading-dot", "not-in-words", "date"])
def test_extract_numbers(text, want):
    assert extract_numbers(text) == pytest.approx(want)


def test_numbers_match_and_score():
    assert numbers_match("42", "The answer is 42.")
    assert numbers_match("3.14", "about 3.1400001", rel_tol=1e-6)
    assert not numbers_match("42", "forty-two")
    assert not numbers_match("no numbers", "42")
    assert numeric_score("2 and 3", "3 only") == 0.5
    assert numeric_score("7", "first 7 then 8", mode="last") == 0.0
    assert numeric_score("7", "8 then 7", mode="last") == 1.0
    assert numeric_score("2 2", "2") == 0.5  # each actual number used once


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=80), st.text(max_size=80))
def test_token_f1_bounded_symmetric_and_reflexive(a, b):
    f = token_f1(a, b)
    assert 0.0 <= f <= 1.0 and f == pytest.approx(token_f1(b, a)) and token_f1(a, a) == 1.0


def trace(answer: str | None, expected: str, **kw) -> dict:
    return {"id": "r", "turns": [{"input": "q", "output": answer}], "expected": {"output": expected}, **kw}


@pytest.mark.parametrize("name, answer, expected, want", [
    ("exact_match", "The Paris.", "paris", 1.0),
    ("exact_match", "Paris, France", "Paris", 0.0),
    ("token_f1", "Paris is the capital", "the capital is Paris", 1.0),
    ("numeric_match", "Total: $1,284.50", "1284.5", 1.0),
    ("contains", "It is PARIS, of course", "paris", 1.0),
    ("contains", "It is Lyon", "paris", 0.0),
], ids=["exact-normalised", "exact-miss", "f1-reordered", "numeric-formatted", "contains-case", "contains-miss"])
def test_reference_metrics_final_answer(run, name, answer, expected, want):
    assert run(name, trace(answer, expected)).score == pytest.approx(want)


def test_per_turn_expectations_take_precedence(run):
    t = {"id": "r", "turns": [{"input": "a", "output": "4", "expected": {"output": "4"}},
                              {"input": "b", "output": "5", "expected": {"output": "6"}},
                              {"input": "c", "output": "whatever"}],
         "expected": {"output": "ignored when turns carry expectations"}}
    r = run("exact_match", t)
    assert r.score == 0.5 and r.details["per_turn"] == [1.0, 0.0]


def test_missing_answer_and_missing_reference(run, build):
    assert run("exact_match", trace(None, "x")).warning == Warning.MISSING_DATA
    assert run("token_f1", build()).warning == Warning.MISSING_DATA
    assert run("numeric_match", trace("42", "no digits")).warning == Warning.NOT_APPLICABLE


def test_exact_match_without_normalisation(run):
    assert run("exact_match", trace(" Paris ", "Paris"), normalize=False).score == 1.0
    assert run("exact_match", trace("paris", "Paris"), normalize=False).score == 0.0


def test_contains_values_param(run):
    r = run("contains", trace("Refunds take 5-7 days via card", "x"), values=["5-7 days", "bank transfer"])
    assert r.score == 0.5 and r.details["missing"] == ["bank transfer"]
    assert run("contains", trace("ABC", "x"), values=["abc"], case_sensitive=True).score == 0.0


def test_regex_match(run):
    assert run("regex_match", trace("Order A-12345 shipped", "x"), pattern=r"A-\d{5}").score == 1.0
    assert run("regex_match", trace("Order A-12345 shipped", "x"), pattern=r"A-\d+", fullmatch=True).score == 0.0
    assert run("regex_match", trace("YES", "x"), pattern="yes", flags="i").score == 1.0
    with pytest.raises(ConfigError, match="needs a pattern"):
        run("regex_match", trace("x", "x"))
    with pytest.raises(ConfigError, match="bad pattern"):
        run("regex_match", trace("x", "x"), pattern="(")


SCHEMA = {"type": "object", "required": ["name", "age"], "additionalProperties": False,
          "properties": {"name": {"type": "string", "minLength": 1}, "age": {"type": "integer", "minimum": 0},
                         "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": True},
                         "kind": {"$ref": "#/$defs/kind"}},
          "$defs": {"kind": {"anyOf": [{"const": "x"}, {"type": "null"}]}}}


@pytest.mark.parametrize("value, valid", [
    ({"name": "Ann", "age": 3}, True),
    ({"name": "Ann", "age": 3.0, "tags": ["a", "b"], "kind": None}, True),
    ({"name": "Ann"}, False),
    ({"name": "Ann", "age": -1}, False),
    ({"name": "Ann", "age": True}, False),
    ({"name": "", "age": 1}, False),
    ({"name": "Ann", "age": 1, "extra": 1}, False),
    ({"name": "Ann", "age": 1, "tags": ["a", "a"]}, False),
    ({"name": "Ann", "age": 1, "tags": ["c"]}, False),
    ({"name": "Ann", "age": 1, "kind": "y"}, False),
    ([1, 2], False),
], ids=["minimal", "full", "missing-required", "below-minimum", "bool-not-integer", "too-short", "extra-prop",
        "not-unique", "not-in-enum", "ref-anyof", "not-object"])
def test_schema_subset(value, valid):
    assert (schema_errors(value, SCHEMA) == []) is valid


@settings(max_examples=60, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
                    max_leaves=10))
def test_schema_subset_agrees_with_jsonschema(value):
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"anyOf": [{"type": "object", "additionalProperties": {"type": ["string", "integer", "null"]}},
                        {"type": "array", "maxItems": 2, "items": {"not": {"type": "boolean"}}},
                        {"type": "number", "minimum": 0}]}
    theirs = not list(jsonschema.Draft202012Validator(schema).iter_errors(value))
    assert (schema_errors(value, schema) == []) is theirs


def test_json_schema_valid_metric(run, tmp_path):
    ok = trace("```json\n" + json.dumps({"name": "Ann", "age": 3}) + "\n```", "x")
    assert run("json_schema_valid", ok, schema=json.dumps(SCHEMA)).score == 1.0
    bad = run("json_schema_valid", trace('{"name": "Ann"}', "x"), schema=SCHEMA)
    assert bad.score == 0.0 and "missing required property 'age'" in bad.evidence[0]
    assert run("json_schema_valid", trace("not json", "x"), schema=SCHEMA).score == 0.0
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    assert run("json_schema_valid", ok, schema=str(path)).score == 1.0
    with pytest.raises(ConfigError, match="needs a schema"):
        run("json_schema_valid", ok)


def test_json_schema_beyond_subset_uses_jsonschema(run):
    pytest.importorskip("jsonschema")
    schema = {"type": "object", "patternProperties": {"^x": {"type": "integer"}}}
    assert run("json_schema_valid", trace('{"x1": "no"}', "x"), schema=schema).score == 0.0


def test_parse_json_output_fence():
    assert parse_json_output('```\n{"a": 1}\n```') == {"a": 1}
    with pytest.raises(ValueError):
        parse_json_output("{nope")


def test_reference_metrics_through_evaluate():
    r = assay.evaluate([trace("The answer is 42", "42")],
                       ["exact_match", "numeric_match:rel_tol=0.01", "token_f1:threshold=0.2", "contains"])
    m = r.traces[0].metrics
    assert m["exact_match"].score == 0.0 and m["numeric_match"].score == 1.0
    assert m["token_f1"].passed is True and m["contains"].score == 1.0
    assert r.traces[0].dimensions["response_quality"].n == 4
