"""SQLite helpers shared by the store's reader and writer."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager


def utcnow() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction that takes the lock up front (no deadlock on upgrade)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")

