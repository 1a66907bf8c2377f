"""``assay.evaluate(outputs=[...], config=...)``: the files ``assay run -o`` writes, from Python."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import assay
from assay.engine._sinks import Sink

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces.jsonl"


def test_evaluate_writes_each_output_by_suffix_and_feeds_given_sinks(tmp_path):
    seen = []

    class Count(Sink):
        def add(self, item):
            seen.append(item)

    paths = [tmp_path / n for n in ("r.jsonl", "r.csv", "r.json", "r.xml", "r.html")]
    result = assay.evaluate(str(EXAMPLES), ["tool_selection_accuracy"], outputs=[*paths, Count()])
    n = len(result.traces)
    lines = paths[0].read_text().splitlines()
    assert len(lines) == n + 1 and json.loads(lines[-1])["run"]["n_traces"] == n  # one line per trace, then the summary
    rows = list(csv.DictReader(paths[1].open()))
    assert len(rows) == n and {r["metric"] for r in rows} == {"tool_selection_accuracy"}
    assert {r["dimension"] for r in rows} == {"tool_calling"}
    assert len(json.loads(paths[2].read_text())["traces"]) == n
    junit = paths[3].read_text()
    assert junit.startswith("<?xml") and junit.count("<testcase") >= n  # a case per trace x metric, and per dimension
    assert "tool_selection_accuracy" in paths[4].read_text()
    assert len(seen) == n


def test_evaluate_refuses_an_output_it_cannot_write_before_scoring(tmp_path):
    with pytest.raises(assay.ConfigError, match="results.txt"):
        assay.evaluate(str(EXAMPLES), ["tool_selection_accuracy"], outputs=[tmp_path / "results.txt"])
    assert not (tmp_path / "results.txt").exists()


def test_evaluate_starts_from_a_config_file(tmp_path):
    (tmp_path / "assay.toml").write_text('metrics = ["tool_selection_accuracy"]\n[thresholds]\ntool_calling = 0.99\n')
    result = assay.evaluate(str(EXAMPLES), config=tmp_path / "assay.toml")
    assert list(result.summary) == ["tool_selection_accuracy"]
    assert result.run["dimension_thresholds"]["tool_calling"] == 0.99
    plain = assay.evaluate(str(EXAMPLES), ["tool_selection_accuracy"])
    assert plain.run["dimension_thresholds"]["tool_calling"] != 0.99
