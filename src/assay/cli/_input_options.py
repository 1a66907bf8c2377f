"""The input-hygiene flags shared by the commands that read traces (run, validate)."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import click

from ._common import shown

if TYPE_CHECKING:
    from ..importers import Limits


def input_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add --on-bad-text, --max-depth and --max-record-mb (defaults: those of ``Limits``)."""
    for opt in reversed([
        click.option("--on-bad-text", type=click.Choice(["error", "replace"]), default="error",
                     show_default=True,
                     help="A record with invalid UTF-8 or a lone surrogate: reject it (error) or keep it "
                          "with U+FFFD in place of each bad character (replace)."),
        click.option("--max-depth", type=click.IntRange(1, 512), default=256, show_default=True,
                     help="Deepest nesting of arrays/objects a record may have."),
        click.option("--max-record-mb", type=click.FloatRange(min=0, min_open=True),
                     default=128.0, show_default=True,
                     help="Largest record (a line, an array element, a document) in MiB; one string may be "
                          "half of it."),
    ]):
        fn = opt(fn)
    return fn


def limits_from(flags: dict[str, Any]) -> Limits:
    """Pop the flags of ``input_options`` from ``flags``: the Limits they ask for."""
    from ..importers import Limits

    record = int(flags.pop("max_record_mb") * (1 << 20))
    return Limits(max_depth=flags.pop("max_depth"), max_record_bytes=record,
                  max_string_bytes=max(1, record // 2), on_bad_text=flags.pop("on_bad_text"))


@contextlib.contextmanager
def input_warnings() -> Iterator[None]:
    """Print each InputWarning (and CacheWarning) raised inside the block as one 'Warning: ...' line on stderr."""
    from ..errors import CacheWarning, InputWarning

    previous = warnings.showwarning

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, (InputWarning, CacheWarning)):
            click.echo(shown(f"Warning: {message}"), err=True)
        else:
            previous(message, category, *args, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("always", InputWarning)
        warnings.showwarning = show
        yield
