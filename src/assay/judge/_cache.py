"""A persistent verdict cache: re-running an evaluation costs nothing, a killed run resumes.

SQLite in WAL mode, one connection per thread and process, each verdict committed as soon as it
arrives, so concurrent writers (threads, ``pytest -n``, parallel CLI runs) and a run killed midway
are both safe. On an event loop "as soon as it arrives" is the end of the loop step it arrived in, in one
transaction with the others of that step (replies come in bursts, and a commit per verdict was most of
the cache's cost: a put took 35-50 us); a step's flush that a closed loop dropped is done by ``close``,
at exit, or the next put. Only successful verdicts are stored: an error is never replayed from the cache.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import hashlib
import json
import os
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from assay.errors import CacheWarning, ConfigError

from ._base import Wrapper
from ._parse import Schema, VerdictSchema, schema_text
from ._protocol import Judge, JudgeRequest, TokenLogprob, Verdict
from ._stats import JudgeStats

if TYPE_CHECKING:
    import pydantic

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    verdict TEXT NOT NULL,
    created REAL NOT NULL
)"""


def default_cache_path() -> Path:
    """``$ASSAY_CACHE_DIR/judge.sqlite3``, else the user cache dir (platformdirs), else ~/.cache/assay."""
    override = os.environ.get("ASSAY_CACHE_DIR")
    if override:
        return Path(override).expanduser() / "judge.sqlite3"
    try:
        import platformdirs  # optional: the fallback below is right on Linux and close elsewhere
    except ImportError:
        return Path.home() / ".cache" / "assay" / "judge.sqlite3"
    return Path(platformdirs.user_cache_dir("assay", appauthor=False)) / "judge.sqlite3"


def cache_key(model: str, request: JudgeRequest, endpoint: Mapping[str, Any] | None = None) -> str:
    """sha256 over everything that can change the verdict, including the repeat index and the
    backend's ``endpoint`` identity (kind, base URL, Azure API version, a client's class): the same
    model name on another server is another judge.

    A request built from fenced data carries ``content_key`` (its content before fencing), which
    stands in for the messages: they hold per-run fence nonces that must not defeat the cache.
    """
    material = {
        "model": model,
        "messages": request.content_key or list(request.messages),
        "schema": schema_digest(request.schema),
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "key": request.key,
        "repeat": request.repeat,
        "endpoint": dict(endpoint) if endpoint else None,
    }
    return hashlib.sha256(_key_bytes(material)).hexdigest()


def _key_bytes(material: dict[str, Any]) -> bytes:
    """``json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)`` in
    UTF-8: by msgspec when every value is a plain str, int, None or a float that both write alike (their
    strings are the same bytes for every code point; floats differ only in exponents: 1e-05 against
    0.00001), else by json itself. The encoding 3 us against 27 for a request of 4.5 KB (the whole key, sha256
    included, 10.5 us against 31.7)."""
    t = material["temperature"]
    endpoint, messages = material["endpoint"], material["messages"]
    if ((type(t) is float and (t == 0.0 or 1e-4 <= abs(t) < 1e16)) or type(t) is int) \
            and (type(material["max_tokens"]) is int or material["max_tokens"] is None) \
            and type(material["repeat"]) is int and type(material["model"]) is str \
            and type(material["key"]) is str and type(material["schema"]) is str \
            and (endpoint is None or all(type(k) is str and type(v) is str for k, v in endpoint.items())) \
            and (type(messages) is str
                 or all(type(m) is dict and all(type(k) is str and type(v) is str for k, v in m.items())
                        for m in messages)):
        return _KEY_ENCODER.encode(material)
    return json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str).encode("utf-8")


_KEY_ENCODER = msgspec.json.Encoder(order="sorted")


def schema_digest(schema: Schema) -> str:
    """The verdict schema's digest: serialising the schema into every key cost more than hashing it once."""
    if isinstance(schema, VerdictSchema):  # one per option order, kept with it
        return schema.digest
    return _digest(schema)


@functools.lru_cache(maxsize=1024)
def _digest(schema: type[pydantic.BaseModel]) -> str:
    return hashlib.sha256(schema_text(schema).encode("utf-8")).hexdigest()


_SETUP_LOCK = threading.Lock()
_INSERT = "INSERT OR REPLACE INTO verdicts (key, model, verdict, created) VALUES (?, ?, ?, ?)"
MAX_UNWRITTEN = 1024
"""Verdicts of one loop step committed at once, without waiting for the step's end."""


def _flush_at_exit(ref: weakref.ref[JudgeCache]) -> None:
    """A loop closed before its step's end drops that step's flush: the verdicts are committed at exit."""
    cache = ref()
    if cache is not None:
        try:
            cache.flush()
        except Exception:  # noqa: BLE001 - at exit nobody is left to tell; the next run asks for them again
            pass


class JudgeCache:
    """The SQLite store; usable from many threads and processes at once."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self._local = threading.local()
        self._opened: list[tuple[int, Any]] = []  # (pid, connection) of every thread, for close()
        self._generation = 0  # bumped by close(): every thread's connection is stale then
        self._lock = threading.Lock()
        self._unwritten: dict[str, tuple[str, str, str, float]] = {}
        """Rows put in the current loop step, by key: ``get`` finds them here until they are committed."""
        self._due: Any = None  # the event loop whose step's end commits them
        self._at_exit = False
        self._failed: BaseException | None = None  # a step's commit that failed: said at the next use
        self._unwritable: BaseException | None = None  # set once a commit failed: nothing more is written

    def _connection(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid() and self._local.generation == self._generation:
            return conn
        import sqlite3  # imported here so that `import assay.judge` stays light

        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        # Switching a new file to WAL and creating the table take locks that SQLite's busy
        # handler does not always wait for ("database is locked" at once when several
        # connections open a new file together): set up one connection at a time in this
        # process, and retry briefly against other processes.
        with _SETUP_LOCK:
            for attempt in range(100):
                try:
                    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                        conn.execute("PRAGMA journal_mode=WAL")
                    conn.execute(_SCHEMA)
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or attempt == 99:
                        raise
                    time.sleep(0.02)
        conn.execute("PRAGMA synchronous=NORMAL")
        self._local.conn, self._local.pid, self._local.generation = conn, os.getpid(), self._generation
        self._opened.append((os.getpid(), conn))
        return conn

    def check(self) -> None:
        """Open the cache and read it once, so that a broken or unwritable file is one clear error
        before any scoring, as a broken run store is, not a vague failure on every result."""
        import sqlite3

        try:
            conn = self._connection()
            conn.execute("SELECT key FROM verdicts LIMIT 1").fetchall()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"the judge cache {str(self.path)!r} cannot be used: {exc}; move or delete it, pass "
                              "--cache PATH for another file, or --no-cache") from None

    def get(self, key: str, schema: type[pydantic.BaseModel]) -> Verdict | None:
        """The stored verdict for *key*, or None (also when it no longer validates)."""
        self._note_failed()
        pending = self._unwritten.get(key)
        if pending is not None:
            text = pending[2]
        else:
            row = self._connection().execute("SELECT verdict FROM verdicts WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            text = row[0]
        import pydantic  # only for a stored verdict: a miss (a new run's first calls) needs no model

        try:
            data = json.loads(text)
            parsed = schema.model_validate(data.pop("parsed"))
            if "tokens" in data:
                data["tokens"] = tuple(TokenLogprob(str(t), float(lp), tuple((str(a), float(b)) for a, b in top))
                                       for t, lp, top in data["tokens"])
        except (ValueError, KeyError, TypeError, pydantic.ValidationError):
            return None
        return Verdict(parsed=parsed, cached=True, **data)

    def put(self, key: str, verdict: Verdict) -> None:
        if verdict.parsed is None or verdict.error is not None:
            return
        data = {"parsed": verdict.parsed.model_dump(mode="json"), "raw": verdict.raw, "model": verdict.model,
                "input_tokens": verdict.input_tokens, "output_tokens": verdict.output_tokens,
                "cost_usd": 0.0, "latency_s": verdict.latency_s, "attempts": verdict.attempts}
        if verdict.tokens is not None:  # written only when asked for (logprobs), so other entries keep their bytes
            data["tokens"] = [[t.token, t.logprob, [list(a) for a in t.top]] for t in verdict.tokens]
        row = (key, verdict.model, json.dumps(data, ensure_ascii=False), time.time())
        self._note_failed()
        if self._unwritable is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            self._unwritten[key] = row
            full = loop is None or len(self._unwritten) >= MAX_UNWRITTEN  # no event loop: committed now
            schedule = not full and self._due is not loop
            if schedule:
                self._due = loop
        if full:
            try:
                self.flush()
            except Exception as exc:  # noqa: BLE001 - the verdict in hand is kept: the cache stops writing
                self._failed = exc
                self._note_failed()
        elif schedule:
            if not self._at_exit:
                self._at_exit = True
                atexit.register(_flush_at_exit, weakref.ref(self))
            loop.call_soon(self._flush_step)

    def flush(self) -> None:
        """Commit the verdicts put in the current loop step now (the step's end, ``close`` and exit do it)."""
        with self._lock:
            self._due = None
            rows = list(self._unwritten.values())
        if not rows:
            return
        try:
            conn = self._connection()
            if len(rows) == 1:
                conn.execute(_INSERT, rows[0])
            else:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.executemany(_INSERT, rows)
                except BaseException:
                    if conn.in_transaction:  # SQLite has already rolled back after some errors (a full disk)
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
        finally:  # committed, or failed (raised to the caller): no longer pending either way
            with self._lock:
                for row in rows:
                    if self._unwritten.get(row[0]) is row:
                        del self._unwritten[row[0]]

    def _flush_step(self) -> None:
        try:
            self.flush()
        except Exception as exc:  # noqa: BLE001 - nobody to tell at a step's end: the cache's next use says it
            self._failed = exc

    def _note_failed(self) -> None:
        """A commit that failed (a full disk) stops the cache writing, with one warning; the verdicts it could
        not keep are this run's still (they are in the results: only a later run pays for them again)."""
        failed, self._failed = self._failed, None
        if failed is not None and self._unwritable is None:
            self._unwritable = failed
            import warnings
            warnings.warn(CacheWarning(f"the judge cache {str(self.path)!r} could not be written "
                                       f"({type(failed).__name__}: {failed}): this run's verdicts are kept but no "
                                       "longer cached; free space, or pass --cache PATH or --no-cache"), stacklevel=2)

    def __len__(self) -> int:
        self.flush()
        return self._connection().execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]

    def clear(self) -> None:
        with self._lock:
            self._unwritten.clear()
        self._connection().execute("DELETE FROM verdicts")

    def close(self) -> None:
        """Commit what is pending, then close this process's connections, every thread's (the last one folds
        the WAL into the file)."""
        self.flush()
        pid = os.getpid()
        opened, self._opened = self._opened, [(p, c) for p, c in self._opened if p != pid]
        for p, conn in opened:
            if p == pid:
                conn.close()
        self._generation += 1
        self._local.conn = None

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.path)!r})"


def endpoint_of(judge: Any) -> dict[str, Any] | None:
    """The identity of the backend at the bottom of a composed judge (None when it has none)."""
    seen = 0
    while getattr(judge, "inner", None) is not None and seen < 32:
        judge, seen = judge.inner, seen + 1
    identity = getattr(judge, "identity", None)
    return dict(identity) if isinstance(identity, Mapping) else None


class Cached(Wrapper):
    """Answer from ``cache`` when it can; store each successful verdict as soon as it arrives.

    A hit costs nothing in this run: its ``cost_usd`` is 0.0 and ``cached`` is True, while tokens,
    latency and attempts describe the original call.
    """

    def __init__(self, inner: Judge, cache: JudgeCache | str | os.PathLike[str] | None = None, *,
                 stats: JudgeStats | None = None) -> None:
        super().__init__(inner, stats=stats)
        self.endpoint = endpoint_of(inner)
        self.cache = cache if isinstance(cache, JudgeCache) else JudgeCache(cache)
        self.cache.check()

    async def call(self, request: JudgeRequest) -> Verdict:
        key = cache_key(self.model, request, self.endpoint)
        hit = self.cache.get(key, request.schema)
        if hit is not None:
            self.stats.cached += 1
            return hit
        verdict = await self.next(request)
        self.cache.put(key, verdict)
        return verdict


def close_caches(*judges: Any) -> None:
    """Close the judge caches of *judges* (every layer, a jury's jurors too) once a run is done:
    at a known point, not whenever the interpreter gets to them (see ``cli._common.exit_quickly``)."""
    todo, seen = list(judges), 0
    while todo and seen < 256:
        layer, seen = todo.pop(), seen + 1
        if layer is None:
            continue
        cache = getattr(layer, "cache", None)
        if callable(getattr(cache, "close", None)):
            cache.close()
        todo.append(getattr(layer, "inner", None))
        todo.extend(getattr(layer, "jurors", None) or ())
