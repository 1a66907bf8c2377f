"""Writing output files so that a crash or a kill never leaves half a file.

Every file assay writes (results in any format, the HTML report, screenshots) goes through
``atomic_write``: a temporary file in the same directory, flushed and fsynced, then renamed over
the target. Until the rename the previous file is untouched; after it the new one is complete. A link
is followed (the file it names is replaced, the link stays), and what is no regular file (``-o
/dev/stdout``, a named pipe) is written directly: renaming over it would replace the device itself.
``check_writable`` validates an output path before any scoring (and any judge spending), and that it is
none of the files the command reads.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "wb", *, encoding: str | None = None,
                 newline: str | None = None) -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; on a clean exit fsync it and rename it over ``path``.

    An exception leaving the block (a crash in a writer, KeyboardInterrupt) deletes the temporary
    file and leaves ``path`` as it was. ``mode`` is ``"wb"`` or ``"w"`` (text, with ``encoding``).
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write mode must be 'wb' or 'w', got {mode!r}")
    with _named(path):
        if is_stream(path):  # /dev/stdout, a pipe, a terminal: written as it comes (nothing to rename over)
            with open(path, mode, encoding=None if mode == "wb" else (encoding or "utf-8"),
                      newline=None if mode == "wb" else newline) as stream:
                yield stream
            return
        yield from _replaced(path, mode, encoding, newline)


@contextmanager
def _named(path: str | os.PathLike[str]) -> Iterator[None]:
    """An OSError that names no file (a full disk: ENOSPC from a write) gets ``path``: the user's name for the
    output, not the temporary file's; the errno's subclass (BrokenPipeError, ...) is kept."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror, os.fspath(path)) from exc


def _replaced(path: str | os.PathLike[str], mode: str, encoding: str | None,
              newline: str | None) -> Iterator[IO[Any]]:
    target = Path(os.path.realpath(path))  # through a link to the file it names: the link stays a link
    directory = target.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, mode, encoding=None if mode == "wb" else (encoding or "utf-8"),
                       newline=None if mode == "wb" else newline) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, encoding: str = "utf-8") -> Path:
    """``data`` into ``path`` through ``atomic_write``; returns the path."""
    with atomic_write(path, "wb") as f:
        f.write(data.encode(encoding) if isinstance(data, str) else data)
    return Path(path)


def check_writable(path: str | os.PathLike[str], what: str = "output", *, uses: Iterable[Any] = ()) -> None:
    """Raise ConfigError unless a file can be written at ``path`` (checked before any work is done).

    The directory must exist and accept a new file (probed by creating and removing one, which
    also catches read-only file systems); the path must not be a directory, nor one of ``uses``, the files
    the command reads or keeps (traces, results, the run store), by any name (a link, another spelling):
    the output would replace what is there, and only the output would be left.
    """
    from .errors import ConfigError  # imported here: this module sits below every layer

    real = os.path.realpath(path)
    for given in uses:
        if not isinstance(given, (str, os.PathLike)) or os.fspath(given) == "-":
            continue
        try:
            same = os.path.samefile(path, given)
        except OSError:  # one of them does not exist (yet): compare what they name
            same = real == os.path.realpath(given)
        if same:
            raise ConfigError(f"{what} {str(path)!r} is a file this command already uses ({os.fspath(given)!r}): "
                              "writing it would replace what is there; give the output another file")
    if is_stream(path):
        if not os.access(path, os.W_OK):
            raise ConfigError(f"{what} {str(path)!r} is not writable")
        return
    target = Path(real)
    directory = target.parent
    if target.is_dir():
        raise ConfigError(f"{what} {str(path)!r} is a directory; give a file name")
    if not directory.is_dir():
        raise ConfigError(f"{what} {str(path)!r}: directory {str(directory)!r} does not exist")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".probe", dir=directory)
    except OSError as exc:
        raise ConfigError(f"{what} {str(path)!r}: cannot write in {str(directory)!r} ({exc.strerror})") from None
    os.close(fd)
    os.unlink(probe)
    if target.exists() and not os.access(target, os.W_OK):
        raise ConfigError(f"{what} {str(path)!r} exists and is not writable")


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether *path* names something that is there and is neither a regular file nor a directory (a device such
    as ``/dev/stdout``, a pipe, ``<(...)``, a socket): written directly, never replaced by a renamed file; read
    once, never opened again for a second look."""
    try:
        kind = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(kind) or stat.S_ISDIR(kind))


def _mode_for(target: Path) -> int:
    """The existing file's permissions, else what a plain ``open`` would give (0o666 minus umask)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable (POSIX); best effort elsewhere."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
