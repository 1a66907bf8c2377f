"""Judge cards in the run store: one table beside the runs, created on first use.

``assay calibrate`` saves its card here; ``assay run`` looks up the cards of its judge so that a
pass rate is corrected without naming a file (only when judge, metric, rubric version and
threshold all fit).
"""

from __future__ import annotations

from ..errors import ConfigError
from ..model import JudgeCard
from ._db import RunStore
from ._sql import write_transaction

_TABLE = """CREATE TABLE IF NOT EXISTS judge_cards (
    id         TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    model      TEXT,
    card       TEXT NOT NULL
)"""


def save_card(store: RunStore, card: JudgeCard) -> None:
    """Keep *card* (a card with the same id, same judge and labels, is replaced)."""
    with store._conn(write=True) as conn, write_transaction(conn):
        conn.execute(_TABLE)
        conn.execute("INSERT OR REPLACE INTO judge_cards (id, created_at, model, card) VALUES (?, ?, ?, ?)",
                     (card.id, card.created_at, card.judge.get("model"), card.to_json(indent=0).decode()))


def list_cards(store: RunStore, model: str | None = None) -> list[JudgeCard]:
    """Cards, newest first; only *model*'s when given."""
    with store._conn() as conn:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'judge_cards'").fetchone() is None:
            return []
        sql = "SELECT id, card FROM judge_cards" + (" WHERE model = ?" if model is not None else "")
        rows = conn.execute(sql + " ORDER BY created_at DESC, id", (model,) if model is not None else ()).fetchall()
    return [JudgeCard.from_json(text, source=f"{store.path}:judge_cards:{id_}") for id_, text in rows]


def load_card(store: RunStore, ref: str) -> JudgeCard:
    """The card with id (or unique id prefix) *ref*."""
    hits = [c for c in list_cards(store) if c.id == ref or c.id.startswith(ref)]
    exact = [c for c in hits if c.id == ref]
    if exact:
        return exact[0]
    if not hits:
        raise ConfigError(f"no judge card {ref!r} in the run store {str(store.path)!r} (nor a file of that name)")
    if len(hits) > 1:
        raise ConfigError(f"judge card prefix {ref!r} is ambiguous: {', '.join(c.id for c in hits[:5])}")
    return hits[0]
