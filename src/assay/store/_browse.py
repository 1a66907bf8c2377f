"""Paged, indexed, read-only queries over a run store, for ``assay view``.

Every function opens its own read-only connection (``RunStore.reader``), so a viewer never writes
the store, never upgrades it, and sees runs that other processes write while it runs (WAL). Pages
are bounded: runs by ``ORDER BY id DESC LIMIT``; one trace by its run's block index (the block
holding a sequence number is found through the primary key, not by reading the run).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..model import RunResult, Trace, TraceResult, decode_issue, decode_run
from ._compact import RowCodec, decode_block
from ._db import _INFO_COLUMNS, RunInfo, RunStore, _info, _rebuild, _regroup


@dataclass(slots=True)
class RunRow:
    """One row of the runs list: the run, what it is called, and its headline figures."""

    info: RunInfo
    name: str | None
    tags: dict[str, Any]
    judge_calls: int | None
    pass_at_1: dict[str, Any] | None = None
    """The stored ``statistics.trials.trace_passed`` row for k=1 (pass rate with its task-clustered interval)."""


@dataclass(slots=True)
class RunsPage:
    rows: list[RunRow]
    total: int
    """Runs matching the filters (all pages)."""
    names: list[str] = field(default_factory=list)
    """Every run name in the store (for the name filter)."""


def _like(text: str) -> str:
    return "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _where(name: str | None, tag: str | None, text: str | None, status: str | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    if name:
        clauses.append("json_extract(config, '$.name') = ?")
        args.append(name)
    if tag:
        key, sep, value = tag.partition("=")
        clauses.append("EXISTS (SELECT 1 FROM json_each(runs.config, '$.tags') WHERE key = ?"
                       + (" AND CAST(value AS TEXT) = ?)" if sep else ")"))
        args += [key, value] if sep else [key]
    if text:
        clauses.append("(id LIKE ? ESCAPE '\\' OR lower(coalesce(json_extract(config, '$.name'), '')) LIKE ? ESCAPE '\\')")
        args += [_like(text), _like(text)]
    if status:
        clauses.append("status = ?")
        args.append(status)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def find_runs(store: RunStore, *, name: str | None = None, tag: str | None = None, text: str | None = None,
              status: str | None = None, offset: int = 0, limit: int = 50) -> RunsPage:
    """Runs newest first, filtered by exact name, tag (``key`` or ``key=value``), text in id or name, status."""
    where, args = _where(name, tag, text, status)
    with closing(store.reader()) as conn:
        total = conn.execute(f"SELECT count(*) FROM runs{where}", args).fetchone()[0]
        rows = conn.execute(
            f"SELECT {_INFO_COLUMNS}, json_extract(judge, '$.calls'), "
            "json_extract(result, '$.statistics.trials.trace_passed[0]') "
            f"FROM runs{where} ORDER BY id DESC LIMIT ? OFFSET ?", (*args, limit, offset)).fetchall()
        names = [r[0] for r in conn.execute(
            "SELECT DISTINCT json_extract(config, '$.name') AS n FROM runs WHERE n IS NOT NULL ORDER BY n LIMIT 500")]
    out = []
    for row in rows:
        info = _info(row[:-2])
        calls, passk = row[-2], row[-1]
        p1 = json.loads(passk) if passk else None
        tags = info.config.get("tags")
        out.append(RunRow(info, info.config.get("name"), tags if isinstance(tags, dict) else {},
                          calls if isinstance(calls, int) else None,
                          p1 if isinstance(p1, dict) and p1.get("k") == 1 else None))
    return RunsPage(out, total, names)


def resolve(store: RunStore, ref: str) -> str:
    """A run id from an id, unique prefix, ``latest`` or ``latest~N`` (ConfigError when none or several)."""
    return _resolve(store, ref)


def run_info(store: RunStore, ref: str) -> RunInfo:
    """One run's row (a run id, unique prefix, ``latest`` or ``latest~N``)."""
    run_id = _resolve(store, ref)
    with closing(store.reader()) as conn:
        return _info(conn.execute(f"SELECT {_INFO_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone())


def _resolve(store: RunStore, ref: str) -> str:
    """A run id from an id, unique prefix, ``latest`` or ``latest~N``, read-only (``RunStore.resolve``'s rules)."""
    with closing(store.reader()) as conn:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (ref,)).fetchone():
            return ref
        if ref == "latest" or ref.startswith("latest~"):
            back = ref.partition("~")[2] or "0"
            row = conn.execute("SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?",
                               (int(back),)).fetchone() if back.isdigit() else None
            if row is None:
                raise ConfigError(f"no run {ref!r} in the run store {str(store.path)!r}")
            return str(row[0])
        like = ref.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        ids = [r[0] for r in conn.execute("SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' ORDER BY id DESC LIMIT 2",
                                          (like,))]
    if len(ids) != 1:
        raise ConfigError(f"no run {ref!r} in the run store {str(store.path)!r}" if not ids else
                          f"run prefix {ref!r} is ambiguous")
    return str(ids[0])


def _codec(info: RunInfo) -> RowCodec:
    return RowCodec(info.metrics, info.inputs, regroup=_regroup(info.metrics, info.config))


Where = Callable[[str, str, "str | None", "int | None"], bool]
"""A filter on a stored trace's (id, task id, source, passed as 0/1/None), decided before its results are decoded."""


def stored_results(store: RunStore, run_id: str, *, start: int = 0,
                   where: Where | None = None) -> Iterator[tuple[int, TraceResult]]:
    """A run's (sequence number, TraceResult) in input order from ``start``, read block by block.

    ``where``: only the traces it accepts are decoded (the rest cost a few microseconds each)."""
    with closing(store.reader()) as conn:
        info = _info(conn.execute(f"SELECT {_INFO_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone())
        codec = _codec(info)
        first = conn.execute("SELECT max(seq) FROM result_blocks WHERE run_id = ? AND seq <= ?",
                             (run_id, start)).fetchone()[0] or 0
        for seq, data in conn.execute("SELECT seq, rows FROM result_blocks WHERE run_id = ? AND seq >= ? ORDER BY seq",
                                      (run_id, first)):
            for k, (trace_id, task_id, trial, source, passed, scores, extra) in enumerate(decode_block(data)):
                if seq + k < start or (where is not None and not where(
                        trace_id, trace_id if task_id is None else task_id, codec.read_source(source), passed)):
                    continue
                yield seq + k, codec.unpack(trace_id, task_id, trial, source, scores, extra)


def load_summary(store: RunStore, run_id: str, *, each: Callable[[TraceResult], None] | None = None) -> RunResult:
    """A run's summaries, statistics and record without its traces.

    A finished run's stored document is read without touching its results; ``each`` (when given)
    is still handed every trace, in order. An unfinished one has its summaries rebuilt from the
    traces written so far (each handed to ``each``).
    """
    with closing(store.reader()) as conn:
        row = conn.execute(f"SELECT {_INFO_COLUMNS}, result FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(run_id)
        info = _info(row[:-1])
        issues = [decode_issue(r[0]) for r in conn.execute(
            "SELECT issue FROM issues WHERE run_id = ? ORDER BY seq LIMIT 1000", (run_id,))]
    stream = (t for _, t in stored_results(store, run_id))
    if row[-1] is not None:
        result = decode_run(row[-1], [])
        if each is not None:
            for t in stream:
                each(t)
    else:
        result = _rebuild(info, stream, each if each is not None else (lambda t: None))
    result.input_issues = issues or result.input_issues
    result.run.update(run_id=info.id, status=info.status, input_files=info.inputs)
    if info.error:
        result.run.error = info.error
    return result


def trace_at(store: RunStore, run_id: str, seq: int) -> tuple[TraceResult, Trace | None] | None:
    """The results of a run's trace number ``seq`` (0-based input order) and its stored input, if any.

    Reads one block (found through the primary key) and one input row; None when there is no such trace.
    """
    with closing(store.reader()) as conn:
        info_row = conn.execute(f"SELECT {_INFO_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        if info_row is None:
            return None
        info = _info(info_row)
        block = conn.execute("SELECT seq, n, rows FROM result_blocks WHERE run_id = ? AND seq <= ? "
                             "ORDER BY seq DESC LIMIT 1", (run_id, seq)).fetchone()
        if block is None or not block[0] <= seq < block[0] + block[1]:
            return None
        trace_id, task_id, trial, source, _, scores, extra = decode_block(block[2])[seq - block[0]]
        result = _codec(info).unpack(trace_id, task_id, trial, source, scores, extra)
        stored = conn.execute("SELECT trace FROM inputs WHERE run_id = ? AND seq = ?", (run_id, seq)).fetchone()
    trace = None
    if stored is not None:
        try:
            trace = Trace.model_validate_json(stored[0])
        except ValueError:
            trace = None
    return result, trace


def previous_run(store: RunStore, run_id: str, name: str) -> str | None:
    """The run called ``name`` started just before ``run_id`` (ids sort by start), if any."""
    with closing(store.reader()) as conn:
        row = conn.execute("SELECT id FROM runs WHERE id < ? AND json_extract(config, '$.name') = ? "
                           "ORDER BY id DESC LIMIT 1", (run_id, name)).fetchone()
    return None if row is None else str(row[0])


def run_series(store: RunStore, name: str, *, limit: int = 60) -> list[tuple[RunInfo, RunResult]]:
    """The last ``limit`` finished runs called ``name``, oldest first, with their summaries (no traces)."""
    with closing(store.reader()) as conn:
        rows = conn.execute(f"SELECT {_INFO_COLUMNS}, result FROM runs WHERE json_extract(config, '$.name') = ? "
                            "AND result IS NOT NULL ORDER BY id DESC LIMIT ?", (name, limit)).fetchall()
    out = []
    for row in reversed(rows):
        try:
            out.append((_info(row[:-1]), decode_run(row[-1], [])))
        except (ValueError, TypeError):
            continue
    return out


__all__ = ["RunRow", "RunsPage", "find_runs", "load_summary", "previous_run", "resolve", "run_info", "run_series", "stored_results", "trace_at"]
