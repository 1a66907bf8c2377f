"""RunResult's repr is one short line, whatever the run's size."""

from __future__ import annotations

import json

from assay import evaluate
from assay.model import RunResult


def test_repr_is_one_short_line(tmp_path):
    row = {"turns": [{"input": "q", "output": "x" * 500, "latency_ms": 100,
                      "tool_calls": [{"name": "search", "arguments": {"q": "x" * 200}}]}],
           "expected": {"tool_calls": [{"name": "search"}]}}
    (tmp_path / "t.jsonl").write_text("".join(json.dumps({"id": f"t{i}", **row}) + "\n" for i in range(300)))
    result = evaluate(str(tmp_path / "t.jsonl"))
    text = repr(result)
    assert "\n" not in text and len(text) < 300
    assert text.startswith("<RunResult passed: 300 traces (300 passed, 0 failed), ")
    assert f"{len(result.summary)} metrics (pass rate " in text and "more)" in text


def test_repr_of_an_empty_run():
    assert repr(RunResult(traces=[], summary={})) == "<RunResult could_not_evaluate: 0 traces (0 passed, 0 failed), 0 metrics>"  # nothing scored
