"""``assay collect``: run an agent on a task file and record its trials as assay traces.

The engine scores traces; this produces them. ``collect(tasks, agent=..., user=..., trials=K)``
runs every task K times (with a simulated user when ``user`` is given) and returns a
:class:`Collected`, which ``assay.evaluate`` scores directly. With ``output`` the traces are
written atomically to a JSON Lines file, and finished trials are journalled beside it as they
end, so a rerun after an interrupt collects only the unfinished ones. The journal is keyed by the
collection's identity (tasks, settings, the agent's and user's model, endpoint and command), and a
lock file beside the output keeps a second collection into the same file from running at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any

from .._files import atomic_write, check_writable
from ..errors import ConfigError, DataError
from ..model import Trace
from ..model._options import CONCURRENCY, JudgeOptions
from ._agents import AgentReply, AgentRequest, make_agent, make_user
from ._runner import MAX_TURNS, Collected, NotCollected, Settings, _command, check_settings, collect_async, \
    fingerprint, trial_key
from ._tasks import Task, Tool, load_tasks
from ._tools import Code, CodePolicy, register_tool
from ._user import UserTurn

__all__ = ["AgentReply", "AgentRequest", "Collected", "NotCollected", "Settings", "Task", "Tool", "UserTurn", "collect",
           "journal_path", "load_tasks", "make_agent", "make_user", "register_tool", "simulator_errors_path"]


def journal_path(output: str | os.PathLike[str]) -> Path:
    """Where the finished trials of an unfinished collection into ``output`` are kept."""
    out = Path(output)
    return out.with_name(f".{out.name}.collect-journal")


def lock_path(output: str | os.PathLike[str]) -> Path:
    """The lock a collection into ``output`` holds while it runs."""
    out = Path(output)
    return out.with_name(f".{out.name}.collect-lock")


def simulator_errors_path(output: str | os.PathLike[str]) -> Path:
    """Where the trials a simulated user broke are written: beside ``output``, never scored with it."""
    out = Path(output)
    return out.with_name(f"{out.stem}.simulator-errors{out.suffix or '.jsonl'}")


def collect(tasks: str | os.PathLike[str] | Iterable[Any], agent: Any, *, user: Any = None, trials: int = 1,
            output: str | os.PathLike[str] | None = None, temperature: float = 1.0, seed: int | None = None,
            max_turns: int | None = None, max_tokens: int | None = None,
            agent_options: JudgeOptions | dict[str, Any] | None = None,
            user_options: JudgeOptions | dict[str, Any] | None = None,
            on_trial: Callable[[Trace, str | None], None] | None = None, cancel: threading.Event | None = None,
            allow_code: bool | str | Iterable[str] = False, tools: dict[str, Any] | None = None,
            retry_failed: int = 0, fresh: bool = False, agent_env: Iterable[str] = (), **options: Any) -> Collected:
    """Run ``agent`` on every task ``trials`` times; returns the traces (``Collected``).

    ``tasks``: a task file (JSONL, docs/collect.md) or Task objects / dicts. ``agent``: a model
    string (``"openai:gpt-4o-mini"``, ``"openai-compatible:M@URL"``, ``"local:PATH.gguf"``),
    ``"http://..."``, ``"module:function"``, ``"cmd:COMMAND"`` or a function ``f(messages)``.
    ``user``: a judge model string or Judge playing the user (else each task is its fixed user
    turns). ``options`` (make_judge's: ``concurrency``, ``retries``, ``timeout``, ``cache``,
    ``budget_usd``, ...) apply to both; ``agent_options`` / ``user_options`` (a JudgeOptions or its
    fields as a dict) to one.
    ``temperature`` and ``seed`` (trial t samples with ``seed + t``) are recorded in each trace.
    ``allow_code``: the code a task file may name for its tools (none by default: a task file naming
    code is refused before anything is imported): True (any module outside the standard library, any
    ``.py`` file) or module prefixes and paths (``["my_project.tools", "./tools/"]``). ``tools``: tools
    of your own code by name (``"function": NAME`` in a task), as ``register_tool`` registers them.
    ``retry_failed``: times a trial whose agent failed (error, timeout) is run again, afresh.
    ``fresh``: ignore (and replace) the journal of an interrupted earlier run into ``output``.
    ``agent_env``: names of environment variables a ``cmd:`` agent gets besides the minimal ones.
    """
    task_list = load_tasks(tasks)
    settings = Settings(trials=trials, temperature=temperature, seed=seed, max_turns=MAX_TURNS if max_turns is None else max_turns,
                        max_tokens=max_tokens, retry_failed=retry_failed)
    check_settings(trials, settings.max_turns)
    if retry_failed < 0:
        raise ConfigError(f"retry_failed: expected 0 or more, got {retry_failed}")
    if output is not None:
        check_writable(output, "output", uses=[tasks])  # (the task file)
    source = str(tasks) if isinstance(tasks, (str, os.PathLike)) else "the task list"
    code = Code(task_list, CodePolicy(allow_code), tools, source=source)  # before the agent: nothing imported yet
    agent_kw, user_kw = {**options, **_given(agent_options)}, {**options, **_given(user_options)}
    agent_env = tuple(agent_env)
    concurrency = int(agent_kw.get("concurrency") or CONCURRENCY)
    lock = _Lock(lock_path(output), output) if output is not None else None
    try:
        agent_obj = make_agent(agent, **agent_kw, **({"env": agent_env} if agent_env else {}))
        user_obj = None if user is None else make_user(user, **user_kw)
        return _collect(task_list, agent_obj, user_obj, settings, output, fresh, on_trial, cancel, concurrency, code)
    finally:
        if lock is not None:
            lock.release()


def _collect(task_list: list[Task], agent_obj: Any, user_obj: Any, settings: Settings,
             output: str | os.PathLike[str] | None, fresh: bool, on_trial: Callable[[Trace, str | None], None] | None,
             cancel: threading.Event | None, concurrency: int, code: Code) -> Collected:
    journal = journal_path(output) if output is not None else None
    key = fingerprint(task_list, agent_obj, user_obj, settings)
    done = _read_journal(journal, key) if journal is not None and not fresh else {}
    writer = _Journal(journal, key, fresh=not done) if journal is not None else None

    def finished(trace: Trace, fault: str | None) -> None:
        if writer is not None:
            writer.add(trace, fault)
        if on_trial is not None:
            on_trial(trace, fault)

    try:
        result = _run(collect_async(task_list, agent_obj, user_obj, settings, done=done, on_trial=finished,
                                    cancel=cancel, concurrency=concurrency, code=code))
    finally:
        command = _command(agent_obj)
        if command is not None:
            command.kill_all()  # however the collection ended, no command it started outlives it
        if writer is not None:
            writer.close()
        from ..judge._cache import close_caches  # loaded with the agent's judge stack already

        close_caches(agent_obj, user_obj)
    if output is not None and not result.interrupted:
        _write(output, result.traces)
        errors = simulator_errors_path(output)
        if result.simulator_errors:
            _write(errors, result.simulator_errors)
        else:
            with suppress(OSError):
                errors.unlink()  # an earlier collection's faults do not describe this one
        if not result.not_collected:  # else the journal stays: a rerun collects only the missing trials
            with suppress(OSError):
                journal.unlink()  # type: ignore[union-attr]
    return result


def _given(options: JudgeOptions | dict[str, Any] | None) -> dict[str, Any]:
    """A side's options as make_judge keywords: a JudgeOptions' settings that differ from the defaults."""
    return options.given() if isinstance(options, JudgeOptions) else dict(options or {})


def _run(coro: Any) -> Any:
    """Run to completion, also from inside a running loop (a notebook): then in a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: list[Any] = []

    def worker() -> None:
        try:
            box.append((True, asyncio.run(coro)))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box.append((False, exc))

    thread = threading.Thread(target=worker, name="assay-collect")
    thread.start()
    thread.join()
    ok, value = box[0]
    if not ok:
        raise value
    return value


def _write(path: str | os.PathLike[str], traces: list[Trace]) -> None:
    with atomic_write(path) as f:
        for trace in traces:
            f.write(trace.model_dump_json().encode() + b"\n")


def _read_journal(path: Path, key: str) -> dict[str, tuple[Trace, str | None]]:
    """The finished trials of an interrupted run of the same collection (else none).

    A journal of another collection (other tasks, settings, agent or user identity) is ignored, and
    replaced when this one starts; one that cannot be read is a DataError naming it and the way out.
    Only its last line may be cut short (by the interrupt: that trial is collected again)."""
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise _damaged(path, f"cannot read it ({exc.strerror or exc})") from None
    if not lines:
        return {}
    try:
        head = json.loads(lines[0])
    except ValueError:
        raise _damaged(path, "line 1 is not the journal's header") from None
    if not isinstance(head, dict) or not isinstance(head.get("collection"), str):
        raise _damaged(path, "line 1 is not the journal's header")
    if head["collection"] != key:
        return {}
    done: dict[str, tuple[Trace, str | None]] = {}
    for n, line in enumerate(lines[1:], start=2):
        try:
            item = json.loads(line)
            trace = Trace.model_validate(item["trace"])
        except (ValueError, KeyError, TypeError) as exc:
            if n == len(lines):
                break  # a line cut short by the interrupt: that trial is collected again
            raise _damaged(path, f"line {n} is not a finished trial ({type(exc).__name__})") from None
        done[trial_key(trace.task, trace.trial or 0)] = (trace, item.get("simulator_error"))
    return done


def _damaged(path: Path, why: str) -> DataError:
    return DataError(f"the journal of an interrupted collection, {str(path)!r}, is damaged: {why}. Delete it, or "
                     "rerun with --fresh (fresh=True) to collect every trial again")


class _Lock:
    """An exclusive lock on ``path`` for one collection into an output, so that a second one at the same
    time is refused instead of paying for the same trials twice. The file holds the owner's pid and is
    removed on release (a lock taken on a file removed meanwhile is taken again on the new one)."""

    def __init__(self, path: Path, output: str | os.PathLike[str]) -> None:
        self.path = path
        for _ in range(8):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if not _try_lock(fd):
                    raise ConfigError(f"another collection into {str(output)!r} is running{_owner(fd)}: wait for "
                                      f"it to end, or give another -o (its lock file is {str(path)!r}, removed "
                                      "when it ends)")
                same = os.path.exists(path) and os.stat(path).st_ino == os.fstat(fd).st_ino
            except BaseException:
                os.close(fd)
                raise
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self._fd: int | None = fd
                return
            os.close(fd)  # the holder removed the file while we waited for it: lock the new one
        raise ConfigError(f"cannot take the lock {str(path)!r}: it keeps being replaced")

    def release(self) -> None:
        if self._fd is None:
            return
        with suppress(OSError):
            self.path.unlink()
        os.close(self._fd)  # closing the descriptor releases the lock
        self._fd = None


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]  # Windows only: no stub here
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _owner(fd: int) -> str:
    with suppress(OSError, ValueError, AttributeError):  # AttributeError: no os.pread (Windows)
        pid = int(os.pread(fd, 32, 0).decode().strip())
        return f" (assay collect, pid {pid})"
    return ""


class _Journal:
    """Appends each finished trial (flushed and fsynced) to the journal beside the output."""

    def __init__(self, path: Path, key: str, *, fresh: bool) -> None:
        self._lock = threading.Lock()
        self._file = open(path, "wb" if fresh else "ab")  # noqa: SIM115 - closed by close()
        if fresh:
            self._file.write(json.dumps({"collection": key}).encode() + b"\n")
            self._sync()

    def add(self, trace: Trace, fault: str | None) -> None:
        line = json.dumps({"trace": trace.model_dump(), "simulator_error": fault}, default=str).encode() + b"\n"
        with self._lock:
            self._file.write(line)
            self._sync()

    def _sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()
