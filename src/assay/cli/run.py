"""``assay run``: score trace files and gate on thresholds."""

from __future__ import annotations

import sys

import click

from ._common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, debug_option, handle_errors


@click.command("run")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("-m", "--metric", "metrics", multiple=True, metavar="NAME[:param=value,...]",
              help="Metric to run (repeatable). Default: every metric the data supports.")
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False), help="TOML or JSON config file.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write results to this file.")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json", "jsonl"]), default=None,
              help="Output format (default: table on the terminal, json into --output).")
@click.option("--input-format", default=None, help="Input format (default: detected).")
@click.option("--strict", is_flag=True, help="Stop at the first bad input record.")
@click.option("--judge", default=None, envvar="ASSAY_JUDGE", help="Judge model, e.g. openai:gpt-4o-mini.")
@click.option("--weight", "weights", multiple=True, metavar="DIMENSION=W", help="Dimension weight (repeatable).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: on a terminal).")
@debug_option
@handle_errors
def command(paths: tuple[str, ...], metrics: tuple[str, ...], config_path: str | None, output: str | None,
            fmt: str | None, input_format: str | None, strict: bool, judge: str | None, weights: tuple[str, ...],
            progress: bool | None, debug: bool) -> None:
    """Score the traces in PATHS; exit 0 if all pass, 1 if a threshold failed, 2 on bad usage or input."""
    from ..engine._config import RunConfig, load_config
    from ..errors import ConfigError
    from . import _render
    from ._session import run_session

    cfg = load_config(config_path) if config_path else RunConfig()
    for w in weights:
        dim, eq, val = w.partition("=")
        try:
            cfg.weights[dim] = float(val)
        except ValueError:
            raise ConfigError(f"--weight {w!r}: expected DIMENSION=NUMBER") from None
        if not eq:
            raise ConfigError(f"--weight {w!r}: expected DIMENSION=NUMBER")
    fmt = fmt or ("json" if output else "table")
    result = run_session(list(paths), metrics=list(metrics) or cfg.metrics, judge=judge or cfg.judge,
                         judge_options=cfg.judge_options, weights=cfg.weights, thresholds=cfg.thresholds,
                         input_format=input_format, strict=strict, output=output, fmt=fmt,
                         progress=sys.stderr.isatty() if progress is None else progress)
    if fmt == "table":
        _render.table(result)
    elif output:
        click.echo(_render.one_line(result), err=True)
    for issue in result.input_issues[:20]:
        click.echo(f"skipped {issue}", err=True)
    if len(result.input_issues) > 20:
        click.echo(f"... and {len(result.input_issues) - 20} more skipped records", err=True)
    if result.input_issues:
        click.echo(f"{len(result.input_issues)} input record(s) skipped; the others were scored.", err=True)
        sys.exit(EXIT_USAGE)
    sys.exit(EXIT_OK if result.passed else EXIT_FAILED)
