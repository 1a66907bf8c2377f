"""``assay report``: a self-contained HTML report of a run."""

from __future__ import annotations

import click

from ._common import debug_option, handle_errors


@click.command("report")
@click.argument("run", default="latest")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="report.html", show_default=True,
              help="HTML file to write.")
@click.option("--store", type=click.Path(dir_okay=False), default=None,
              help="Run store file (default: $ASSAY_STORE, else the user data dir).")
@click.option("--comparison", type=click.Path(dir_okay=False), default=None,
              help='Comparison JSON to include: {"metrics": {name: {"delta", "ci_low", "ci_high", "p_value", ...}}}.')
@click.option("--baseline", default=None, metavar="RUN",
              help="Compare against this run (id or results file) and include the comparison section.")
@click.option("--allow-duplicate-ids", "duplicates", type=click.Choice(["first", "last", "mean"]), default=None,
              help="With --baseline: pair ids repeated within a run by the first or last trace, or the mean of "
                   "their scores (default: refuse, listing them).")
@click.option("--title", default=None, help="Page title.")
@click.option("--max-traces", type=click.IntRange(min=1), default=2000, show_default=True,
              help="Traces shown in the table and as views (failed ones are kept first).")
@click.option("--screenshot", type=click.Path(dir_okay=False), default=None,
              help="Also save a PNG of the report (needs a local Chromium).")
@debug_option
@handle_errors
def command(run: str, output: str, store: str | None, comparison: str | None, baseline: str | None,
            duplicates: str | None, title: str | None, max_traces: int, screenshot: str | None, debug: bool) -> None:
    """Write an HTML report of RUN: a run id, unique prefix, latest, latest~N, or a results file."""
    from ..session import make_report

    make_report(run, output, store=store, comparison=comparison, baseline=baseline, duplicates=duplicates, title=title,
                max_traces=max_traces, screenshot=screenshot)
    click.echo(f"report written to {output}" + (f", screenshot {screenshot}" if screenshot else ""), err=True)
