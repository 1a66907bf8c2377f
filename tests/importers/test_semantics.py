"""Schema semantics: null means absent, typos get a suggestion, impossible values are flagged, duplicate ids warned."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

import assay
from assay.cli import main
from assay.errors import InputWarning
from assay.importers import read_traces
from assay.model import Trace, negative_values

from ._helpers import read_all


def line(obj: object) -> str:
    return json.dumps(obj) + "\n"


NULLS = {"id": "n", "turns": [{"input": "a", "tool_calls": [{"name": "x", "arguments": None, "result": None}],
                               "context": None, "usage": None}],
         "agents": None, "handoffs": None, "metadata": None,
         "expected": {"success_criteria": None, "tool_order": None, "tool_calls": [{"name": "x", "arguments": None}]}}


@pytest.mark.parametrize("how", ["json", "python"])
def test_null_means_absent_for_optional_fields(how: str) -> None:
    t = Trace.model_validate_json(json.dumps(NULLS)) if how == "json" else Trace.model_validate(NULLS)
    turn = t.turns[0]
    assert turn.tool_calls[0].arguments == {} and turn.context == [] and t.agents == {} and t.handoffs == []
    assert t.metadata == {} and t.expected.success_criteria == [] and t.expected.tool_order == "strict"
    assert t.expected.tool_calls[0].arguments is None  # null there already meant 'any arguments'
    with_nulls = Trace.model_validate({"id": "m", "turns": [{"input": "a"}], "metadata": {"k": None}})
    assert with_nulls.metadata == {"k": None}  # user data keeps its nulls


def test_null_for_a_required_field_is_still_an_error(in_tmp: Path) -> None:
    Path("t.jsonl").write_text(line({"id": None, "turns": [{"input": "a"}]})
                               + line({"id": "x", "turns": [{"input": "a", "tool_calls": [{"name": None}]}]}))
    assert [str(x) for _, x in read_all("t.jsonl")] == [
        "t.jsonl:1: id: expected an integer or a string, got null",
        "t.jsonl:2: turns[0].tool_calls[0].name: expected a string, got null"]


@pytest.mark.parametrize("record, expected", [
    ({"turns": [{"input": "a", "outptu": "x"}]}, "turns[0].outptu: unknown field (did you mean 'output'?"),
    ({"turns": [{"input": "a", "tool_calls": [{"name": "x", "argument": {}}]}]},
     "turns[0].tool_calls[0].argument: unknown field (did you mean 'arguments'?"),
    ({"turns": [{"input": "a"}], "expected": {"tool_call": []}}, "expected.tool_call: unknown field (did you mean 'tool_calls'?"),
    ({"turns": [{"input": "a"}], "agents": {"b": {"turns": [{"inptu": "x"}]}}}, "turns[0].inptu: unknown field (did you mean 'input'?"),
    ({"turns": [{"input": "a"}], "zzz": 1}, "zzz: unknown field (put custom data under 'metadata')"),
    ({"input": "q", "output": "a"}, 'input: unknown field (a turn\'s field: write turns: [{"input": "...", "output"'),
], ids=["turn", "tool-call", "expected", "agent", "no-match", "flat-turn"])
def test_unknown_fields_get_the_closest_name(in_tmp: Path, record: dict, expected: str) -> None:
    Path("t.jsonl").write_text(line({"id": "a", **record}))
    [(_, issue)] = read_all("t.jsonl", input_format="assay")
    assert expected in str(issue)


def test_negative_values_are_found_and_invalid_for_the_metrics_that_read_them(in_tmp: Path) -> None:
    t = Trace.model_validate({"id": "a", "throughput_rps": -1,
                              "turns": [{"input": "a", "latency_ms": -50, "usage": {"input_tokens": -3, "cost_usd": 0.5}},
                                        {"input": "b", "latency_ms": 100, "usage": {"input_tokens": 10, "cost_usd": -1}}]})
    assert negative_values(t) == [("throughput_rps", -1), ("turns[0].latency_ms", -50),
                                  ("turns[0].usage.input_tokens", -3), ("turns[1].usage.cost_usd", -1)]
    result = assay.Evaluation(["latency_score", "token_efficiency", "cost_efficiency", "throughput"]).run([t])
    got = {name: (m.score, m.warning) for name, m in result.traces[0].metrics.items()}
    assert all(score is None and str(w) == "invalid_data" for score, w in got.values()), got  # -50 + 100 hides nothing


def test_validate_warns_about_negative_values_without_failing(in_tmp: Path) -> None:
    Path("t.jsonl").write_text(line({"id": "a", "turns": [{"input": "a"}], "latency_ms": -5}))
    r = CliRunner().invoke(main, ["validate", "t.jsonl"], catch_exceptions=False)
    assert r.exit_code == 0
    assert "Warning: t.jsonl:1: latency_ms: negative (-5.0); the metrics that read it score invalid_data" in r.output


def test_duplicate_ids_are_warned_with_both_locations(in_tmp: Path) -> None:
    rows = [{"id": i, "turns": [{"input": "a"}]} for i in ("a", "b", "a", "c")]
    Path("x.jsonl").write_text("".join(line(r) for r in rows))
    Path("y.jsonl").write_text(line(rows[1]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids = [t.id for _, t in read_traces(["x.jsonl", "y.jsonl"])]
    assert ids == ["a", "b", "a", "c", "b"]  # nothing dropped
    assert [str(w.message) for w in caught if issubclass(w.category, InputWarning)] == [
        "x.jsonl:3: duplicate trace id 'a', first at x.jsonl:1; results and comparisons will hold both",
        "y.jsonl:1: duplicate trace id 'b', first at x.jsonl:2; results and comparisons will hold both"]
    r = CliRunner().invoke(main, ["validate", "x.jsonl", "y.jsonl"], catch_exceptions=False)
    assert "Warning: x.jsonl:3: duplicate trace id 'a', first at x.jsonl:1" in r.output and r.exit_code == 0


def test_duplicates_found_across_scan_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The report scans the stored hashes a block at a time: repeats in other blocks, a third occurrence
    and filter-bit collisions between different ids (candidates that are no duplicates) all read right."""
    from assay.importers import _duplicates

    monkeypatch.setattr(_duplicates, "_SCAN", 3)
    monkeypatch.setattr(_duplicates, "_BITS", 8)  # 8 filter bits: most ids collide without being equal
    d = _duplicates.DuplicateIds()
    d.source("x.jsonl")
    for n, i in enumerate(["a", "b", "c", "d", "a", "e", "f", "g", "b", "h", "a"], 1):
        d.add(i, n)
    assert d.report() == [
        "x.jsonl:5: duplicate trace id 'a', first at x.jsonl:1; results and comparisons will hold both",
        "x.jsonl:9: duplicate trace id 'b', first at x.jsonl:2; results and comparisons will hold both",
        "x.jsonl:11: duplicate trace id 'a', first at x.jsonl:1; results and comparisons will hold both"]


def test_many_duplicates_are_summarised(in_tmp: Path) -> None:
    Path("x.jsonl").write_text("".join(line({"id": f"t{i % 30}", "turns": [{"input": "a"}]}) for i in range(90)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        list(read_traces("x.jsonl"))
    texts = [str(w.message) for w in caught if issubclass(w.category, InputWarning)]
    assert len(texts) == 21 and texts[-1] == "... and 40 more duplicate trace ids"
    assert texts[0] == "x.jsonl:31: duplicate trace id 't0', first at x.jsonl:1; results and comparisons will hold both"
