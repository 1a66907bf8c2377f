"""Reading verdicts out of what judges actually write."""

from __future__ import annotations

import json
import re

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from judge_helpers import Score

from assay.judge import ParseError, extract_json, parse_verdict, repair_json

CASES = [
    ('{"score": 0.5, "reason": "ok"}', {"score": 0.5, "reason": "ok"}),
    ('```json\n{"score": 0.5, "reason": "ok"}\n```', {"score": 0.5, "reason": "ok"}),
    ('```\n{"score": 0.5, "reason": "ok"}\n```', {"score": 0.5, "reason": "ok"}),
    ('Sure. Here is my verdict:\n```json\n{"score": 1, "reason": "a"}\n```\nLet me know!', {"score": 1, "reason": "a"}),
    ('After careful thought {"score": 0.2, "reason": "b"} is my answer.', {"score": 0.2, "reason": "b"}),
    ('{"score": 0.3, "reason": "c",}', {"score": 0.3, "reason": "c"}),
    ('{"score": 0.3, "tags": ["x", "y",], "reason": "c"}', {"score": 0.3, "tags": ["x", "y"], "reason": "c"}),
    ('{"score": 1, "reason": "uses \\frac{1}{2} and \\sqrt{2}"}', {"score": 1, "reason": r"uses \frac{1}{2} and \sqrt{2}"}),
    ('{"score": 1, "reason": "\\alpha \\beta \\neq \\times \\text{x}"}',
     {"score": 1, "reason": r"\alpha \beta \neq \times \text{x}"}),
    ('{"score": 1, "reason": "line one\\nline two\\tend \\"quoted\\" \\u00e9"}',
     {"score": 1, "reason": 'line one\nline two\tend "quoted" é'}),
    ('{"score": 1, "reason": "raw\nnewline"}', {"score": 1, "reason": "raw\nnewline"}),
    ('<think>maybe {"score": 0}</think>{"score": 0.9, "reason": "d"}', {"score": 0.9, "reason": "d"}),
    ('I think {this} matters. {"score": 0.4, "reason": "brace } in string"}', {"score": 0.4, "reason": "brace } in string"}),
    ('{"score": 0.5, "reason": "ok"} and a second {"score": 0.1, "reason": "no"}', {"score": 0.1, "reason": "no"}),
]


@pytest.mark.parametrize("text,expected", CASES, ids=[
    "plain", "fenced-json", "fenced-bare", "prose-around-fence", "prose-around-object", "trailing-comma",
    "nested-trailing-comma", "latex-frac-sqrt", "latex-escapes-that-look-like-json", "real-escapes-kept",
    "raw-newline-in-string", "think-block", "braces-in-prose-and-strings", "last-object-wins"])
def test_extract_json(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text,message", [
    ("", "empty reply"),
    ("I cannot evaluate this.", "no JSON object"),
    ('{"score": 0.5, "reason": "unterminated', "no JSON object"),
    ("[1, 2, 3]", "no JSON object"),
], ids=["empty", "prose", "truncated", "array"])
def test_no_json_is_a_parse_error(text, message):
    with pytest.raises(ParseError, match=message):
        extract_json(text)


def test_schema_violation_names_the_fields():
    with pytest.raises(ParseError) as info:
        parse_verdict('{"score": 3, "reason": 4}', Score)
    assert "score" in str(info.value) and "reason" in str(info.value) and "Score" in str(info.value)


def test_repair_leaves_valid_json_alone():
    text = '{"a": "x, }", "b": [1, 2], "c": "\\\\frac"}'
    assert json.loads(repair_json(text)) == json.loads(text)


# The one deliberate ambiguity: a form feed or backspace followed by letters ("\\frac" sent with
# one backslash) and newline/tab/return followed by a LaTeX command name ("\\neq") read as LaTeX.
texts = st.text(st.characters(blacklist_characters="\x08\x0c"), max_size=12).filter(
    lambda s: not re.search(r"[\n\r\t][A-Za-z]", s))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=10)


@settings(deadline=None)  # timing varies on a shared CI box; correctness does not
@given(st.dictionaries(texts, json_values, max_size=5), st.sampled_from(["", "Verdict:\n", "ok "]),
       st.booleans())
def test_any_object_round_trips_through_prose_and_fences(obj, prefix, fenced):
    body = json.dumps(obj)
    text = f"{prefix}```json\n{body}\n```" if fenced else f"{prefix}{body}"
    assert extract_json(text) == obj


class Nested(pydantic.BaseModel):
    label: str
    items: list[int]


def test_parse_verdict_validates_nested_schemas():
    assert parse_verdict('```json\n{"label": "x", "items": [1, 2,]}\n```', Nested) == Nested(label="x", items=[1, 2])
