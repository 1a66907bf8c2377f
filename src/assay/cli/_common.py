"""Shared CLI plumbing: error -> one 'Error:' line and exit status, console setup."""

from __future__ import annotations

import atexit
import functools
import gc
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from .._secrets import redact
from ..errors import AssayError, ConfigError, DataError, ProviderError

if TYPE_CHECKING:
    from ..session._session import Session

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOT_EVALUATED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_BROKEN_PIPE = 141
"""The reader of standard output went away (``| head``): the status a shell shows for a process SIGPIPE
stopped, as every Unix filter would end. Not 1 (a failed threshold) or 3 (an internal error)."""
EXIT_STATUS = {"passed": EXIT_OK, "failed": EXIT_FAILED, "invalid_input": EXIT_USAGE,
               "could_not_evaluate": EXIT_NOT_EVALUATED, "interrupted": EXIT_INTERRUPTED}
"""``RunResult.status`` -> exit status: one mapping, so the CLI cannot drift from the library."""

debug_option = click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
plugin_option = click.option(
    "--plugin", "plugins", multiple=True, metavar="MODULE",
    help="Import MODULE (a module path or a .py file) first, so the metrics, judge backends and importers "
         "it registers can be named (repeatable). Installed plugins need no flag.")
config_option = click.option(
    "-c", "--config", "config_path", type=click.Path(dir_okay=False),
    help="TOML or JSON config file (default: the nearest assay.toml, or pyproject.toml with [tool.assay], "
         "in this directory or a parent).")

_QUICK_EXIT: list[bool] = []


_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What a terminal would act on rather than show: C0 (but tab and newline) and C1 controls, DEL,
and the bidirectional overrides that reorder what is shown."""


def shown(text: str) -> str:
    """*text* safe to print on a terminal: control characters in user data (trace ids, run names,
    tags, reasons, provider messages) as visible ``\\xNN`` / ``\\uNNNN`` escapes."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                       text)


def exit_quickly() -> None:
    """Spare the interpreter's last cycle collection when this process exits (~0.1-0.2 s).

    At exit CPython collects cycles over every object still alive (a run's pydantic schemas,
    numpy, results) only to free memory the OS takes back anyway. Called by a command once its
    files, store and caches are closed; finalisation still flushes the standard streams and
    drops everything else by reference counting.
    """
    if not _QUICK_EXIT:
        _QUICK_EXIT.append(True)
        atexit.register(gc.freeze)


def open_session(config_path: str | None, plugins: tuple[str, ...] = ()) -> Session:
    """The command's :class:`assay.session.Session` (-c, else the nearest config file, and --plugin);
    a config file found rather than named is announced on stderr."""
    from ..session._session import Session

    session = Session.open(config_path, plugins=plugins)
    announce(session, config_path)
    return session


def announce(session: Session, config_path: str | None) -> None:
    """Say on stderr which config file was found (not when -c named it)."""
    if session.source is not None and not config_path:
        click.echo(f"config: {session.source}", err=True)


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Print errors as one ``Error:`` line: usage and input errors exit 2; a judge that refused
    every call and internal errors exit 3 (could not evaluate); tracebacks only with --debug."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = kwargs.get("debug", False)
        try:
            try:
                result = fn(*args, **kwargs)
            except SystemExit:
                _flush_stdout()
                raise
            _flush_stdout()
            return result
        except ProviderError as exc:  # the judge refused every call: nothing could be evaluated
            if debug:
                print_traceback(exc)
            click.echo(shown(redact(f"Error: {exc}")), err=True)
            sys.exit(EXIT_NOT_EVALUATED)
        except (ConfigError, DataError, AssayError) as exc:
            if debug:
                print_traceback(exc)
            click.echo(shown(redact(f"Error: {exc}")), err=True)
            sys.exit(EXIT_USAGE)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except BrokenPipeError as exc:  # before OSError: a reader that left is neither a fault nor a bug
            if _stdout_gone():  # `| head`: quiet, as any filter
                _quiet_stdout()
            else:  # an -o pipe whose reader left: say so
                click.echo(shown(redact(f"Error: an output's reader went away: {exc}")), err=True)
            sys.exit(EXIT_BROKEN_PIPE)
        except OSError as exc:  # the system refused (a full disk, a file gone): not a bug in assay; what and where
            if debug:
                print_traceback(exc)
            where = f": {exc.filename}" if exc.filename is not None else ""
            click.echo(shown(redact(f"Error: {exc.strerror or exc}{where}")), err=True)
            sys.exit(EXIT_NOT_EVALUATED)
        except Exception as exc:  # noqa: BLE001 - an internal error is "could not evaluate", not "failed"
            if debug:
                print_traceback(exc)
            click.echo(shown(redact(f"Error: internal error: {type(exc).__name__}: {exc} (--debug shows the traceback)")),
                       err=True)
            sys.exit(EXIT_NOT_EVALUATED)

    return wrapper


def _flush_stdout() -> None:
    """Flush what is buffered for standard output here, where a reader that left (``| head``) is handled,
    not at the interpreter's exit (where click made it exit 1, the status of a failed threshold)."""
    if sys.stdout is not None:
        sys.stdout.flush()


def _stdout_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (poll reports an error on it); a
    stdout without a file descriptor (a test's capture) is not."""
    import select
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    if not hasattr(select, "poll"):  # Windows: a broken pipe there is stdout's, as a rule
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(event & select.POLLERR for _, event in poller.poll(0))


def _quiet_stdout() -> None:
    """Point standard output at the null device, so the interpreter's flush at exit cannot fail again
    (and print 'Exception ignored ... BrokenPipeError') on what is still buffered."""
    import os
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def print_traceback(exc: BaseException) -> None:
    """The traceback for --debug, on stderr (the exit status stays the documented one)."""
    import traceback
    sys.stderr.write(redact("".join(traceback.format_exception(exc))))  # SDK errors quote request headers
