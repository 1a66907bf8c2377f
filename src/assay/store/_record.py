"""Writing one run into the store as its results stream in."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from types import TracebackType
from typing import Any, Protocol, Self

from .._secrets import redact
from ..model import InputIssue, RunResult, Trace, TraceResult
from ._codec import dumps, new_run_id
from ._compact import INSERT_BLOCK, INSERT_INPUT, RowCodec, encode_block
from ._sql import utcnow, write_transaction


class RunStore(Protocol):
    """What a recorder needs of the store that hands itself in (``_db.RunStore``): a connection."""

    def connect(self) -> sqlite3.Connection: ...


class RunRecorder:
    """Buffers results and writes them in batches (one store row each); ``finish`` or ``abort`` closes the run.

    As a context manager, an exception leaving the block marks the run ``interrupted``
    (KeyboardInterrupt) or ``failed`` after writing what was buffered.
    """

    def __init__(self, store: RunStore, conn: sqlite3.Connection, run_id: str, *, batch_size: int,
                 flush_interval_s: float, codec: RowCodec | None = None) -> None:
        self.store, self.run_id = store, run_id
        self._codec = codec or RowCodec([])
        self._conn: sqlite3.Connection | None = conn
        self._batch_size, self._interval = batch_size, flush_interval_s
        self._results: list[tuple[Any, ...]] = []
        self._issues: list[tuple[Any, ...]] = []
        self._inputs: list[tuple[Any, ...]] = []
        self._seq = self._issue_seq = 0
        self._passed = self._failed = self._tokens = 0
        self._cost: float | None = None
        self._last_flush = time.monotonic()

    @classmethod
    def begin(cls, store: RunStore, *, inputs: list[dict[str, Any]], metrics: list[dict[str, Any]],
              config: dict[str, Any], judge: dict[str, Any] | None, batch_size: int = 1000,
              flush_interval_s: float = 2.0) -> RunRecorder:
        conn = store.connect()
        now = utcnow()
        for _ in range(5):  # a duplicate id needs the same millisecond and 20 random bits: retry anyway
            run_id = new_run_id()
            try:
                with write_transaction(conn):
                    conn.execute(
                        "INSERT INTO runs (id, started_at, updated_at, status, host, pid, inputs, metrics, config, judge)"
                        " VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)",
                        (run_id, now, now, socket.gethostname(), os.getpid(), dumps(inputs), dumps(metrics),
                         dumps(config), None if judge is None else dumps(judge)))
                break
            except sqlite3.IntegrityError:
                continue
        else:  # pragma: no cover - 5 collisions in a row
            conn.close()
            raise RuntimeError("could not allocate a unique run id")
        return cls(store, conn, run_id, batch_size=batch_size, flush_interval_s=flush_interval_s,
                   codec=RowCodec(metrics, inputs))

    @classmethod
    def resume(cls, store: RunStore, run_id: str, *, batch_size: int = 1000,
               flush_interval_s: float = 2.0) -> RunRecorder:
        """Go on writing a run this process did not start (``assay serve`` after a restart): its counts
        continue, and it is ``running`` again under this process."""
        conn = store.connect()
        row = conn.execute("SELECT n_traces, n_passed, n_failed, n_issues, tokens, cost_usd, metrics, inputs"
                           " FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            conn.close()
            raise KeyError(run_id)
        n, n_passed, n_failed, n_issues, tokens, cost, metrics, inputs = row
        with write_transaction(conn):
            conn.execute("UPDATE runs SET status = 'running', finished_at = NULL, error = NULL, result = NULL,"
                         " host = ?, pid = ?, updated_at = ? WHERE id = ?",
                         (socket.gethostname(), os.getpid(), utcnow(), run_id))
        self = cls(store, conn, run_id, batch_size=batch_size, flush_interval_s=flush_interval_s,
                   codec=RowCodec(json.loads(metrics), json.loads(inputs)))
        self._seq, self._passed, self._failed, self._issue_seq = n, n_passed, n_failed, n_issues
        self._tokens, self._cost = tokens or 0, cost
        return self

    def add(self, item: TraceResult | InputIssue, trace: Trace | None = None) -> None:
        """Buffer one streamed item (with its input trace when known); flushes by size or time."""
        if type(item) is not TraceResult and isinstance(item, InputIssue):
            self._issues.append((self.run_id, self._issue_seq, dumps(item)))
            self._issue_seq += 1
        else:
            codec = self._codec
            # a stored input keeps every reason; costly: some result may carry tokens or a cost
            scores, extra, costly = codec.pack_row(item, trace is not None)
            passed, seq, trace_id = item.passed, self._seq, item.id
            source = codec.source(item.source)
            self._results.append((trace_id, None if item.task_id == trace_id else item.task_id, item.trial, source,
                                  None if passed is None else int(passed), scores, extra))
            if trace is not None:
                self._inputs.append((self.run_id, seq, trace_id, source, trace.model_dump_json()))
            self._seq = seq + 1
            if passed is True:
                self._passed += 1
            elif passed is False:
                self._failed += 1
            if costly:
                for r in item.metrics.values():
                    if r.tokens or r.cost_usd is not None:  # judged results (the rest carry neither)
                        self._tokens += r.tokens
                        if r.cost_usd is not None:
                            self._cost = (self._cost or 0.0) + r.cost_usd
        if (len(self._results) + len(self._issues) >= self._batch_size
                or time.monotonic() - self._last_flush >= self._interval):
            self.flush()

    def flush(self, **columns: Any) -> None:
        """Write buffered items and the running totals (plus ``columns``) in one transaction."""
        conn = self._conn
        if conn is None:
            return
        cols = {"n_traces": self._seq, "n_passed": self._passed, "n_failed": self._failed, "n_issues": self._issue_seq,
                "tokens": self._tokens, "cost_usd": self._cost, "updated_at": utcnow(), **columns}
        with write_transaction(conn):
            if self._results:  # one store row for the batch
                conn.execute(INSERT_BLOCK, (self.run_id, self._seq - len(self._results), len(self._results),
                                            encode_block(self._results)))
            if self._inputs:
                conn.executemany(INSERT_INPUT, self._inputs)
            if self._issues:
                conn.executemany("INSERT INTO issues (run_id, seq, issue) VALUES (?, ?, ?)", self._issues)
            conn.execute(f"UPDATE runs SET {', '.join(f'{k} = ?' for k in cols)} WHERE id = ?",
                         (*cols.values(), self.run_id))
        self._results.clear()
        self._inputs.clear()
        self._issues.clear()
        self._last_flush = time.monotonic()

    def finish(self, result: RunResult) -> None:
        """Mark the run completed and store its summary, statistics and run information."""
        doc = {"run": result.run.to_dict(), "summary": result.summary,
               "statistics": result.statistics}  # traces and issues are rows already
        cost = _run_cost(result)
        judge = result.run.judge
        extra: dict[str, Any] = {"status": "completed", "finished_at": utcnow(), "result": dumps(doc)}
        if cost is not None:
            extra["cost_usd"] = cost
        if judge is not None:
            extra["judge"] = dumps(judge)
        if result.run.input_files is not None:  # hashed while read: known only now
            extra["inputs"] = dumps(result.run.input_files)
        self.flush(**extra)
        self.close()

    def abort(self, status: str = "failed", error: str = "") -> None:
        """Write what was buffered and mark the run ``failed`` or ``interrupted``: as far as the store lets it
        (a full disk that stopped the run stops this too, and the error that stopped the run is the one said)."""
        try:
            self.flush(status=status, finished_at=utcnow(), error=error or None)
        except (OSError, sqlite3.Error):
            pass  # the run keeps the state of its last flush
        finally:
            self.close()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._conn is None:
            return
        if exc is None:
            self.abort("failed", "the run ended without a result")
        elif isinstance(exc, KeyboardInterrupt):
            self.abort("interrupted", "interrupted")
        else:
            self.abort("failed", redact(f"{type(exc).__name__}: {exc}"))


def _run_cost(result: RunResult) -> float | None:
    costs = [s.cost_usd for s in result.summary.values() if s.cost_usd is not None]
    if costs:
        return sum(costs)
    judge = result.run.judge or {}
    cost = judge.get("cost_usd") if isinstance(judge, dict) else None
    return float(cost) if isinstance(cost, (int, float)) else None
