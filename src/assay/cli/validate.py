"""``assay validate``: read trace files and report every bad record, scoring nothing."""

from __future__ import annotations

import sys

import click

from ._common import EXIT_OK, EXIT_USAGE, debug_option, handle_errors, config_option, open_session, plugin_option
from ._input_options import input_options, input_warnings, limits_from


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--input-format", default=None, help="Input format (default: detected).")
@input_options
@config_option
@plugin_option
@debug_option
@handle_errors
def command(paths: tuple[str, ...], input_format: str | None, config_path: str | None, plugins: tuple[str, ...], debug: bool,
            **flags: object) -> None:
    """Check PATHS against the trace format; exit 2 if any record is bad."""
    open_session(config_path, plugins)
    from ..importers import read_traces
    from ..model import InputIssue, negative_values

    good = bad = 0
    formats: dict[str, dict[str, int]] = {}
    with input_warnings():
        for loc, item in read_traces(list(paths), input_format=input_format, limits=limits_from(flags),
                                     formats=formats):
            if isinstance(item, InputIssue):
                bad += 1
                click.echo(str(item), err=True)
            else:
                good += 1
                for field, value in negative_values(item):
                    click.echo(f"Warning: {loc}: {field}: negative ({value!r}); the metrics that read it "
                               "score invalid_data", err=True)
    for source, counts in formats.items():
        shapes = ", ".join(f"{name} ({n} trace{'s' if n != 1 else ''})" for name, n in counts.items()
                           if n or len(counts) == 1)
        click.echo(f"{source}: read as {shapes}")
    click.echo(f"{good} valid trace(s), {bad} invalid record(s)")
    sys.exit(EXIT_USAGE if bad else EXIT_OK)
