"""The run store: ids, round trips, crashes, concurrent writers, references."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest
from store_helpers import METRICS, crash_midway, trace, trace_result, write_run

from assay.errors import ConfigError
from assay.model import RunResult
from assay.store import RunStore, new_run_id


def test_run_ids_are_short_unique_and_sort_by_time():
    ids = [new_run_id(now=1_700_000_000 + i / 1000) for i in range(200)]
    assert all(len(i) == 13 and i.isalnum() and i == i.lower() for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == 200
    assert new_run_id(now=1_700_000_000) < new_run_id(now=1_700_000_001)


def test_a_run_row_exists_while_running_and_results_arrive_in_batches(tmp_path):
    st = RunStore(tmp_path / "runs.sqlite3")
    rec = st.start(inputs=[{"path": "in.jsonl", "sha256": "ab" * 32, "bytes": 10}], metrics=METRICS,
                   judge={"model": "scripted"}, batch_size=10, flush_interval_s=3600)
    info = st.info(rec.run_id)
    assert (info.status, info.n_traces, info.judge) == ("running", 0, {"model": "scripted"})
    for i in range(25):
        rec.add(trace_result(i), trace(i))
    assert st.info(rec.run_id).n_traces == 20  # two full batches written, five buffered
    assert len(st.load(rec.run_id).traces) == 20
    rec.flush()
    assert st.info(rec.run_id).n_traces == 25
    rec.abort("interrupted", "stopped by test")
    info = st.info(rec.run_id)
    assert (info.status, info.error, info.n_traces) == ("interrupted", "stopped by test", 25)


def test_finished_run_round_trips_results_summary_and_traces(tmp_path):
    st = RunStore(tmp_path / "runs.sqlite3")
    run_id = write_run(str(st.path), "a", 30, 7)
    info = st.info(run_id)
    assert (info.status, info.n_traces, info.n_passed, info.n_failed) == ("completed", 30, 22, 8)
    assert info.pass_rate == pytest.approx(22 / 30)
    result = st.load(run_id)
    assert isinstance(result, RunResult)
    assert [t.id for t in result.traces] == [f"at{i}" for i in range(30)]
    assert result.traces[3].metrics["m"].reason == "r3"
    s = result.summary["m"]
    assert (s.n, s.n_passed, s.mean) == (30, 22, pytest.approx((22 + 8 * 0.5) / 30))
    assert result.run["run_id"] == run_id and result.run["status"] == "completed"
    traces = st.traces(run_id)
    assert traces["in.jsonl:5"].turns[0].output == "a4"


def test_load_can_hand_each_trace_over_instead_of_keeping_them(tmp_path):
    """``each``: the same traces in the same order, none kept; summary and counts unchanged -
    for a finished run and for one whose summaries are rebuilt from its rows."""
    st = RunStore(tmp_path / "runs.sqlite3")
    run_id = write_run(str(st.path), "a", 30, 7)
    whole, seen = st.load(run_id), []
    streamed = st.load(run_id, each=seen.append)
    assert streamed.traces == [] and seen == whole.traces
    assert streamed.summary == whole.summary and streamed.run == whole.run
    rec = st.start(inputs=[], metrics=METRICS, batch_size=10, flush_interval_s=3600)
    for i in range(25):
        rec.add(trace_result(i))
    rec.abort("interrupted", "stopped by test")
    whole, seen = st.load(rec.run_id), []
    streamed = st.load(rec.run_id, each=seen.append)
    assert streamed.traces == [] and seen == whole.traces and len(seen) == 25
    assert streamed.summary == whole.summary and streamed.run == whole.run


def test_an_exception_marks_the_run_failed_and_keeps_what_it_had(tmp_path):
    st = RunStore(tmp_path / "runs.sqlite3")
    with pytest.raises(RuntimeError), st.start(inputs=[], metrics=METRICS, batch_size=1000,
                                               flush_interval_s=3600) as rec:
        for i in range(5):
            rec.add(trace_result(i))
        raise RuntimeError("judge exploded")
    info = st.info(rec.run_id)
    assert (info.status, info.n_traces) == ("failed", 5)
    assert info.error == "RuntimeError: judge exploded"
    with pytest.raises(KeyboardInterrupt), st.start(inputs=[], metrics=METRICS) as rec2:
        raise KeyboardInterrupt
    assert st.info(rec2.run_id).status == "interrupted"


def test_a_killed_process_leaves_an_incomplete_run_with_its_batches(tmp_path):
    path = str(tmp_path / "runs.sqlite3")
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=crash_midway, args=(path, 250, 100))
    p.start()
    p.join(60)
    assert p.exitcode == 3
    st = RunStore(path)
    (info,) = st.runs()
    assert info.status == "incomplete" and info.n_traces == 200  # the last 50 were still buffered
    result = st.load(info.id)
    assert len(result.traces) == 200 and result.summary["m"].n == 200  # summary rebuilt from the rows
    assert result.run["status"] == "incomplete"


def test_concurrent_runs_from_several_processes_do_not_corrupt_the_store(tmp_path):
    path = str(tmp_path / "runs.sqlite3")
    ctx = multiprocessing.get_context("spawn")
    tags = [f"p{i}" for i in range(6)]
    with ctx.Pool(6) as pool:
        ids = pool.starmap(write_run, [(path, tag, 300, 13) for tag in tags])
    st = RunStore(path)
    assert len(set(ids)) == 6
    infos = {i.id: i for i in st.runs()}
    assert set(infos) == set(ids)
    for run_id, tag in zip(ids, tags):
        assert infos[run_id].status == "completed" and infos[run_id].n_traces == 300
        result = st.load(run_id)
        assert [t.id for t in result.traces] == [f"{tag}t{i}" for i in range(300)]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT sum(n) FROM result_blocks").fetchone() == (1800,)


def test_references_id_prefix_latest_and_errors(tmp_path, monkeypatch):
    ids = iter(["0abcdefgh0001", "0abcdefgh0002", "0abczzzzz0003"])
    monkeypatch.setattr("assay.store._record.new_run_id", lambda: next(ids))
    st = RunStore(tmp_path / "runs.sqlite3")
    first, second, third = (write_run(str(st.path), tag, 2, 10) for tag in "abc")
    assert st.resolve(first) == first and st.resolve(first.upper()) == first
    assert st.resolve("latest") == third and st.resolve("latest~2") == first
    assert st.resolve("0abcz") == third
    with pytest.raises(ConfigError, match="run prefix '0abcd' is ambiguous: 0abcdefgh0002, 0abcdefgh0001"):
        st.resolve("0abcd")
    with pytest.raises(ConfigError, match="no run 'latest~3'"):
        st.resolve("latest~3")
    with pytest.raises(ConfigError, match="no run 'zzzz'"):
        st.resolve("zzzz")
    with pytest.raises(ConfigError, match="latest or latest~N"):
        st.resolve("latest~x")
    with pytest.raises(ConfigError, match="no run '0a_c%'"):
        st.resolve("0a_c%")  # LIKE wildcards are matched literally
    assert st.delete("0abcdefgh0001") == first
    assert [i.id for i in st.runs()] == [third, second]


def test_a_file_that_is_not_a_store_is_a_config_error(tmp_path):
    bad = tmp_path / "runs.sqlite3"
    bad.write_text("not a database at all" * 100)
    with pytest.raises(ConfigError, match="not a usable assay run store"):
        RunStore(bad).runs()


def test_a_full_disk_is_an_oserror_naming_the_store_and_does_not_hide_behind_the_abort(tmp_path):
    """A run store on a full disk raised sqlite3's "database or disk is full", shown as an internal error; it is
    ENOSPC naming the store, as any other refused write, and marking the run stopped cannot mask it."""
    import errno

    path = tmp_path / "runs.sqlite3"
    st = RunStore(path)
    rec = st.start(inputs=[], metrics=METRICS, batch_size=10_000, flush_interval_s=3600)
    for i in range(3):
        rec.add(trace_result(i))
    rec.flush()
    pages = rec._conn.execute("PRAGMA page_count").fetchone()[0]
    rec._conn.execute(f"PRAGMA max_page_count = {pages}")  # the file may not grow: SQLite's SQLITE_FULL
    for i in range(3, 3000):
        rec.add(trace_result(i))
    with pytest.raises(OSError) as caught:
        rec.flush()
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(path)
    rec.abort("failed", "OSError: no space")  # best effort: must not raise over the error being reported
    assert st.info(rec.run_id).n_traces == 3  # what the last good write kept
