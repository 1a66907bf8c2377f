"""Shared CLI plumbing: error -> one 'Error:' line and exit status, console setup."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from ..errors import AssayError, ConfigError, DataError, ProviderError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

debug_option = click.option("--debug", is_flag=True, help="Show tracebacks on errors.")


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Print assay errors as one line and exit 2; tracebacks only with --debug."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = kwargs.get("debug", False)
        try:
            return fn(*args, **kwargs)
        except (ConfigError, DataError, ProviderError, AssayError) as exc:
            if debug:
                raise
            click.echo(f"Error: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            sys.exit(130)

    return wrapper


def stderr_console() -> Any:
    from rich.console import Console
    return Console(stderr=True)
