"""``assay versus``: run B against run A, judged pair by pair. Exits 1 when B is significantly worse."""

from __future__ import annotations

import sys
from typing import Any

import click

from ._common import EXIT_FAILED, EXIT_NOT_EVALUATED, EXIT_OK, debug_option, handle_errors, config_option, open_session, plugin_option
from ._judge_options import judge_options

EPILOG = """\b
Each trace id both runs have is one pair (trace files of two agents that share no id pair by
task_id and trial): the judge sees the conversation and the two final
replies as anonymous candidates A and B (both orders by default; a verdict that changes when
they swap places counts as a tie and is reported as position inconsistency).
\b
Exit status:
  0    B is not significantly worse than A (better, no significant difference, or a dry run)
  1    B is significantly worse: its win rate is below 0.5 with p < --alpha
  2    usage or input error (unknown run, no shared trace ids, input traces not available)
  3    could not evaluate: no pair was judged (every judge call failed), or the judge refused"""


@click.command("versus", epilog=EPILOG)
@click.argument("run_a")
@click.argument("run_b")
@click.option("-m", "--metric", "metric", default="pairwise_quality", show_default=True,
              metavar="NAME[:param=value,...]",
              help="Pairwise metric, e.g. pairwise_quality:both_orders=false.")
@click.option("--criteria", default=None, metavar="TEXT",
              help="Judge on this criterion instead (plain text, or a rubric file: .md/.txt).")
@click.option("--judge", default=None, envvar="ASSAY_JUDGE", help="Judge model, e.g. openai:gpt-4o-mini.")
@click.option("--alpha", default=0.05, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Significance level of the sign test.")
@click.option("--stat-seed", "stat_seed", default=0, show_default=True, help="Seed of the permutation test (when it is not exact).")
@click.option("--show", default=10, show_default=True, type=click.IntRange(0),
              help="Differing pairs listed with the judge's reasons.")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Also write the JSON here.")
@click.option("--html", type=click.Path(dir_okay=False), default=None,
              help="Write an HTML view here: the replies side by side with the judge's reasons.")
@click.option("--store", "store_path", default=None, type=click.Path(dir_okay=False), help="Run store to look ids up in.")
@judge_options
@config_option
@plugin_option
@debug_option
@handle_errors
def command(run_a: str, run_b: str, metric: str, criteria: str | None, judge: str | None, alpha: float,
            stat_seed: int, show: int, fmt: str, output: str | None, html: str | None, store_path: str | None,
            config_path: str | None, plugins: tuple[str, ...], debug: bool, **judge_flags: object) -> None:
    """Judge RUN_B against RUN_A on the traces both have: results files, run ids or trace files
    (two agents' trace files pair by trace id, else by task_id and trial)."""
    from .._files import check_writable, write_atomic
    from ..analysis._versus import pair_by_task, run_label, versus
    from ._render_versus import dry_run_line, versus_table
    from ..session import dumps, load_side

    session = open_session(config_path, plugins)
    m = pairwise_from_options(metric, criteria)
    j = session.judge(judge, judge_flags, needed_by="assay versus")
    for flag, path in (("-o", output), ("--html", html)):
        if path:
            check_writable(path, flag, uses=[run_a, run_b])  # (a run may be given as its results or trace file)
    (a, ta), (b, tb) = load_side(run_a, store_path), load_side(run_b, store_path)
    a, b = pair_by_task([a, b])
    result = versus(a, b, ta, tb, m, j, alpha=alpha, seed=stat_seed,
                    names=(run_label(a, run_a), run_label(b, run_b)))
    if session.judge_options(judge_flags).dry_run:
        click.echo(dry_run_line(result), err=fmt == "json")
        if fmt == "json":
            click.echo(dumps(result, indent=2))
        sys.exit(EXIT_OK)
    if output:
        write_atomic(output, dumps(result, indent=2) + "\n")
    if fmt == "json":
        click.echo(dumps(result, indent=2))
    else:
        versus_table(result, show=show)
    if html:
        from ..report._versus import write_versus
        write_versus(html, result)
        click.echo(f"HTML view written to {html}", err=True)
    if not result["n_judged"]:
        sys.exit(EXIT_NOT_EVALUATED)
    sys.exit(EXIT_FAILED if result["b_worse"] else EXIT_OK)


def pairwise_from_options(metric: str, criteria: str | None) -> Any:
    """The pairwise metric of ``-m`` / ``--criteria`` (shared with ``assay tournament``)."""
    from ..errors import ConfigError
    from ..metrics.pairwise import get_pairwise, pairwise_metric

    if criteria is None:
        return get_pairwise(metric)
    name, _, params = metric.partition(":")
    if name not in ("pairwise_quality", "pairwise_criteria"):
        raise ConfigError(f"give -m {name!r} or --criteria, not both")
    cls = pairwise_metric("pairwise_criteria", criteria, register=False)
    from ..metrics._base import build, parse_metric_arg
    return build(cls, parse_metric_arg(f"pairwise_criteria:{params}")[1] if params else {})
