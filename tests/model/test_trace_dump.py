"""Trace.model_dump honours pydantic's include/exclude forms instead of ignoring them."""

from __future__ import annotations

import json

import pytest

from assay import Trace

TRACE = Trace.model_validate({
    "id": "t1", "task_id": "refund", "metadata": {"team": "support"},
    "turns": [
        {"input": "where is my order?", "output": "it shipped", "latency_ms": 900,
         "tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}, "result": {"status": "shipped"}}]},
        {"input": "thanks", "output": "you're welcome", "latency_ms": 300},
    ],
})


def test_plain_dump_round_trips():
    assert Trace.model_validate(TRACE.model_dump()) == TRACE


def test_exclude_top_level_fields():
    data = TRACE.model_dump(exclude={"metadata", "task_id"})
    assert "metadata" not in data and "task_id" not in data and data["id"] == "t1"


def test_include_top_level_fields():
    assert TRACE.model_dump(include={"id", "task_id"}) == {"id": "t1", "task_id": "refund"}


def test_nested_exclude_through_lists():
    data = TRACE.model_dump(exclude={"turns": {"__all__": {"latency_ms": True, "tool_calls": {"__all__": {"result"}}}}})
    assert all("latency_ms" not in t for t in data["turns"])
    assert data["turns"][0]["tool_calls"] == [{"name": "lookup_order", "arguments": {"order_id": "A1"}}]
    assert data["turns"][1]["output"] == "you're welcome"


def test_nested_include_by_index():
    data = TRACE.model_dump(include={"id": True, "turns": {1: {"output"}}})
    assert data == {"id": "t1", "turns": [{"output": "you're welcome"}]}


def test_pydantic_style_keywords_accepted_and_json_dump_matches():
    assert TRACE.model_dump(mode="json", exclude_none=True) == TRACE.model_dump()
    assert json.loads(TRACE.model_dump_json(exclude={"metadata"})) == TRACE.model_dump(exclude={"metadata"})


def test_unsupported_options_are_errors_not_silence():
    with pytest.raises(ValueError, match="mode"):
        TRACE.model_dump(mode="yaml")
    with pytest.raises(ValueError, match="exclude_defaults"):
        TRACE.model_dump(exclude_defaults=False)
    with pytest.raises(TypeError):
        TRACE.model_dump(by_alias=True)
    with pytest.raises(TypeError, match="set or a dict"):
        TRACE.model_dump(exclude="metadata")
