"""``assay validate``: read trace files and report every bad record, scoring nothing."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ._common import EXIT_OK, EXIT_USAGE, config_option, debug_option, handle_errors, open_session, plugin_option, shown
from ._input_options import input_options, input_warnings, limits_from

_SHOWN = 160
"""Characters of a text shown by ``--verbose``."""


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--input-format", default=None, help="Input format (default: detected).")
@click.option("-v", "--verbose", is_flag=True,
              help="Show, per file, the first trace's first input, its output and the tool calls read.")
@input_options
@config_option
@plugin_option
@debug_option
@handle_errors
def command(paths: tuple[str, ...], input_format: str | None, verbose: bool, config_path: str | None,
            plugins: tuple[str, ...], debug: bool, **flags: object) -> None:
    """Check PATHS against the trace format; exit 2 if any record is bad.

    Records that are read but look wrong (a turn whose text is still an unparsed payload) and
    records skipped on purpose are warnings: printed, not counted as bad.
    """
    open_session(config_path, plugins)
    from ..errors import ConfigError, DataError
    from ..importers import check_file, read_traces
    from ..model import InputIssue, ReadingWarning, negative_values

    list(read_traces([], input_format=input_format))  # an unknown --input-format: one usage error, not one per file
    readable, unreadable = [], 0
    for path in paths:  # a file that cannot be read at all is reported, and the others still checked
        try:
            check_file(path, input_format)
        except (ConfigError, DataError) as exc:
            unreadable += 1
            click.echo(shown(str(exc)), err=True)
        else:
            readable.append(path)
    good = bad = 0
    formats: dict[str, dict[str, int]] = {}
    first: dict[str, Any] = {}
    with input_warnings():
        for loc, item in read_traces(readable, input_format=input_format, limits=limits_from(flags),
                                     formats=formats):
            if isinstance(item, ReadingWarning):
                click.echo(f"Warning: {item}", err=True)
            elif isinstance(item, InputIssue):
                bad += 1
                click.echo(str(item), err=True)
            else:
                good += 1
                first.setdefault(loc.rpartition(":")[0] or loc, item)
                for field, value in negative_values(item):
                    click.echo(f"Warning: {loc}: {field}: negative ({value!r}); the metrics that read it "
                               "score invalid_data", err=True)
    for source, counts in formats.items():
        shapes = ", ".join(f"{name} ({n} trace{'s' if n != 1 else ''})" for name, n in counts.items()
                           if n or len(counts) == 1)
        click.echo(f"{source}: read as {shapes}")
        if verbose and source in first:
            for line in _preview(first[source]):
                click.echo(f"  {line}")
    click.echo(f"{good} valid trace(s), {bad} invalid record(s)" + (f", {unreadable} file(s) not readable as traces"
                                                                     if unreadable else ""))
    sys.exit(EXIT_USAGE if bad or unreadable else EXIT_OK)


def _clip(text: Any) -> str:
    if text is None:
        return "(none)"
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    s = " ".join(s.split())
    return repr(s if len(s) <= _SHOWN else s[:_SHOWN - 3] + "...")


def _preview(trace: Any) -> list[str]:
    """What the first trace of a file was read as: its first input, first output, the tool calls."""
    turns = trace.turns or next((a.turns for a in trace.agents.values() if a.turns), [])
    n_agents = f", {len(trace.agents)} sub-agent(s)" if trace.agents else ""
    lines = [f"first trace {trace.id!r}: {len(turns)} turn(s){n_agents}"]
    if not turns:
        return lines
    lines.append(f"input:  {_clip(turns[0].input)}")
    output = next((t.output for t in turns if t.output), None)
    lines.append(f"output: {_clip(output)}")
    calls = [c for t in turns for c in t.tool_calls]
    lines.append(f"tool calls: {len(calls)}")
    for c in calls[:5]:
        result = c.error if c.error else c.result
        lines.append(f"  {c.name}({_clip(c.arguments)[1:-1][:80]}) -> {_clip(result)[:90]}")
    if len(calls) > 5:
        lines.append(f"  ... {len(calls) - 5} more")
    return lines
