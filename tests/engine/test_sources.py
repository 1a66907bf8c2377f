"""What evaluate() accepts as its traces: every shape scores every trace, generators included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import assay

EXAMPLES = Path(__file__).parents[2] / "examples" / "traces.jsonl"
RECORDS = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]
IDS = [r["id"] for r in RECORDS]
METRICS = ["tool_selection_accuracy"]


@pytest.mark.parametrize("shape", ["list", "tuple", "generator", "iterator", "map", "traces-generator"])
def test_every_trace_is_scored_whatever_the_iterable(shape):
    source = {
        "list": lambda: list(RECORDS),
        "tuple": lambda: tuple(RECORDS),
        "generator": lambda: (r for r in RECORDS),
        "iterator": lambda: iter(RECORDS),
        "map": lambda: map(dict, RECORDS),
        "traces-generator": lambda: (assay.Trace.model_validate(r) for r in RECORDS),
    }[shape]()
    result = assay.evaluate(source, METRICS)
    assert [t.id for t in result.traces] == IDS


@pytest.mark.parametrize("source", [
    lambda: iter([str(EXAMPLES)]),
    lambda: (p for p in [EXAMPLES]),
    lambda: [EXAMPLES.as_posix()],
])
def test_paths_from_any_iterable_are_read_as_files(source):
    result = assay.evaluate(source(), METRICS)
    assert [t.id for t in result.traces] == IDS


def test_an_empty_generator_is_an_empty_run_not_an_error():
    result = assay.evaluate((r for r in []), METRICS)
    assert result.traces == [] and result.status == "could_not_evaluate"


def test_a_generator_of_bad_items_names_the_first_one():
    with pytest.raises(assay.ConfigError, match=r"<input>\[0\]: expected a Trace"):
        assay.evaluate((x for x in [3, 4]), METRICS)
