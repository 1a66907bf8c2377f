"""``assay run``: score trace files and gate on thresholds."""

from __future__ import annotations

import sys
from typing import Any

import click

from ._common import EXIT_OK, EXIT_STATUS, debug_option, exit_quickly, handle_errors, announce, config_option, plugin_option, shown
from ._input_options import input_options, input_warnings, limits_from
from ._judge_options import judge_options
from ._progress import progress_display
from ..session._outputs import plan_outputs
from ..session._run import store_path
from ..session._session import Session

OUTPUT_FORMATS = ("table", "json", "jsonl", "junit", "csv", "html")



EPILOG = """\b
Exit status:
  0    every trace passed (and something was scored)
  1    a threshold failed, or a trial failed (a trace with status "failed": the agent's run failed)
  2    usage or input error (bad options, invalid input records)
  3    could not evaluate: nothing scored, more errored or unevaluated results than
       --max-errors tolerates (default: none; a trial excluded for a harness fault counts as
       one unevaluated result per metric), the judge refused every call, or an internal error
  130  interrupted (Ctrl-C, SIGTERM); rerun the same command to resume from the judge cache
  141  the reader of the output went away (| head): stopped quietly; a run cut short is stored interrupted"""


@click.command("run", epilog=EPILOG)
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("-m", "--metric", "metrics", multiple=True, metavar="NAME[@LABEL][:param=value,...]",
              help="Metric to run (repeatable). Default: every metric the data supports. NAME@LABEL names an "
                   "instance, so one metric can run twice with different parameters (results: 'NAME@LABEL').")
@click.option("-o", "--output", "outputs", multiple=True, type=click.Path(dir_okay=False),
              help="Write results to this file (repeatable: -o r.jsonl -o r.html). Its format follows the suffix: "
                   ".json, .jsonl/.ndjson, .csv, .xml (JUnit), .html/.htm (the HTML report), .txt (the table); "
                   "another suffix takes -f, else json. The table is still printed (-q: not).")
@click.option("-f", "--format", "fmt", type=click.Choice(OUTPUT_FORMATS), default=None,
              help="Output format (default: table on the terminal; into -o, from its suffix). An -o whose suffix "
                   "names another format is an error. junit: JUnit XML, one test case per trace x metric; "
                   "csv: one row per trace x metric; html: the report (needs -o).")
@click.option("-q", "--quiet", is_flag=True,
              help="Print only the one-line count (on stderr): no table, failed traces, judge summary, "
                   "progress or file list; a run that could not be evaluated says why on the same line.")
@click.option("--input-format", default=None, help="Input format (default: detected).")
@click.option("--strict", is_flag=True, help="Stop at the first bad input record.")
@click.option("--judge", "judge", multiple=True, envvar="ASSAY_JUDGE",
              help="Judge model, e.g. openai:gpt-4o-mini. Repeat it for a jury: every judge scores every judge "
                   "metric and their results are combined: a label metric (failure_rate, goal_achievement_rate, a "
                   "[[criteria]] label set) by the majority label, a tie going to the lowest-weight (more "
                   "conservative) label, its score that label's weight; score metrics by --jury-scores.")
@click.option("--judge-weight", "judge_weights", multiple=True, type=click.FloatRange(min=0), metavar="W",
              help="A jury member's weight, one per --judge in the same order (default: equal).")
@click.option("--jury-scores", type=click.Choice(["mean", "median"]), default="mean", show_default=True,
              help="How a jury combines score metrics (weighted).")
@click.option("--weight", "weights", multiple=True, metavar="DIMENSION=W", help="Dimension weight (repeatable).")
@click.option("--progress/--no-progress", default=None,
              help="Progress over the planned judge calls: a bar on a terminal, else a plain line every "
                   "--progress-every seconds (default: on).")
@click.option("--progress-every", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              metavar="SECONDS", help="Seconds between plain progress lines when stderr is not a terminal.")
@click.option("--store", "store", type=click.Path(dir_okay=False), default=None,
              help="Run store file (default: $ASSAY_STORE, else runs.sqlite3 in the user data dir).")
@click.option("--no-store", is_flag=True, help="Do not record this run in the run store. The judge cache is "
              "apart and still kept: add --no-cache to write neither.")
@click.option("--html", type=click.Path(dir_okay=False), default=None, help="Also write an HTML report here.")
@click.option("--intervals/--no-intervals", default=True, show_default=True,
              help="Intervals and pass@k in the summary (keeps ~9 bytes per score; off: constant memory).")
@click.option("--repeats", type=click.IntRange(1), default=1, show_default=True,
              help="Score each judge metric this many times (independent judge calls) and average.")
@click.option("--max-errors", default="0", show_default=True, metavar="N|FRACTION",
              help="Errored or unevaluated (budget) results tolerated before the run counts as not evaluated "
                   "(exit 3): a count (3) or a share of the results (0.05, 5%).")
@click.option("--name", "run_name", default=None, help="A name for this run in the run store (shown by `assay runs`).")
@click.option("--judge-card", "judge_cards", multiple=True, metavar="FILE|ID",
              help="Judge card from `assay calibrate` (a file or a stored id; repeatable): report each judge "
                   "metric's pass rate corrected for the judge's measured error rates. Default: the stored "
                   "cards that fit this judge, metric, rubric version and threshold.")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="A tag for this run in the store (repeatable).")
@click.option("--executor", default="local", show_default=True, metavar="local|dask[:ADDRESS]",
              help="Where to score: this process, or Dask workers - 'dask' starts a local cluster (one worker "
                   "per core), 'dask:tcp://HOST:8786' uses an existing one (needs assay[dask]). Same results; "
                   "judge limits and budgets are split between the workers.")
@judge_options
@input_options
@config_option
@plugin_option
@debug_option
@handle_errors
def command(paths: tuple[str, ...], metrics: tuple[str, ...], config_path: str | None, outputs: tuple[str, ...],
            fmt: str | None, quiet: bool, input_format: str | None, strict: bool, judge: tuple[str, ...], weights: tuple[str, ...],
            progress: bool | None, progress_every: float, store: str | None, no_store: bool, html: str | None, intervals: bool, repeats: int,
            max_errors: str, plugins: tuple[str, ...], debug: bool,
            run_name: str | None = None, tags: tuple[str, ...] = (), judge_cards: tuple[str, ...] = (),
            judge_weights: tuple[float, ...] = (), jury_scores: str = "mean", executor: str = "local",
            **judge_flags: object) -> None:
    """Score the traces in PATHS; exit 0 if all pass, 1 if a threshold failed, 2 on bad usage or input,
    3 if the evaluation could not be done, 130 when interrupted."""
    from ..importers import reading_limits
    from ..model._status import run_status
    from . import _render
    from ._summary import dry_run_plan, judge_summary

    limits = limits_from(judge_flags)
    session = Session.open(config_path, plugins=plugins)
    if not quiet:
        announce(session, config_path)
    stdout_fmt, files = plan_outputs(outputs, fmt, html, quiet)
    store_file = store_path(store, no_store)
    if quiet and progress is None:
        progress = False  # -q: the one line, nothing else
    with reading_limits(limits), input_warnings():
        # a dry run is a plan: the session writes no -o or --html file and stores nothing
        result = session.run(paths, judge=judge, judge_flags=judge_flags, jury_weights=list(judge_weights) or None,
                             jury_scores=jury_scores, metrics=metrics, weights=weights, repeats=repeats,
                             intervals=intervals, input_format=input_format, strict=strict, limits=limits,
                             max_errors=max_errors, name=run_name, tags=_parse_tags(tags), executor=executor,
                             outputs=files, fmt=stdout_fmt, store=store_file, judge_cards=judge_cards,
                             progress=progress_display(progress, progress_every), table=_render.table_text,
                             near_end=_render.prepare if stdout_fmt == "table" else None)
    exit_quickly()  # the store, the judge cache and the output files are closed
    if result.run.interrupted:
        click.echo(interrupted_line(result), err=True)
        sys.exit(EXIT_STATUS["interrupted"])
    dry = bool(result.run.dry_run)
    status, why = run_status(result)
    if quiet and not dry:  # exactly the documented one line; why it could not evaluate goes on it
        line = _render.one_line(result)
        click.echo(shown(f"{line}; could not evaluate: {why}" if status == "could_not_evaluate" else line), err=True)
        sys.exit(EXIT_STATUS[status])
    if dry:
        click.echo(dry_run_plan(result.run), err=stdout_fmt not in ("table", None))  # stdout stays the results'
    elif stdout_fmt == "table":
        _render.table(result, judge_line=False)
    elif quiet or stdout_fmt is None:
        click.echo(_render.one_line(result), err=True)
    summary = judge_summary(result.run)
    if summary:
        click.echo(shown(summary), err=True)
    from ._cards import correction_lines
    for line in correction_lines(result):
        click.echo(line, err=stdout_fmt != "table")
    if result.run.run_id:
        click.echo(f"run {result.run['run_id']} stored in {store_file} (assay runs show {result.run['run_id']})",
                   err=True)
    if files and dry:
        click.echo("dry run: " + ", ".join(path for path, _, _ in files) + " not written", err=True)
    elif files:
        click.echo("; ".join(f"report written to {path}" if f == "html" else f"{f} results written to {path}"
                             for path, f, _ in files), err=True)
    for issue in result.input_issues[:20]:
        click.echo(shown(f"skipped {issue}"), err=True)
    if len(result.input_issues) > 20:
        click.echo(f"... and {len(result.input_issues) - 20} more skipped records", err=True)
    if result.input_issues:
        rest = "the others were scored" if result.run.n_traces else "no trace could be read"
        click.echo(f"{len(result.input_issues)} input record(s) skipped; {rest}.", err=True)
        if not result.run.n_traces and result.run.input_format:
            for line in _detected_otherwise(paths, result.run.input_format):
                click.echo(line, err=True)
    if dry and status != "invalid_input":
        sys.exit(EXIT_OK)  # nothing was meant to be scored
    if status == "could_not_evaluate":
        click.echo(shown(f"could not evaluate: {why}"), err=True)
    sys.exit(EXIT_STATUS[status])


def _detected_otherwise(paths: tuple[str, ...], input_format: str) -> list[str]:
    """For a run that read nothing in ``input_format``: the files whose first record reads as a trace in the
    format they are detected as, and that format."""
    from ..importers._registry import first_trace_format

    found = {path: first_trace_format(path) for path in dict.fromkeys(paths) if path != "-"}
    return [shown(f"{path} reads as {fmt} when its format is detected: drop --input-format {input_format}")
            for path, fmt in found.items() if fmt not in (None, input_format)]


def interrupted_line(result: Any) -> str:
    """The one line an interrupted run prints."""
    judge = result.run.judge or {}
    planned = result.run.planned_judge_calls
    if judge:
        done = judge.get("requests", 0) - judge.get("skipped", 0)
        of = f" of {planned}" if planned is not None else ""
        return (f"interrupted after {done}{of} judge calls; rerun the same command to resume: "
                "finished judge calls are cached")
    return f"interrupted after {result.run.get('n_traces', 0)} traces; rerun the same command to start again"


def _parse_tags(tags: tuple[str, ...]) -> dict[str, str]:
    from ..errors import ConfigError

    out: dict[str, str] = {}
    for tag in tags:
        key, eq, value = tag.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--tag {tag!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out
