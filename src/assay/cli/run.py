"""``assay run``: score trace files and gate on thresholds."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ._common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, debug_option, handle_errors
from ._input_options import input_options, input_warnings, limits_from
from ._judge_options import judge_options, pop_judge_options


_SUFFIX_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".xml": "junit", ".csv": "csv", ".json": "json"}


@click.command("run")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("-m", "--metric", "metrics", multiple=True, metavar="NAME[:param=value,...]",
              help="Metric to run (repeatable). Default: every metric the data supports.")
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False), help="TOML or JSON config file (default: the nearest assay.toml, or pyproject.toml with [tool.assay], "
                   "in this directory or a parent).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write results to this file.")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json", "jsonl", "junit", "csv"]), default=None,
              help="Output format (default: table on the terminal; into --output, from its suffix: .jsonl, "
                   ".xml (junit), .csv, else json). junit: JUnit XML, "
                   "one test case per trace x metric; csv: one row per trace x metric.")
@click.option("--input-format", default=None, help="Input format (default: detected).")
@click.option("--strict", is_flag=True, help="Stop at the first bad input record.")
@click.option("--judge", default=None, envvar="ASSAY_JUDGE", help="Judge model, e.g. openai:gpt-4o-mini.")
@click.option("--weight", "weights", multiple=True, metavar="DIMENSION=W", help="Dimension weight (repeatable).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: on a terminal).")
@click.option("--store", "store", type=click.Path(dir_okay=False), default=None,
              help="Run store file (default: $ASSAY_STORE, else runs.sqlite3 in the user data dir).")
@click.option("--no-store", is_flag=True, help="Do not record this run in the run store.")
@click.option("--html", type=click.Path(dir_okay=False), default=None, help="Also write an HTML report here.")
@click.option("--intervals/--no-intervals", default=True, show_default=True,
              help="Intervals and pass@k in the summary (keeps ~9 bytes per score; off: constant memory).")
@click.option("--repeats", type=click.IntRange(1), default=1, show_default=True,
              help="Score each judge metric this many times (independent judge calls) and average.")
@judge_options
@input_options
@debug_option
@handle_errors
def command(paths: tuple[str, ...], metrics: tuple[str, ...], config_path: str | None, output: str | None,
            fmt: str | None, input_format: str | None, strict: bool, judge: str | None, weights: tuple[str, ...],
            progress: bool | None, store: str | None, no_store: bool, html: str | None, intervals: bool, repeats: int,
            debug: bool,
            **judge_flags: object) -> None:
    """Score the traces in PATHS; exit 0 if all pass, 1 if a threshold failed, 2 on bad usage or input."""
    from ..engine._config import discover_config, load_config, parse_weight
    from ..errors import ConfigError
    from ..importers import reading_limits
    from . import _render
    from ._session import run_session, store_path

    limits = limits_from(judge_flags)
    cfg = load_config(config_path) if config_path else discover_config()
    if cfg.source is not None and not config_path:
        click.echo(f"config: {cfg.source}", err=True)
    if cfg.criteria:
        from ..metrics.criteria import register_criteria
        register_criteria(cfg.criteria)
    judge_opts = {**cfg.judge_options, **pop_judge_options(judge_flags)}
    if (judge or cfg.judge) is None and judge_opts:
        raise ConfigError(f"judge options {sorted(judge_opts)} given but no judge: pass --judge or set ASSAY_JUDGE")
    for w in weights:
        dim, value = parse_weight(w)
        cfg.weights[dim] = value
    fmt = fmt or (_SUFFIX_FORMATS.get(Path(output).suffix.lower(), "json") if output else "table")
    store_file = store_path(store, no_store)
    with reading_limits(limits), input_warnings():
        result = run_session(list(paths), metrics=list(metrics) or cfg.metrics, judge=judge or cfg.judge,
                             judge_options=judge_opts, weights=cfg.weights, thresholds=cfg.thresholds, repeats=repeats,
                             intervals=intervals,
                             input_format=input_format, strict=strict, output=output, fmt=fmt,
                             progress=sys.stderr.isatty() if progress is None else progress, store=store_file,
                             html=html)
    if fmt == "table":
        _render.table(result)
    elif output:
        click.echo(_render.one_line(result), err=True)
    if result.run.get("run_id"):
        click.echo(f"run {result.run['run_id']} stored in {store_file} (assay runs show {result.run['run_id']})",
                   err=True)
    if html:
        click.echo(f"report written to {html}", err=True)
    if judge_opts.get("dry_run"):
        click.echo(_render.dry_run(result), err=True)
    for issue in result.input_issues[:20]:
        click.echo(f"skipped {issue}", err=True)
    if len(result.input_issues) > 20:
        click.echo(f"... and {len(result.input_issues) - 20} more skipped records", err=True)
    if result.input_issues:
        click.echo(f"{len(result.input_issues)} input record(s) skipped; the others were scored.", err=True)
        sys.exit(EXIT_USAGE)
    sys.exit(EXIT_OK if result.passed else EXIT_FAILED)
