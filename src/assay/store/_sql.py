"""SQLite helpers shared by the store's reader and writer."""

from __future__ import annotations

import errno
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager


def utcnow() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction that takes the lock up front (no deadlock on upgrade). A full disk is an
    OSError (ENOSPC) naming the store's file, as any other write the system refuses, not a database error."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if conn.in_transaction:  # SQLite has already rolled back after some errors (a full disk)
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        if (full := disk_full(exc, _file_of(conn))) is None:
            raise
        raise full from exc


def disk_full(exc: sqlite3.Error, path: str | None) -> OSError | None:
    """SQLite's "database or disk is full" as the OSError any other refused write is (ENOSPC, naming the
    store): the disk is at fault, not the store or assay. None for any other error."""
    if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_FULL:
        return None
    return OSError(errno.ENOSPC, "No space left on device (the run store)", path)


def _file_of(conn: sqlite3.Connection) -> str | None:
    try:
        return str(conn.execute("PRAGMA database_list").fetchone()[2]) or None
    except sqlite3.Error:
        return None

