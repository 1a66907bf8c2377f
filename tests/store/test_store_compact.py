"""The compact store: a few bytes per metric result, reasons where kept, and stores of schema 1 migrate."""

from __future__ import annotations

import json
import sqlite3

from click.testing import CliRunner

import assay.session._run as session
from assay.cli import main
from assay.model import encode_trace
from assay.store import RunStore, load_run
from assay.store._compact import decode_block

V1_SCHEMA = """
CREATE TABLE runs (id TEXT PRIMARY KEY, started_at TEXT NOT NULL, updated_at TEXT NOT NULL, finished_at TEXT,
    status TEXT NOT NULL, host TEXT, pid INTEGER, inputs TEXT NOT NULL DEFAULT '[]', metrics TEXT NOT NULL DEFAULT '[]',
    config TEXT NOT NULL DEFAULT '{}', judge TEXT, n_traces INTEGER NOT NULL DEFAULT 0,
    n_passed INTEGER NOT NULL DEFAULT 0, n_failed INTEGER NOT NULL DEFAULT 0, n_issues INTEGER NOT NULL DEFAULT 0,
    tokens INTEGER NOT NULL DEFAULT 0, cost_usd REAL, result TEXT, error TEXT);
CREATE TABLE results (run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    trace_id TEXT NOT NULL, source TEXT, passed INTEGER, result TEXT NOT NULL, trace TEXT,
    PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
CREATE TABLE issues (run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    issue TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
CREATE INDEX runs_started ON runs (started_at);
PRAGMA user_version = 1;
"""
V3_SCHEMA = V1_SCHEMA.split("CREATE TABLE results")[0] + """
CREATE TABLE issues (run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    issue TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
CREATE INDEX runs_started ON runs (started_at);
CREATE TABLE results (run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    trace_id TEXT NOT NULL, task_id TEXT, trial INTEGER, source, passed INTEGER, scores BLOB NOT NULL, extra BLOB,
    trace TEXT, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
CREATE TABLE inputs (run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    trace TEXT NOT NULL, UNIQUE (run_id, seq));
PRAGMA user_version = 3;
"""
"""Schema 3 (assay before result blocks): a results row per trace, the stored inputs apart."""


def traces(tmp_path, n: int):
    def one(i: int) -> dict:
        called = "weather" if i % 4 == 0 else "search"
        return {"id": f"t{i}", "task_id": f"task{i // 2}", "trial": i % 2,
                "turns": [{"input": "q", "output": "a", "latency_ms": 2500.0 if i % 5 == 0 else 900.0,
                           "tool_calls": [{"name": called, "arguments": {"q": "x"}}]}],
                "expected": {"tool_calls": [{"name": "search", "arguments": {"q": "x"}}]}}
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps(one(i)) + "\n" for i in range(n)))
    return p


def run(tmp_path, n: int, *extra: str):
    store = tmp_path / "s.sqlite3"
    p = traces(tmp_path, n)
    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["run", str(p), "-m", "tool_selection_accuracy", "-m", "parameter_quality", "-m",
                                  "latency_score", "--store", str(store), "-o", str(out), *extra],
                           catch_exceptions=False)
    assert r.exit_code == 1, r.output
    return store, load_run(str(out))


def test_scores_are_exact_and_reasons_kept_where_they_matter(tmp_path, monkeypatch):
    monkeypatch.setattr(session, "STORED_INPUTS_PASSED", 2)
    monkeypatch.setattr(session, "STORED_INPUTS_OTHER", 1)
    store, from_file = run(tmp_path, 40)
    stored = load_run("latest", store=store)
    assert len(stored.traces) == 40 and stored.summary == from_file.summary
    for a, b in zip(from_file.traces, stored.traces):
        assert (a.id, a.task_id, a.trial, a.source, a.overall, a.passed, a.dimensions) == \
               (b.id, b.task_id, b.trial, b.source, b.overall, b.passed, b.dimensions)
        for name, ra in a.metrics.items():
            rb = b.metrics[name]
            assert (ra.score, ra.passed, ra.threshold, ra.warning) == (rb.score, rb.passed, rb.threshold, rb.warning)
            kept = ra.passed is not True or a.id in ("t0", "t1", "t2")  # failed, or a trace whose input is stored
            assert (rb.reason, rb.details) == ((ra.reason, ra.details) if kept else ("", {})), (a.id, name)
    assert list(RunStore(store).traces("latest")) == [f"{tmp_path / 'in.jsonl'}:{i}" for i in (1, 2, 3)]


def test_a_metric_result_costs_a_few_dozen_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(session, "STORED_INPUTS_PASSED", 0)
    monkeypatch.setattr(session, "STORED_INPUTS_OTHER", 0)
    store, _ = run(tmp_path, 2000)
    conn = sqlite3.connect(store)
    (row_bytes, traces, blocks) = conn.execute("SELECT sum(length(rows)), sum(n), count(*) FROM result_blocks").fetchone()
    assert traces == 2000 and blocks <= 3  # a batch of traces per store row
    assert row_bytes / (2000 * 3) < 60  # the failed quarter keeps its reasons


def test_a_schema_1_store_migrates_without_losing_anything(tmp_path):
    _, result = run(tmp_path, 12)  # the results to store the old way
    old = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(old)
    conn.executescript(V1_SCHEMA)
    conn.execute("INSERT INTO runs (id, started_at, updated_at, status, inputs, metrics, config, n_traces, result) "
                 "VALUES ('0000000000abc', 'x', 'x', 'completed', ?, ?, ?, 12, ?)",
                 (json.dumps([{"path": str(tmp_path / "in.jsonl")}]), json.dumps(result.run["metrics"]),
                  json.dumps({k: result.run[k] for k in ("dimension_weights", "dimension_thresholds")}),
                  json.dumps({"run": result.run.to_dict(), "summary": {k: v.to_dict() for k, v in result.summary.items()},
                              "statistics": result.statistics})))
    first_input = (tmp_path / "in.jsonl").read_text().splitlines()[0]
    for i, t in enumerate(result.traces):
        conn.execute("INSERT INTO results VALUES ('0000000000abc', ?, ?, ?, ?, ?, ?)",
                     (i, t.id, t.source, int(t.passed), encode_trace(t).decode(), first_input if i == 0 else None))
    conn.commit()
    conn.close()
    migrated = RunStore(old).load("0000000000abc")
    assert migrated.traces == result.traces and migrated.summary == result.summary
    (key, stored_input), = RunStore(old).traces("0000000000abc").items()
    assert key == result.traces[0].source and stored_input.id == "t0"
    conn = sqlite3.connect(old)
    assert conn.execute("PRAGMA user_version").fetchone() == (4,)
    assert {"results_v1", "results"}.isdisjoint(r[0] for r in conn.execute("SELECT name FROM sqlite_master"))


def test_a_schema_3_store_migrates_to_blocks_without_losing_anything(tmp_path, monkeypatch):
    monkeypatch.setattr(session, "STORED_INPUTS_PASSED", 2)
    monkeypatch.setattr(session, "STORED_INPUTS_OTHER", 2)
    store, _ = run(tmp_path, 30)
    run(tmp_path, 7)  # a second run in the same store
    new = RunStore(store)
    runs = [i.id for i in new.runs()]
    want = {r: (new.load(r), new.traces(r)) for r in runs}
    old = tmp_path / "v3.sqlite3"  # the same runs as schema 3 stored them: one results row per trace
    conn = sqlite3.connect(old)
    conn.executescript(V3_SCHEMA)
    src = sqlite3.connect(store)
    for row in src.execute("SELECT * FROM runs"):
        conn.execute(f"INSERT INTO runs VALUES ({', '.join('?' * len(row))})", row)
    conn.executemany("INSERT INTO issues VALUES (?, ?, ?)", src.execute("SELECT run_id, seq, issue FROM issues"))
    for run_id, seq, n, data in src.execute("SELECT run_id, seq, n, rows FROM result_blocks"):
        rows = decode_block(data)
        assert len(rows) == n
        conn.executemany("INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                         [(run_id, seq + k, *r) for k, r in enumerate(rows)])
    conn.executemany("INSERT INTO inputs VALUES (?, ?, ?)", src.execute("SELECT run_id, seq, trace FROM inputs"))
    conn.commit()
    conn.close()
    migrated = RunStore(old)
    assert [i.id for i in migrated.runs()] == runs
    for r, (result, inputs) in want.items():
        got = migrated.load(r)
        assert got.traces == result.traces and got.summary == result.summary and got.run == result.run
        assert migrated.traces(r) == inputs and len(inputs) == 4
    conn = sqlite3.connect(old)
    assert conn.execute("PRAGMA user_version").fetchone() == (4,)
    assert "results" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert conn.execute("SELECT sum(n) FROM result_blocks").fetchone() == (37,)


def test_a_store_from_a_newer_assay_is_refused_before_anything_is_written(tmp_path):
    store, _ = run(tmp_path, 3)
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    before = store.read_bytes()
    message = "was written by a newer assay (schema 999; this one reads up to 4)"
    for args in (["runs", "--store", str(store)], ["run", str(tmp_path / "in.jsonl"), "-m", "tool_selection_accuracy",
                                                   "--store", str(store)]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2 and message in r.stderr, r.output
    assert store.read_bytes() == before  # no run row, no upgrade, no pragma written
    conn = sqlite3.connect(store)
    assert conn.execute("PRAGMA user_version").fetchone() == (999,)
    assert conn.execute("SELECT count(*) FROM runs").fetchone() == (1,)


def test_a_read_only_store_is_listed_and_reported_and_an_upgrade_says_so(tmp_path, monkeypatch, capsys):
    import assay.store._db as db

    store, result = run(tmp_path, 6)
    monkeypatch.setattr(db, "_writable", lambda path: False)  # root ignores file modes: this stands for chmod a-w
    assert RunStore(store).load("latest").traces == result.traces
    with RunStore(store).connect(write=False) as conn, __import__("pytest").raises(sqlite3.OperationalError,
                                                                                   match="readonly"):
        conn.execute("CREATE TABLE x (a)")
    r = CliRunner().invoke(main, ["runs", "--store", str(store)])
    assert r.exit_code == 0 and RunStore(store).runs()[0].id[:8] in r.stdout
    r = CliRunner().invoke(main, ["report", "latest", "--store", str(store), "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output
    old = tmp_path / "v3.sqlite3"  # an old read-only store cannot be upgraded: a clear error
    conn = sqlite3.connect(old)
    conn.executescript(V3_SCHEMA)
    conn.close()
    r = CliRunner().invoke(main, ["runs", "--store", str(old)])
    assert r.exit_code == 2 and "is read-only and of schema 3" in r.stderr
    monkeypatch.setattr(db, "_writable", lambda path: True)
    monkeypatch.setattr(db, "PROGRESS_S", 0.0)
    conn = sqlite3.connect(old)
    conn.execute("INSERT INTO runs (id, started_at, updated_at, status) VALUES ('r1', 'x', 'x', 'completed')")
    conn.executemany("INSERT INTO results VALUES ('r1', ?, ?, NULL, NULL, NULL, 1, x'', NULL, NULL)",
                     [(i, f"t{i}") for i in range(3)])
    conn.commit()
    conn.close()
    capsys.readouterr()
    RunStore(old).runs()
    err = capsys.readouterr().err
    assert "upgrading the run store" in err and "3 stored results) from schema 3 to 4" in err
    assert "other assay processes using it wait" in err and "(3 of 3)" in err and "run store upgraded in" in err
