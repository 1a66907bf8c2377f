"""Sequential comparisons' state in the run store: one table beside the runs, created on first use.

``assay compare --sequential`` keeps, under a name, the task-level differences it has consumed
(in the order used) so that the next look, after another batch of tasks, continues the same
confidence sequence instead of starting a new test: that is what keeps its false-alarm rate at
alpha however often a CI job looks.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from ..errors import DataError
from ._db import RunStore
from ._sql import write_transaction

_TABLE = """CREATE TABLE IF NOT EXISTS sequences (
    name       TEXT PRIMARY KEY,
    updated_at TEXT NOT NULL,
    state      TEXT NOT NULL
)"""


def load_sequence(store: RunStore, name: str) -> dict[str, Any] | None:
    """The saved state of sequence *name*, or None when there is none."""
    with store._conn() as conn:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sequences'").fetchone() is None:
            return None
        row = conn.execute("SELECT state FROM sequences WHERE name = ?", (name,)).fetchone()
    if row is None:
        return None
    try:
        state = json.loads(row[0])
    except ValueError as exc:
        raise DataError(f"{str(store.path)!r}: the saved state of sequence {name!r} is not JSON ({exc})") from None
    if not isinstance(state, dict):
        raise DataError(f"{str(store.path)!r}: the saved state of sequence {name!r} is not an object")
    return state


def save_sequence(store: RunStore, name: str, state: dict[str, Any]) -> None:
    """Keep *state* under *name* (replacing the previous one)."""
    text = json.dumps(state, separators=(",", ":"), allow_nan=False)
    with store._conn(write=True) as conn, write_transaction(conn):
        conn.execute(_TABLE)
        conn.execute("INSERT OR REPLACE INTO sequences (name, updated_at, state) VALUES (?, ?, ?)",
                     (name, datetime.now(timezone.utc).isoformat(timespec="seconds"), text))


def delete_sequence(store: RunStore, name: str) -> bool:
    """Forget sequence *name*; True when there was one."""
    with store._conn(write=True) as conn, write_transaction(conn):
        conn.execute(_TABLE)
        return conn.execute("DELETE FROM sequences WHERE name = ?", (name,)).rowcount > 0
