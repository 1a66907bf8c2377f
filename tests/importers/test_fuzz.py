"""Whatever a record holds, an importer yields traces or issues: it never raises."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.importers import importers
from assay.model import InputIssue, Trace

from ._helpers import DATA

SOURCES = {
    "assay": "native_traces.jsonl", "otel": "otel_agent.json", "openinference": "phoenix_spans.json",
    "uaef": "uaef_cases.json", "fair_forge": "fair_forge_datasets.json", "eval_lib": "eval_lib_cases.jsonl",
    "deepeval": "deepeval_cases.json", "langchain": "langchain_conversations.jsonl",
}


def _records(name: str) -> list[Any]:
    text = (DATA / name).read_text()
    try:
        doc = json.loads(text)
    except ValueError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if isinstance(doc, dict) and "test_cases" in doc:
        return doc["test_cases"]
    return doc if isinstance(doc, list) else [doc]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, prefix + (i,))
    return out


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replace(copy[head], rest, new)
    return copy


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**20) | st.floats(allow_nan=False) | st.text(max_size=6)
    | st.sampled_from(["", "{", "[1]", '{"a": 1}', "2026-01-01T00:00:00Z", "user", "assistant", "tool", "ERROR"]),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=4)


@pytest.mark.parametrize("fmt", sorted(SOURCES))
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_records_never_raise(fmt: str, data: st.DataObject) -> None:
    records = _records(SOURCES[fmt])
    record = data.draw(st.sampled_from(records))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(record)))
        record = _replace(record, path, data.draw(_json))
    body = (json.dumps({"test_cases": [record]}) if fmt == "uaef" and data.draw(st.booleans()) else json.dumps(record))
    out = list(importers()[fmt].read(io.BufferedReader(io.BytesIO(body.encode() + b"\n")), "fuzz.json"))
    assert all(isinstance(x, (Trace, InputIssue)) for _, x in out)
