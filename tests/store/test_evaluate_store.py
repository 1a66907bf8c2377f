"""``assay.evaluate(..., store=...)`` records the run as ``assay run`` does: listed, loadable, reportable."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import assay
from assay import ConfigError, Trace
from assay.cli import main
from assay.store import RunStore, load_run, load_traces


def trace(i: int, ok: bool = True) -> dict:
    return {"id": f"t{i}", "turns": [{"input": f"q{i}", "output": f"a{i}",
                                      "tool_calls": [{"name": "search" if ok else "weather"}]}],
            "expected": {"tool_calls": [{"name": "search"}]}}


def write(tmp_path: Path, rows: list) -> Path:
    p = tmp_path / "traces.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_store_true_records_the_run_in_the_default_store(tmp_path, monkeypatch):
    store = tmp_path / "runs.sqlite3"
    monkeypatch.setenv("ASSAY_STORE", str(store))
    p = write(tmp_path, [trace(1), trace(2, ok=False)])
    result = assay.evaluate(str(p), ["tool_selection_accuracy"], store=True, name="nightly", tags={"model": "v2"})
    run_id = result.run["run_id"]
    [info] = RunStore(store).runs()
    assert (info.id, info.status, info.n_traces, info.config["name"], info.config["tags"]) == (
        run_id, "completed", 2, "nightly", {"model": "v2"})
    assert info.inputs == [{"path": str(p), "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
                            "bytes": p.stat().st_size}]
    assert [m["name"] for m in info.metrics] == ["tool_selection_accuracy"]
    again = load_run(run_id, store=store)
    assert [(t.id, t.passed) for t in again.traces] == [("t1", True), ("t2", False)]
    assert sorted(t.id for t in load_traces(again, store=store).values()) == ["t1", "t2"]  # inputs, for reports
    r = CliRunner().invoke(main, ["runs", "--store", str(store)], catch_exceptions=False)  # and the CLI lists it
    assert run_id in r.stdout and "nightly" in r.stdout


def test_a_store_path_and_in_memory_traces(tmp_path):
    store = tmp_path / "elsewhere.sqlite3"
    traces = [Trace.model_validate(trace(1)), trace(2, ok=False)]
    result = assay.evaluate(traces, ["tool_selection_accuracy"], store=store)
    info = RunStore(store).info(result.run["run_id"])
    assert info.inputs == [{"path": "(python)", "sha256": None, "bytes": None}] and info.n_traces == 2
    assert not info.pass_rate == 1.0


def test_aevaluate_stores_too(tmp_path):
    store = tmp_path / "runs.sqlite3"
    result = asyncio.run(assay.aevaluate(str(write(tmp_path, [trace(1)])), ["tool_selection_accuracy"],
                                         store=str(store)))
    assert [r.id for r in RunStore(store).runs()] == [result.run["run_id"]]


def test_nothing_is_stored_by_default_or_when_the_store_is_off(tmp_path, monkeypatch):
    store = tmp_path / "runs.sqlite3"
    monkeypatch.setenv("ASSAY_STORE", str(store))
    result = assay.evaluate(str(write(tmp_path, [trace(1)])), ["tool_selection_accuracy"])
    assert "run_id" not in result.run and not store.exists()
    monkeypatch.setenv("ASSAY_STORE", "off")
    result = assay.evaluate(str(write(tmp_path, [trace(1)])), ["tool_selection_accuracy"], store=True)
    assert "run_id" not in result.run and result.run["n_passed"] == 1 and not store.exists()


def test_a_label_without_a_store_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match=r"name= and tags= label a stored run: pass store=True"):
        assay.evaluate(str(write(tmp_path, [trace(1)])), ["tool_selection_accuracy"], name="x")
