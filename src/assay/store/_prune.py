"""Which stored runs ``assay runs prune`` deletes: unfinished ones, and with ``keep`` old completed
ones, only among the runs its scope (a name, tags) selects."""

from __future__ import annotations

from collections.abc import Mapping

from ._db import RunInfo

UNFINISHED = ("failed", "interrupted", "incomplete")


def in_scope(info: RunInfo, *, name: str | None = None, tags: Mapping[str, str] | None = None) -> bool:
    """True when the run has ``name`` (if given) and every one of ``tags``."""
    config = info.config or {}
    if name is not None and config.get("name") != name:
        return False
    have = config.get("tags") or {}
    return all(have.get(k) == v for k, v in (tags or {}).items())


def prune_plan(infos: list[RunInfo], *, name: str | None = None, tags: Mapping[str, str] | None = None,
               keep: int | None = None) -> tuple[list[RunInfo], int]:
    """(the runs to delete, how many runs in scope are kept) from ``infos``, newest first.

    Unfinished runs in scope go; with ``keep``, completed ones beyond the newest ``keep`` in scope
    too. A running run is never deleted; runs out of scope are not counted.
    """
    scoped = [i for i in infos if in_scope(i, name=name, tags=tags)]
    doomed = [i for i in scoped if i.status in UNFINISHED]
    if keep is not None:
        doomed += [i for i in scoped if i.status == "completed"][keep:]
    return doomed, len(scoped) - len(doomed)
