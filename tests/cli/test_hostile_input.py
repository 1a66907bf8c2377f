"""Hostile input through the CLI: one line per bad record, every writer works, no traceback."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def good(i: int) -> dict:
    return {"id": f"t{i}", "turns": [{"input": "hi", "output": "hello", "tool_calls": [{"name": "a"}]}],
            "expected": {"tool_calls": [{"name": "a"}]}}


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    p = tmp_path / "h.jsonl"
    p.write_bytes(b"# exported\n" + json.dumps(good(1)).encode() + b"\n"
                  + b'{"id": "s\\ud800", "turns": [{"input": "x"}]}\n'
                  + b'{"id": "k", "turns": [{"input": "x"}], "metadata": {"\\udfff": "\xff"}}\n'
                  + b'{"id": "d", "turns": [{"input": "x"}], "metadata": {"x": ' + b"[" * 5000 + b"]" * 5000 + b"}}\n"
                  + json.dumps(good(2)).encode() + b"\n")
    return p


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "junit"])
def test_every_writer_survives_bad_text_and_deep_records(tmp_path: Path, hostile: Path, fmt: str) -> None:
    out, html = tmp_path / f"out.{fmt}", tmp_path / "r.html"
    r = invoke("run", str(hostile), "-f", fmt, "-o", str(out), "--html", str(html), "--no-store")
    assert r.exit_code == 2, r.output  # bad input records: exit 2, the good ones scored
    text = out.read_text(encoding="utf-8")
    if fmt == "json":
        assert [t["id"] for t in json.loads(text)["traces"]] == ["t1", "t2"]
    elif fmt == "jsonl":
        assert [json.loads(x).get("id") for x in text.splitlines()][:2] == ["t1", "t2"]
    elif fmt == "csv":
        assert {row["trace_id"] for row in csv.DictReader(text.splitlines())} == {"t1", "t2"}
    else:
        ET.fromstring(text)
    html.read_text(encoding="utf-8")
    for where in ("h.jsonl:1:", "h.jsonl:3: id: lone surrogate", "h.jsonl:4: not valid UTF-8: byte 0xff",
                  "h.jsonl:5: nested deeper than 256 levels"):
        assert where in r.output
    assert "Traceback" not in r.output


def test_replace_keeps_the_records_and_writes_them(tmp_path: Path, hostile: Path) -> None:
    out = tmp_path / "out.json"
    r = invoke("run", str(hostile), "--on-bad-text", "replace", "-o", str(out), "--no-store")
    ids = [t["id"] for t in json.loads(out.read_text(encoding="utf-8"))["traces"]]
    assert ids == ["t1", "s\ufffd", "k", "t2"] and r.exit_code == 2  # the comment and the deep line stay bad


def test_validate_names_each_bad_line_and_counts_the_good(hostile: Path) -> None:
    r = invoke("validate", str(hostile))
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert [x.split(":")[1] for x in lines[:-2]] == ["1", "3", "4", "5"]
    assert lines[-2].endswith(": read as assay (2 traces)")
    assert lines[-1] == "2 valid trace(s), 4 invalid record(s)"
    assert invoke("validate", str(hostile), "--max-depth", "100000").exit_code == 2  # out of range: usage error


def test_control_characters_in_ids_names_and_tags_never_reach_the_terminal(tmp_path: Path) -> None:
    """Under a pseudo-terminal: ESC sequences in a trace id, a run name and a tag are printed escaped."""
    from tests.support.cli import cli_env, run_pty

    evil = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil"
    p = tmp_path / "in.jsonl"
    p.write_text(json.dumps({"id": f"t-{evil}", "turns": [{"input": "q", "output": "a", "tool_calls": [
        {"name": "x"}]}], "expected": {"tool_calls": [{"name": "search"}]}}) + "\n")
    env = cli_env(tmp_path)
    outputs = [run_pty(["run", str(p), "-m", "tool_selection_accuracy", "--name", f"n-{evil}", "--tag",
                        f"k=v-{evil}"], env)]
    outputs += [run_pty(cmd, env) for cmd in (["runs"], ["runs", "show", "latest"])]
    assert outputs[0].returncode == 1
    for out in outputs:
        for raw in ("\x1b]0;", "\x07", "\x1b[2J", "\x9b", "\u202e"):
            assert raw not in out.output, (raw, out.output)
    assert "t-\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eevil" in outputs[0].output  # the failed list shows it escaped
    assert "\\x1b]0;pwned" in outputs[1].output + outputs[2].output  # the run's name and tags too
    assert "n-\\x1b" in outputs[2].output and "k=v-\\x1b" in outputs[2].output
