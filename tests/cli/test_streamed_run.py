"""``assay run`` streams: results are not kept, inputs are read once, the table reads bounded data."""

from __future__ import annotations

import hashlib
import json

from click.testing import CliRunner

from assay.cli import main
from assay.store import load_run


def trace(i: int, ok: bool) -> dict:
    return {"id": f"t{i}", "turns": [{"input": "q", "output": "a", "tool_calls": [{"name": "search" if ok else "x"}]}],
            "expected": {"tool_calls": [{"name": "search"}]}}


def test_table_counts_every_failure_but_lists_ten_and_inputs_are_hashed_while_read(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps(trace(i, i % 2 == 0)) + "\n" for i in range(30)))
    store = tmp_path / "s.sqlite3"
    r = CliRunner().invoke(main, ["run", str(p), "-m", "tool_selection_accuracy", "--store", str(store)],
                           catch_exceptions=False)
    assert r.exit_code == 1
    assert "15 trace(s) failed" in r.stdout and "... and 5 more" in r.stdout
    listed = [line.split()[0] for line in r.stdout.splitlines() if line.startswith("  t")]
    assert listed == [f"t{i}" for i in range(1, 21, 2)]  # the first ten, in input order
    stored = load_run("latest", store=store)
    assert stored.run["input_files"] == [{"path": str(p), "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
                                          "bytes": p.stat().st_size}]
    assert len(stored.traces) == 30 and not stored.passed


def test_output_format_follows_the_suffix(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text(json.dumps(trace(1, True)) + "\n")
    for name, first in (("r.jsonl", '{"id":"t1"'), ("r.csv", "trace_id,"), ("r.xml", "<?xml"), ("r.json", "{\n")):
        out = tmp_path / name
        r = CliRunner().invoke(main, ["run", str(p), "-m", "tool_selection_accuracy", "--no-store", "-o", str(out)],
                               catch_exceptions=False)
        assert r.exit_code == 0, r.output
        assert out.read_text().startswith(first), (name, out.read_text()[:40])
