"""The viewer's read-only queries: one trace by its block, paged runs with filters, a run being written."""

from __future__ import annotations

import hashlib

import pytest
from store_helpers import trace, trace_result, write_run

from assay.errors import ConfigError
from assay.store import RunStore, find_runs, load_summary, resolve_run, run_series, stored_results, trace_at


@pytest.fixture()
def store(tmp_path):
    return RunStore(tmp_path / "runs.sqlite3")


def test_trace_at_finds_every_trace_across_blocks(store):
    run_id = write_run(str(store.path), "a", 23, batch=5)  # blocks of 5: seq 0, 5, 10, 15, 20
    for seq in range(23):
        found = trace_at(store, run_id, seq)
        assert found is not None
        t, stored = found
        assert t.id == f"at{seq}" and t.metrics["m"].reason == f"r{seq}" and stored is not None and stored.id == t.id
    assert trace_at(store, run_id, 23) is None
    assert trace_at(store, "nosuchrun", 0) is None


def test_stored_results_from_any_start(store):
    run_id = write_run(str(store.path), "a", 23, batch=5)
    assert [seq for seq, _ in stored_results(store, run_id, start=7)] == list(range(7, 23))
    assert [t.id for _, t in stored_results(store, run_id)] == [f"at{i}" for i in range(23)]


def test_load_summary_hands_every_trace_and_keeps_none(store):
    run_id = write_run(str(store.path), "a", 12, batch=5)
    seen = []
    result = load_summary(store, run_id, each=seen.append)
    assert result.traces == [] and len(seen) == 12 and result.summary["m"].n == 12
    assert result.run.run_id == run_id and result.run.status == "completed"


def test_find_runs_pages_newest_first(store):
    ids = [write_run(str(store.path), f"r{i}", 2, batch=2) for i in range(7)]
    first, second = find_runs(store, limit=5), find_runs(store, offset=5, limit=5)
    assert first.total == second.total == 7
    assert [r.info.id for r in first.rows + second.rows] == sorted(ids, reverse=True)


def test_find_runs_filters_by_name_tag_text_and_status(store):
    configs = [{"name": "nightly", "tags": {"model": "v1"}}, {"name": "nightly", "tags": {"model": "v2"}},
               {"name": "adhoc", "tags": {}}]
    ids = []
    for c in configs:
        rec = store.start(inputs=[], metrics=[{"name": "m"}], config=c)
        rec.abort("interrupted", "")
        ids.append(rec.run_id)
    assert [r.info.id for r in find_runs(store, name="nightly").rows] == [ids[1], ids[0]]
    assert [r.info.id for r in find_runs(store, tag="model=v2").rows] == [ids[1]]
    assert [r.info.id for r in find_runs(store, tag="model").rows] == [ids[1], ids[0]]
    assert [r.info.id for r in find_runs(store, text="ADH").rows] == [ids[2]]
    assert find_runs(store, status="completed").total == 0 and find_runs(store, status="interrupted").total == 3
    assert find_runs(store).names == ["adhoc", "nightly"]
    assert [r.tags for r in find_runs(store, name="nightly").rows] == [{"model": "v2"}, {"model": "v1"}]


def test_a_run_being_written_is_read_while_its_writer_holds_the_store(store):
    rec = store.start(inputs=[], metrics=[{"name": "m", "params": {"threshold": 0.7}}], config={"name": "live"},
                      batch_size=1000, flush_interval_s=3600)
    try:
        for i in range(3):
            rec.add(trace_result(i, 0.5 if i == 1 else 1.0), trace(i))
        rec.flush()
        page = find_runs(store, name="live")
        assert page.rows[0].info.status == "running" and page.rows[0].info.n_traces == 3
        assert trace_at(store, rec.run_id, 1)[0].passed is False
        assert load_summary(store, rec.run_id).summary["m"].n == 3  # rebuilt from the traces written so far
    finally:
        rec.abort("interrupted", "")


def test_reading_never_writes_or_creates(store, tmp_path):
    with pytest.raises(ConfigError, match="does not exist yet"):
        find_runs(RunStore(tmp_path / "none" / "runs.sqlite3"))
    assert not (tmp_path / "none").exists()
    run_id = write_run(str(store.path), "a", 4, batch=2)
    before = hashlib.sha256(store.path.read_bytes()).hexdigest()
    find_runs(store), trace_at(store, run_id, 2), load_summary(store, run_id), run_series(store, "x")
    assert hashlib.sha256(store.path.read_bytes()).hexdigest() == before


def test_resolve_run_reads_prefixes_and_latest(store):
    ids = [write_run(str(store.path), f"r{i}", 1, batch=1) for i in range(3)]
    newest = sorted(ids)[-1]
    assert resolve_run(store, "latest") == newest and resolve_run(store, "latest~2") == sorted(ids)[0]
    unique = next(newest[:n] for n in range(1, len(newest) + 1) if sum(i.startswith(newest[:n]) for i in ids) == 1)
    assert resolve_run(store, unique) == newest
    with pytest.raises(ConfigError):
        resolve_run(store, "zzzz")
