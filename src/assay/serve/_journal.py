"""The receiver's journal: every accepted span, durable before the exporter is told ``200``.

One SQLite file (WAL, ``synchronous=FULL``: a committed export survives the process being killed
and the machine losing power). ``spans`` holds each span as the span readers read it (``importers._otlp.otlp_spans``;
JSON), keyed by (trace id, span id), so an exporter's retry of the same spans adds nothing.
``traces`` holds each trace's state: ``open`` (spans arriving), ``scoring`` (handed to the scorer,
under ``run_id``) and ``scored``; a restart finds the ``scoring`` ones in the run store to tell
which were written before the stop (scored once, never twice). A scored trace's span bodies are
emptied (its ids stay, so a late retry is still known as a duplicate): the journal grows by the
spans waiting to be scored plus ~100 bytes per span seen.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path

OPEN, SCORING, SCORED = 0, 1, 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS spans (
  trace_id TEXT NOT NULL, span_id TEXT NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (trace_id, span_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS traces (
  trace_id TEXT PRIMARY KEY, state INTEGER NOT NULL DEFAULT 0, root_ended INTEGER NOT NULL DEFAULT 0,
  first_seen REAL NOT NULL, last_seen REAL NOT NULL, n_spans INTEGER NOT NULL DEFAULT 0, late INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS traces_open ON traces (state, root_ended, last_seen);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class Journal:
    """Thread-safe: the request threads add, the scorer takes and marks (one connection, one lock)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def add(self, spans: Iterable[tuple[str, str, bool, str]]) -> tuple[int, int]:
        """Journal (trace id, span id, is a root that ended, body) rows in one transaction; returns
        (new spans, duplicates). Committed when this returns."""
        now = time.time()
        added = dups = 0
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                for trace_id, span_id, root_ended, body in spans:
                    cur = conn.execute("INSERT OR IGNORE INTO spans (trace_id, span_id, body) VALUES (?, ?, ?)",
                                       (trace_id, span_id, body))
                    if cur.rowcount == 0:
                        dups += 1
                        continue
                    added += 1
                    conn.execute(
                        "INSERT INTO traces (trace_id, root_ended, first_seen, last_seen, n_spans) VALUES (?, ?, ?, ?, 1)"
                        " ON CONFLICT (trace_id) DO UPDATE SET last_seen = excluded.last_seen, n_spans = n_spans + 1,"
                        " root_ended = MAX(root_ended, excluded.root_ended), late = late + (state != 0)",
                        (trace_id, int(root_ended), now, now))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return added, dups

    def ready(self, quiet_s: float, limit: int) -> list[tuple[str, bool]]:
        """Open traces to score now: (trace id, closed by its root span) - roots ended first, then quiet ones."""
        cutoff = time.time() - quiet_s
        with self._lock:
            rows = self._conn.execute(
                "SELECT trace_id, root_ended FROM traces WHERE state = 0 AND (root_ended = 1 OR last_seen < ?)"
                " ORDER BY root_ended DESC, last_seen LIMIT ?", (cutoff, limit)).fetchall()
        return [(t, bool(r)) for t, r in rows]

    def mark(self, trace_ids: list[str], state: int) -> None:
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("UPDATE traces SET state = ? WHERE trace_id = ?", [(state, t) for t in trace_ids])
            if state == SCORED:  # the ids stay (a retry is still a duplicate), the bodies go
                conn.executemany("UPDATE spans SET body = '' WHERE trace_id = ?", [(t,) for t in trace_ids])
            conn.execute("COMMIT")

    def in_state(self, state: int) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT trace_id FROM traces WHERE state = ?", (state,))]

    def spans(self, trace_ids: list[str]) -> dict[str, list[str]]:
        """The journalled spans of each trace (as ``_receiver.dump_span`` wrote them), in one query."""
        out: dict[str, list[str]] = {t: [] for t in trace_ids}
        with self._lock:
            for start in range(0, len(trace_ids), 500):
                part = trace_ids[start:start + 500]
                rows = self._conn.execute(f"SELECT trace_id, body FROM spans WHERE trace_id IN ({','.join('?' * len(part))})",
                                          part).fetchall()
                for trace_id, body in rows:
                    out[trace_id].append(body)
        return out

    def counts(self) -> dict[str, int]:
        """Traces per state and spans not yet scored (the queue the receiver bounds)."""
        with self._lock:
            rows = self._conn.execute("SELECT state, COUNT(*), COALESCE(SUM(n_spans), 0) FROM traces GROUP BY state")
            out = {"open": 0, "scoring": 0, "scored": 0, "pending_spans": 0}
            for state, n, spans in rows:
                out[("open", "scoring", "scored")[state]] = n
                if state != SCORED:
                    out["pending_spans"] += spans
        return out
