"""The run store: one SQLite file, written by many processes at once.

WAL journaling lets readers (``assay runs``) work while runs write; every write is a short
``BEGIN IMMEDIATE`` transaction and waits up to ``BUSY_TIMEOUT_S`` for the lock, so concurrent
runs queue instead of failing. A run row exists from the moment a run starts (status
``running``); results arrive in batches; a run whose process died keeps what it had written
and lists as ``incomplete``.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine._aggregate import Dimensions, SummaryBuilder, group
from ..errors import ConfigError
from ..model import RunResult, Trace, TraceResult, decode_issue, decode_run, decode_trace
from ._compact import INSERT_BLOCK, RowCodec, decode_block, encode_block
from ._record import RunRecorder
from ._sql import disk_full, write_transaction

BUSY_TIMEOUT_S = 60.0
SCHEMA_VERSION = 4
"""1: a JSON document per trace (~940 bytes per metric result); 2: compact rows (``_compact``);
3: the stored input traces in their own table (large rows slow a WITHOUT ROWID table down);
4: a batch of traces' rows per store row (``result_blocks``: one insert per batch, not per trace), and the
stored inputs carry their trace id and source."""

_RUNS = """
CREATE TABLE IF NOT EXISTS runs (
    id          TEXT PRIMARY KEY,
    started_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    finished_at TEXT,
    status      TEXT NOT NULL,
    host        TEXT,
    pid         INTEGER,
    inputs      TEXT NOT NULL DEFAULT '[]',
    metrics     TEXT NOT NULL DEFAULT '[]',
    config      TEXT NOT NULL DEFAULT '{}',
    judge       TEXT,
    n_traces    INTEGER NOT NULL DEFAULT 0,
    n_passed    INTEGER NOT NULL DEFAULT 0,
    n_failed    INTEGER NOT NULL DEFAULT 0,
    n_issues    INTEGER NOT NULL DEFAULT 0,
    tokens      INTEGER NOT NULL DEFAULT 0,
    cost_usd    REAL,
    result      TEXT,
    error       TEXT
);
CREATE TABLE IF NOT EXISTS issues (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq    INTEGER NOT NULL,
    issue  TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at)
"""
_RESULTS = """
CREATE TABLE IF NOT EXISTS result_blocks (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq    INTEGER NOT NULL,
    n      INTEGER NOT NULL,
    rows   BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS inputs (
    run_id   TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,
    trace_id TEXT,
    source,
    trace    TEXT NOT NULL,
    UNIQUE (run_id, seq)
)
"""
"""``result_blocks``: the rows of traces ``seq`` .. ``seq + n - 1`` of a run (``_compact.encode_block``: per
trace its id, task id (NULL: the trace id), trial, source (text, or ``line << 8 | input index``), passed,
scores and extra); ``inputs``: the input traces of a run's first traces and failed ones."""

_RESULTS_V3 = """
CREATE TABLE IF NOT EXISTS results (
    run_id   TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,
    trace_id TEXT NOT NULL,
    task_id  TEXT,
    trial    INTEGER,
    source,
    passed   INTEGER,
    scores   BLOB NOT NULL,
    extra    BLOB,
    trace    TEXT,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS inputs (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq    INTEGER NOT NULL,
    trace  TEXT NOT NULL,
    UNIQUE (run_id, seq)
)
"""
"""Schema 2 and 3's tables, what the older migrations write into: one results row per trace."""
_INSERT_V3 = ("INSERT INTO results (run_id, seq, trace_id, task_id, trial, source, passed, scores, extra) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")


def _create(conn: sqlite3.Connection, results: str = _RESULTS) -> None:
    for statement in (*_RUNS.split(";"), *results.split(";")):  # not executescript: it would COMMIT
        if statement.strip():
            conn.execute(statement)


def _migrate_v3(conn: sqlite3.Connection, progress: _Progress) -> None:
    """Schema 3 -> 4: a run's results rows become blocks of up to 1000 traces; inputs get id and source."""
    conn.execute("ALTER TABLE inputs ADD COLUMN trace_id TEXT")
    conn.execute("ALTER TABLE inputs ADD COLUMN source")
    conn.execute("UPDATE inputs SET (trace_id, source) = (SELECT r.trace_id, r.source FROM results r "
                 "WHERE r.run_id = inputs.run_id AND r.seq = inputs.seq)")
    _create(conn)
    rows = conn.execute("SELECT run_id, seq, trace_id, task_id, trial, source, passed, scores, extra FROM results "
                        "ORDER BY run_id, seq")
    block: list[tuple[Any, ...]] = []
    run = first = None
    for run_id, seq, *row in rows:
        if block and (run_id != run or seq != first + len(block) or len(block) >= 1000):  # type: ignore[operator]
            conn.execute(INSERT_BLOCK, (run, first, len(block), encode_block(block)))
            block = []
        if not block:
            run, first = run_id, seq
        block.append(tuple(row))
        progress.step()
    if block:
        conn.execute(INSERT_BLOCK, (run, first, len(block), encode_block(block)))
    rows.close()
    conn.execute("DROP TABLE results")


def _migrate_v2(conn: sqlite3.Connection) -> None:
    """Schema 2 -> 3: input traces move from ``results.trace`` to ``inputs``."""
    _create(conn, _RESULTS_V3)
    conn.execute("INSERT OR IGNORE INTO inputs (run_id, seq, trace) "
                 "SELECT run_id, seq, trace FROM results WHERE trace IS NOT NULL")
    conn.execute("UPDATE results SET trace = NULL WHERE trace IS NOT NULL")


def _migrate_v1(conn: sqlite3.Connection, progress: _Progress) -> None:
    """Schema 1 -> 2: every stored trace's JSON document becomes a compact row, losing nothing."""
    conn.execute("ALTER TABLE results RENAME TO results_v1")
    _create(conn, _RESULTS_V3)
    for run_id, metrics, _config, inputs in conn.execute("SELECT id, metrics, config, inputs FROM runs").fetchall():
        codec = RowCodec(json.loads(metrics), json.loads(inputs))
        rows = conn.execute("SELECT seq, result, trace FROM results_v1 WHERE run_id = ? ORDER BY seq", (run_id,))
        while batch := rows.fetchmany(1000):
            out, inputs = [], []
            for seq, text, trace in batch:
                t = decode_trace(text)
                scores, extra = codec.pack(t, keep_all=True)
                out.append((run_id, seq, t.id, None if t.task_id == t.id else t.task_id, t.trial, codec.source(t.source),
                            None if t.passed is None else int(t.passed), scores, extra))
                if trace is not None:
                    inputs.append((run_id, seq, trace))
            conn.executemany(_INSERT_V3, out)
            conn.executemany("INSERT INTO inputs (run_id, seq, trace) VALUES (?, ?, ?)", inputs)
            progress.step(len(batch))
    conn.execute("DROP TABLE results_v1")


PROGRESS_S = 5.0
"""Seconds between the progress lines of a store upgrade."""


class _Progress:
    """A store upgrade on stderr: that it runs (it holds the write lock, so other runs wait), how far it
    is every ``PROGRESS_S`` seconds, and when it is done. Silent when there is nothing to convert."""

    def __init__(self, path: Path, version: int, total: int) -> None:
        self.path, self.total, self.count = path, total, 0
        self._started = time.monotonic()
        self._next = self._started + PROGRESS_S
        if total:
            size = path.stat().st_size / 1e6 if path.exists() else 0.0
            _say(f"assay: upgrading the run store {str(path)!r} ({size:,.0f} MB, {total:,} stored results) from "
                 f"schema {version} to {SCHEMA_VERSION}; other assay processes using it wait until this is done")

    def step(self, n: int = 1) -> None:
        self.count += n
        if self.total and time.monotonic() >= self._next:
            self._next += PROGRESS_S
            _say(f"assay: upgrading the run store: {self.count / self.total:.0%} ({self.count:,} of {self.total:,})")

    def done(self) -> None:
        if self.total:
            _say(f"assay: run store upgraded in {time.monotonic() - self._started:.1f} s")


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _writable(path: Path) -> bool:
    """Whether this process can write the store (and, for its WAL files, the folder it is in)."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _alive(pid: int | None) -> bool | None:
    """Whether a local process is alive; None when it cannot be told (not POSIX)."""
    if pid is None or os.name != "posix":
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(slots=True)
class RunInfo:
    """One row of ``assay runs``."""

    id: str
    started_at: str
    finished_at: str | None
    status: str
    """running, completed, failed, interrupted, or incomplete (its process died while running)."""
    inputs: list[dict[str, Any]]
    metrics: list[dict[str, Any]]
    judge: dict[str, Any] | None
    n_traces: int
    n_passed: int
    n_failed: int
    n_issues: int
    tokens: int
    cost_usd: float | None
    error: str | None = None
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def pass_rate(self) -> float | None:
        scored = self.n_passed + self.n_failed
        return self.n_passed / scored if scored else None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "started_at": self.started_at, "finished_at": self.finished_at,
                "status": self.status, "inputs": self.inputs, "metrics": [m.get("name") for m in self.metrics],
                "judge": self.judge, "n_traces": self.n_traces, "n_passed": self.n_passed,
                "n_failed": self.n_failed, "n_issues": self.n_issues, "pass_rate": self.pass_rate,
                "tokens": self.tokens, "cost_usd": self.cost_usd, "error": self.error}


_INFO_COLUMNS = ("id, started_at, finished_at, status, host, pid, inputs, metrics, judge, n_traces, n_passed, "
                 "n_failed, n_issues, tokens, cost_usd, error, config")


def _info(row: tuple[Any, ...]) -> RunInfo:
    (id_, started, finished, status, host, pid, inputs, metrics, judge, n, n_passed, n_failed, n_issues, tokens,
     cost, error, config) = row
    if status == "running" and host == socket.gethostname() and _alive(pid) is False:
        status = "incomplete"
    return RunInfo(id_, started, finished, status, json.loads(inputs), json.loads(metrics),
                   json.loads(judge) if judge else None, n, n_passed, n_failed, n_issues, tokens, cost, error,
                   json.loads(config or "{}"))


class RunStore:
    """A run store file; cheap to create: connections are opened per operation."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunStore({str(self.path)!r})"

    def connect(self, *, write: bool = True) -> sqlite3.Connection:
        """A connection in autocommit mode with WAL and the busy timeout set; creates the file.

        ``write=False`` (listing, loading, reporting): a store this process may not write (a
        read-only file or folder) is opened read-only instead, as long as it needs no upgrade.
        A store written by a newer assay is refused either way, before anything is written to it.
        """
        if not write and self.path.exists() and not _writable(self.path):
            return self._read_only()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the run store {str(self.path)!r}: {exc}; "
                              "set ASSAY_STORE or pass --store PATH / --no-store") from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self._check_version(conn)
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                with write_transaction(conn):
                    version = self._check_version(conn)  # under the lock now: another process may have upgraded it
                    if version < SCHEMA_VERSION:
                        self._upgrade(conn, version)
        except sqlite3.DatabaseError as exc:
            conn.close()
            if (full := disk_full(exc, str(self.path))) is not None:  # the disk, not the file, is at fault
                raise full from None
            raise ConfigError(f"{str(self.path)!r} is not a usable assay run store: {exc}") from None
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_version(self, conn: sqlite3.Connection) -> int:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ConfigError(f"the run store {str(self.path)!r} was written by a newer assay (schema {version}; this "
                              f"one reads up to {SCHEMA_VERSION}): upgrade assay, or use another store (--store PATH, "
                              "ASSAY_STORE, --no-store)")
        return version

    def _upgrade(self, conn: sqlite3.Connection, version: int) -> None:
        """Schema *version* -> SCHEMA_VERSION, in the caller's write transaction, saying so on stderr."""
        has_results = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'results'").fetchone() is not None
        total = conn.execute("SELECT count(*) FROM results").fetchone()[0] if has_results and version else 0
        progress = _Progress(self.path, version, total)
        if version == 1:
            _migrate_v1(conn, progress)
        if version in (1, 2):
            _migrate_v2(conn)
        if version in (1, 2, 3):
            _migrate_v3(conn, progress)
        _create(conn)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        progress.done()

    def reader(self) -> sqlite3.Connection:
        """A read-only connection: never creates, writes or upgrades the store (``assay view``).

        It sees what other processes commit while it is open (WAL); a store that does not exist
        yet, or needs an upgrade, is a ConfigError saying so.
        """
        if not self.path.exists():
            raise ConfigError(f"the run store {str(self.path)!r} does not exist yet: `assay run` creates it")
        if _writable(self.path):  # an old schema is upgraded by any command that writes, not by a reader
            with closing(sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
                try:
                    version = self._check_version(conn)
                except sqlite3.DatabaseError as exc:
                    raise ConfigError(f"{str(self.path)!r} is not a usable assay run store: {exc}") from None
            if version < SCHEMA_VERSION:
                raise ConfigError(f"the run store {str(self.path)!r} is of schema {version}: `assay runs` upgrades it "
                                  f"to schema {SCHEMA_VERSION} (a reader never writes it)")
        return self._read_only()

    def _read_only(self) -> sqlite3.Connection:
        """The store opened read-only (``mode=ro``; ``immutable`` when SQLite cannot share its WAL index)."""
        uri = self.path.resolve().as_uri()
        for query in ("mode=ro", "immutable=1"):
            conn = sqlite3.connect(f"{uri}?{query}", uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            try:
                version = self._check_version(conn)
            except sqlite3.OperationalError:
                conn.close()
                continue
            except BaseException:
                conn.close()
                raise
            if version < SCHEMA_VERSION:
                conn.close()
                raise ConfigError(f"the run store {str(self.path)!r} is read-only and of schema {version}: this assay "
                                  f"reads it once upgraded to schema {SCHEMA_VERSION}, which needs write access "
                                  "(or copy it somewhere writable)")
            return conn
        raise ConfigError(f"cannot open the read-only run store {str(self.path)!r}: copy it somewhere writable")

    @contextmanager
    def _conn(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        conn = self.connect(write=write)
        try:
            yield conn
        finally:
            conn.close()

    def start(self, *, inputs: list[dict[str, Any]], metrics: list[dict[str, Any]],
              config: dict[str, Any] | None = None, judge: dict[str, Any] | None = None,
              batch_size: int = 1000, flush_interval_s: float = 2.0) -> RunRecorder:
        """Create a ``running`` run row and return the recorder that fills it."""
        return RunRecorder.begin(self, inputs=inputs, metrics=metrics, config=config or {}, judge=judge,
                                 batch_size=batch_size, flush_interval_s=flush_interval_s)

    def resume(self, run_id: str, *, batch_size: int = 1000, flush_interval_s: float = 2.0) -> RunRecorder:
        """The recorder of an existing run, to go on adding results to it (``assay serve`` restarted)."""
        return RunRecorder.resume(self, run_id, batch_size=batch_size, flush_interval_s=flush_interval_s)

    def runs(self, limit: int | None = None) -> list[RunInfo]:
        """Runs, newest first."""
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_INFO_COLUMNS} FROM runs ORDER BY id DESC LIMIT ?",
                                (-1 if limit is None else limit,)).fetchall()
        return [_info(r) for r in rows]

    def resolve(self, ref: str) -> str:
        """A run id from an id, a unique id prefix, ``latest`` or ``latest~N`` (N runs before it)."""
        with self._conn() as conn:
            if ref == "latest" or ref.startswith("latest~"):
                back = ref.partition("~")[2] or "0"
                if not back.isdigit():
                    raise ConfigError(f"bad run reference {ref!r}: expected latest or latest~N")
                row = conn.execute("SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?", (int(back),)).fetchone()
                if row is None:
                    raise ConfigError(f"no run {ref!r} in the run store {str(self.path)!r}")
                return row[0]
            like = ref.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            ids = [r[0] for r in conn.execute(
                "SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' ORDER BY id DESC LIMIT 6", (like,))]
        if not ids:
            raise ConfigError(f"no run {ref!r} in the run store {str(self.path)!r}; `assay runs` lists them")
        if len(ids) > 1 and ref.lower() not in ids:
            more = ", ..." if len(ids) > 5 else ""
            raise ConfigError(f"run prefix {ref!r} is ambiguous: {', '.join(ids[:5])}{more}")
        return ref.lower() if ref.lower() in ids else ids[0]

    def info(self, ref: str) -> RunInfo:
        run_id = self.resolve(ref)
        with self._conn() as conn:
            return _info(conn.execute(f"SELECT {_INFO_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone())

    def load(self, ref: str, *, each: Callable[[TraceResult], None] | None = None) -> RunResult:
        """A stored run as a RunResult; an unfinished run gets summaries rebuilt from its traces.

        With ``each``, every stored TraceResult is handed to it in input order instead of being
        kept (the result's ``traces`` is empty), so memory does not grow with the run.
        """
        run_id = self.resolve(ref)
        with self._conn() as conn:
            row = conn.execute(f"SELECT {_INFO_COLUMNS}, result FROM runs WHERE id = ?", (run_id,)).fetchone()
            info = _info(row[:-1])
            codec = RowCodec(info.metrics, info.inputs, regroup=_regroup(info.metrics, info.config))
            stream = (codec.unpack(trace_id, task_id, trial, source, scores, extra)
                      for (data,) in conn.execute("SELECT rows FROM result_blocks WHERE run_id = ? ORDER BY seq",
                                                  (run_id,))
                      for trace_id, task_id, trial, source, _, scores, extra in decode_block(data))
            if row[-1] is not None:
                result = decode_run(row[-1], _kept(stream, each))
            else:
                result = _rebuild(info, stream, each)
            issues = [decode_issue(r[0]) for r in
                      conn.execute("SELECT issue FROM issues WHERE run_id = ? ORDER BY seq", (run_id,))]
        result.input_issues = issues or result.input_issues
        result.run.update(run_id=info.id, status=info.status, input_files=info.inputs)
        if info.error:
            result.run.error = info.error
        return result

    def traces(self, ref: str, *, limit: int | None = None, keys: set[str] | None = None) -> dict[str, Trace]:
        """The stored input traces of a run, keyed by ``file:line`` source (else trace id); with
        ``keys``, only those (the others are not decoded)."""
        run_id = self.resolve(ref)
        out: dict[str, Trace] = {}
        with self._conn() as conn:
            info = _info(conn.execute(f"SELECT {_INFO_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone())
            codec = RowCodec(info.metrics, info.inputs)
            rows = conn.execute("SELECT trace_id, source, trace FROM inputs WHERE run_id = ? ORDER BY seq LIMIT ?",
                                (run_id, -1 if limit is None else limit))
            for trace_id, source, text in rows:
                source = codec.read_source(source)
                if keys is not None and (source or trace_id) not in keys:
                    continue
                try:
                    out[source or trace_id] = Trace.model_validate_json(text)
                except ValueError:
                    continue
        return out

    def delete(self, ref: str) -> str:
        run_id = self.resolve(ref)
        with self._conn(write=True) as conn, write_transaction(conn):
            for table in ("result_blocks", "inputs", "issues"):
                conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        return run_id


class _DimensionOf(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "custom"


def _regroup(metrics: list[dict[str, Any]], config: dict[str, Any]) -> Any:
    """A stored run's dimensions, recomputed as the engine grouped them (its weights and thresholds)."""
    dimension_of = _DimensionOf({str(m.get("name")): m.get("dimension", "custom") for m in metrics})
    dims = Dimensions.make(config.get("dimension_weights"), config.get("dimension_thresholds"))
    return lambda results: group(results, dimension_of, dims)


def _kept(stream: Iterable[TraceResult], each: Callable[[TraceResult], None] | None) -> list[TraceResult]:
    """The traces as a list, or each one handed to ``each`` and none kept."""
    if each is None:
        return list(stream)
    for t in stream:
        each(t)
    return []


def _rebuild(info: RunInfo, stream: Iterable[TraceResult], each: Callable[[TraceResult], None] | None) -> RunResult:
    """Summaries of a run that never finished, from the traces it wrote (kept, or handed to ``each``)."""
    dimension_of = {m["name"]: m.get("dimension", "custom") for m in info.metrics}
    thresholds = {m["name"]: (m.get("params") or {}).get("threshold") for m in info.metrics}
    builder = SummaryBuilder(dimension_of, thresholds)
    traces: list[TraceResult] = []
    n = passed = failed = 0
    for t in stream:
        builder.add(t.metrics)
        n, passed, failed = n + 1, passed + (t.passed is True), failed + (t.passed is False)
        if each is None:
            traces.append(t)
        else:
            each(t)
    run = {"started_at": info.started_at, "n_traces": n,
                           "n_passed": passed, "n_failed": failed, "n_input_issues": info.n_issues,
                           "metrics": info.metrics, "inputs": [i.get("path") for i in info.inputs],
                           **info.config}
    if info.judge:
        run["judge"] = info.judge
    return RunResult(traces, builder.finish(), run)
