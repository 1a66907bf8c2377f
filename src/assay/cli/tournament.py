"""``assay tournament``: N runs judged pairwise and ranked (Bradley-Terry with bootstrap-over-tasks intervals)."""

from __future__ import annotations

import sys

import click

from ._common import EXIT_NOT_EVALUATED, EXIT_OK, debug_option, handle_errors, config_option, open_session, plugin_option
from ._judge_options import judge_options

EPILOG = """\b
Every match judges two runs on the trace ids both scored, as `assay versus` does (anonymous
candidates, both orders). --schedule all plays every pair (N(N-1)/2 matches); swiss plays
--rounds rounds of about N/2 matches between runs with similar records (default for more than
8 runs). The ranking is a Bradley-Terry fit of all comparisons (a tie is half a win each way);
its intervals resample whole tasks.
\b
Exit status:
  0    the tournament was judged (or a dry run)
  2    usage or input error
  3    could not evaluate: no pair was judged"""


@click.command("tournament", epilog=EPILOG)
@click.argument("runs", nargs=-1, required=True)
@click.option("-m", "--metric", "metric", default="pairwise_quality", show_default=True,
              metavar="NAME[:param=value,...]", help="Pairwise metric, e.g. pairwise_quality:both_orders=false.")
@click.option("--criteria", default=None, metavar="TEXT",
              help="Judge on this criterion instead (plain text, or a rubric file: .md/.txt).")
@click.option("--judge", default=None, envvar="ASSAY_JUDGE", help="Judge model, e.g. openai:gpt-4o-mini.")
@click.option("--schedule", type=click.Choice(["auto", "all", "swiss"]), default="auto", show_default=True,
              help="auto: all pairs up to 8 runs, Swiss beyond.")
@click.option("--rounds", type=click.IntRange(1), default=None, help="Swiss rounds (default ceil(log2 N) + 1).")
@click.option("--n-boot", type=click.IntRange(1), default=1000, show_default=True,
              help="Bootstrap resamples of tasks for the ranking's intervals.")
@click.option("--stat-seed", default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Also write the JSON here.")
@click.option("--html", type=click.Path(dir_okay=False), default=None,
              help="Write an HTML page here: the ranking and the win-matrix chart.")
@click.option("--store", "store_path", default=None, type=click.Path(dir_okay=False), help="Run store to look ids up in.")
@judge_options
@config_option
@plugin_option
@debug_option
@handle_errors
def command(runs: tuple[str, ...], metric: str, criteria: str | None, judge: str | None, schedule: str,
            rounds: int | None, n_boot: int, stat_seed: int, fmt: str, output: str | None, html: str | None,
            store_path: str | None, config_path: str | None, plugins: tuple[str, ...], debug: bool, **judge_flags: object) -> None:
    """Judge RUNS (results files, run ids or trace files; at least two) against each other and rank them."""
    from .._files import check_writable, write_atomic
    from ..analysis._tournament import Entrant, tournament
    from ..analysis._versus import pair_by_task, run_label
    from ..errors import ConfigError
    from ._render_versus import tournament_table
    from ..session import dumps, load_side
    from .versus import pairwise_from_options

    session = open_session(config_path, plugins)
    m = pairwise_from_options(metric, criteria)
    j = session.judge(judge, judge_flags, needed_by="assay tournament")
    if len(runs) < 2:
        raise ConfigError(f"assay tournament needs at least 2 runs, got {len(runs)}")
    for flag, path in (("-o", output), ("--html", html)):
        if path:
            check_writable(path, flag, uses=runs)  # (a run may be given as its results or trace file)
    sides = [load_side(ref, store_path) for ref in runs]
    keyed = pair_by_task([r for r, _ in sides])
    entrants = [Entrant(run_label(r, ref), r, traces) for ref, r, (_, traces) in zip(runs, keyed, sides)]
    result = tournament(entrants, m, j, schedule=schedule, rounds=rounds, n_boot=n_boot, seed=stat_seed)
    if session.judge_options(judge_flags).dry_run:
        j = result["judge"]
        click.echo(f"dry run: nothing was sent; {len([x for x in result['matches'] if not x.get('bye')])} matches, "
                   f"{result['planned_judge_calls']} judge calls planned, {j.get('estimated_calls', 0)} not in the "
                   "cache" + ("" if result["schedule"] == "all" else
                              " (Swiss rounds after the first are paired on results: a dry run plans them blind)"))
        sys.exit(EXIT_OK)
    if output:
        write_atomic(output, dumps(result, indent=2) + "\n")
    if fmt == "json":
        click.echo(dumps(result, indent=2))
    else:
        tournament_table(result)
    if html:
        from ..report._versus import write_tournament
        write_tournament(html, result)
        click.echo(f"HTML page written to {html}", err=True)
    sys.exit(EXIT_OK if result["n_comparisons"] else EXIT_NOT_EVALUATED)
