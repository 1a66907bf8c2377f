"""``assay run --store/--no-store``, ``assay runs``, and ``load_run`` / ``load_traces``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.errors import ConfigError, DataError
from assay.store import RunStore, default_store_path, load_run, load_traces

EXAMPLES = Path(__file__).parents[2] / "examples" / "traces.jsonl"


def good(i: int, ok: bool = True) -> dict:
    return {"id": f"t{i}", "turns": [{"input": f"q{i}", "output": f"a{i}",
                                      "tool_calls": [{"name": "search" if ok else "weather"}]}],
            "expected": {"tool_calls": [{"name": "search"}]}}


def write(tmp_path: Path, rows: list, name: str = "traces.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return p


def invoke(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), catch_exceptions=False, input=input)


def run_id_from(stderr: str) -> str:
    line = next(x for x in stderr.splitlines() if x.startswith("run ") and " stored in " in x)
    return line.split()[1]


def test_run_is_stored_by_default_and_listed(tmp_path):
    p = write(tmp_path, [good(1), good(2, ok=False)])
    r = invoke("run", str(p), "-m", "tool_selection_accuracy")
    assert r.exit_code == 1
    run_id = run_id_from(r.stderr)
    assert str(default_store_path()) in r.stderr
    listing = invoke("runs", "--json")
    assert listing.exit_code == 0
    (row,) = json.loads(listing.stdout)
    assert row["id"] == run_id and row["status"] == "completed" and row["n_traces"] == 2
    assert row["pass_rate"] == 0.5 and row["metrics"] == ["tool_selection_accuracy"]
    assert row["inputs"][0]["path"] == str(p) and len(row["inputs"][0]["sha256"]) == 64
    table = invoke("runs")
    assert run_id in table.stdout and "completed" in table.stdout
    show = invoke("runs", "show", run_id[:9])
    assert show.exit_code == 0 and f"run {run_id}" in show.stdout and "tool_selection_accuracy" in show.stdout
    doc = json.loads(invoke("runs", "show", "latest", "--json").stdout)
    assert [t["id"] for t in doc["traces"]] == ["t1", "t2"] and doc["run"]["run_id"] == run_id


def test_store_path_flag_no_store_and_env_off(tmp_path, monkeypatch):
    p = write(tmp_path, [good(1)])
    custom = tmp_path / "elsewhere" / "my.sqlite3"
    r = invoke("run", str(p), "-m", "tool_selection_accuracy", "--store", str(custom))
    assert r.exit_code == 0 and custom.exists() and f"stored in {custom}" in r.stderr
    assert json.loads(invoke("runs", "--store", str(custom), "--json").stdout)[0]["n_traces"] == 1
    r = invoke("run", str(p), "-m", "tool_selection_accuracy", "--no-store")
    assert r.exit_code == 0 and "stored" not in r.stderr and not default_store_path().exists()
    r = invoke("run", str(p), "--store", str(custom), "--no-store")
    assert r.exit_code == 2 and "not both" in r.stderr
    monkeypatch.setenv("ASSAY_STORE", "off")
    assert default_store_path() is None
    r = invoke("run", str(p), "-m", "tool_selection_accuracy")
    assert r.exit_code == 0 and "stored" not in r.stderr
    r = invoke("runs")
    assert r.exit_code == 2 and "store is off" in r.stderr


def test_a_missing_input_records_no_run(tmp_path):
    r = invoke("run", str(tmp_path / "missing.jsonl"))
    assert r.exit_code == 2 and "missing.jsonl: no such file" in r.stderr
    assert not default_store_path().exists()


def test_runs_on_a_missing_store_is_a_usage_error(tmp_path):
    r = invoke("runs", "--store", str(tmp_path / "nope.sqlite3"))
    assert r.exit_code == 2 and "no run store at" in r.stderr
    r = invoke("run", str(write(tmp_path, [good(1)])), "-m", "tool_selection_accuracy")
    r = invoke("runs", "show", "zzzzzz")
    assert r.exit_code == 2 and "no run 'zzzzzz'" in r.stderr


def test_input_issues_are_stored_and_traces_stay_matched_to_results(tmp_path):
    p = write(tmp_path, [good(1), "{broken", good(2), "[]", good(3, ok=False)])
    r = invoke("run", str(p), "-m", "tool_selection_accuracy")
    assert r.exit_code == 2
    run_id = run_id_from(r.stderr)
    result = load_run(run_id)
    assert [t.id for t in result.traces] == ["t1", "t2", "t3"]
    assert [(i.line, i.message[:14]) for i in result.input_issues] == [(2, "not valid JSON"), (4, "expected a tra")]
    traces = load_traces(result)
    assert {k: v.turns[0].input for k, v in traces.items()} == {f"{p}:1": "q1", f"{p}:3": "q2", f"{p}:5": "q3"}


def test_jsonl_output_still_stores_every_trace(tmp_path):
    p = write(tmp_path, [good(i) for i in range(7)])
    out = tmp_path / "r.jsonl"
    r = invoke("run", str(p), "-m", "tool_selection_accuracy", "-f", "jsonl", "-o", str(out))
    assert r.exit_code == 0
    stored = load_run("latest")
    assert len(stored.traces) == 7 and len(load_traces(stored)) == 7
    from_file = load_run(str(out))
    assert [t.id for t in from_file.traces] == [t.id for t in stored.traces]
    assert from_file.summary["tool_selection_accuracy"].n == 7


def test_stdin_runs_are_stored_with_their_input_traces(tmp_path):
    rows = "\n".join(json.dumps(good(i)) for i in range(3)) + "\n"
    r = invoke("run", "-", "-m", "tool_selection_accuracy", input=rows)
    assert r.exit_code == 0
    result = load_run("latest")
    assert len(result.traces) == 3 and sorted(t.id for t in load_traces(result).values()) == ["t0", "t1", "t2"]


def test_stored_inputs_are_capped_per_run(tmp_path, monkeypatch):
    from assay.session import _run as _session

    monkeypatch.setattr(_session, "STORED_INPUTS_PASSED", 2)
    monkeypatch.setattr(_session, "STORED_INPUTS_OTHER", 1)
    p = write(tmp_path, [good(i) for i in range(5)] + [good(i, ok=False) for i in range(5, 8)])
    r = invoke("run", str(p), "-m", "tool_selection_accuracy")
    assert r.exit_code == 1
    result = load_run("latest")
    assert len(result.traces) == 8  # every result is stored
    assert sorted(t.id for t in load_traces(result).values()) == ["t0", "t1", "t5"]


def test_a_strict_run_that_stops_is_recorded_as_failed(tmp_path):
    p = write(tmp_path, [good(1), "[]", good(2)])
    r = invoke("run", str(p), "-m", "tool_selection_accuracy", "--strict")
    assert r.exit_code == 2
    (info,) = RunStore(default_store_path()).runs()
    assert info.status == "failed" and "expected a trace object" in info.error


def test_load_run_from_results_files_and_traces_from_unchanged_inputs(tmp_path):
    p = write(tmp_path, [good(1), good(2, ok=False)])
    out = tmp_path / "res.json"
    r = invoke("run", str(p), "-m", "tool_selection_accuracy", "-o", str(out), "--no-store")
    assert r.exit_code == 1
    result = load_run(str(out))
    assert [t.passed for t in result.traces] == [True, False]
    s = result.summary["tool_selection_accuracy"]
    assert (s.n, s.n_passed, s.threshold) == (2, 1, 0.7)
    assert result.run["input_files"][0]["sha256"]
    assert set(load_traces(result)) == {f"{p}:1", f"{p}:2"}
    p.write_text(p.read_text().replace("q1", "changed"))  # the input changed: its traces are not trusted
    assert load_traces(result) == {}


def test_load_run_errors_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="no such results file"):
        load_run(str(tmp_path / "missing.json"))
    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(DataError, match="not an assay results file"):
        load_run(str(bad))
    with pytest.raises(ConfigError, match="does not exist yet"):
        load_run("latest")
    os.environ["ASSAY_STORE"] = "off"
    with pytest.raises(ConfigError, match="store is off"):
        load_run("latest")


def test_report_of_a_stored_run_streams_it_and_draws_what_the_whole_run_would(tmp_path):
    """``assay report RUN`` feeds the stored traces past the report's digest (memory bounded by
    --max-traces, not the run) and the page's distributions and counts are the whole run's."""
    import re

    from assay.report import render_report

    p = write(tmp_path, [good(i, ok=i % 3 != 0) for i in range(90)])
    r = invoke("run", str(p), "-m", "tool_selection_accuracy")
    run_id = run_id_from(r.stderr)
    out = tmp_path / "r.html"
    assert invoke("report", run_id, "-o", str(out), "--max-traces", "20").exit_code == 0
    page = out.read_text(encoding="utf-8")
    whole = render_report(load_run(run_id), traces=load_traces(load_run(run_id)), max_traces=20)

    def section(html: str, id_: str) -> str:
        m = re.search(rf'<section[^>]*id="{id_}".*?</section>', html, re.S)
        assert m, id_
        return m.group(0)
    for id_ in ("dimensions", "metrics"):  # (the failure list links views by their place on the page)
        assert section(page, id_) == section(whole, id_)
    assert "Failures (30 of 90 traces)" in page and "Traces (90)" in page and "70 more traces not shown" in page


def test_runs_fits_80_columns_without_cutting_a_header_or_a_status(tmp_path):
    """At 80 columns the listing cut its judge header to 'jud…' and 'interrupted' to 'interrupt'; judge and
    cost columns that would hold only '—' are left out there, and come back when a run has a judge."""
    import re
    import sqlite3

    p = write(tmp_path, [good(1), good(2)])
    for _ in range(2):
        invoke("run", str(p), "-m", "tool_selection_accuracy")
    marked = RunStore(default_store_path()).runs()[0].id  # either run: the one shown as interrupted
    with sqlite3.connect(default_store_path()) as db:
        db.execute("UPDATE runs SET status = 'interrupted' WHERE id = ?", (marked,))

    def listing(columns: int) -> list[str]:
        out = CliRunner().invoke(main, ["runs"], env={"COLUMNS": str(columns)}, catch_exceptions=False).stdout
        return out.splitlines()

    lines = listing(80)
    assert max(map(len, lines)) <= 80 and "…" not in lines[1], lines
    assert re.fullmatch(r"id +started \(UTC\) +inputs +traces +pass +metrics +status *", lines[1]), lines[1]
    assert any(line.startswith(marked) and line.rstrip().endswith(" interrupted") for line in lines), lines
    assert any("traces.jsonl" in line for line in lines[3:]), lines  # the room the empty columns left
    assert " judge " in listing(100)[1]  # a wide terminal shows every column
    with sqlite3.connect(default_store_path()) as db:
        db.execute("UPDATE runs SET judge = ? WHERE id = ?", (json.dumps({"model": "openai:gpt-4o-mini"}), marked))
    assert "jud" in listing(80)[1]  # the column is back (cut to fit, as before)
