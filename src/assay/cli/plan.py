"""``assay plan``: how many trials per task a run's variance calls for."""

from __future__ import annotations

import click

from ._common import debug_option, handle_errors


@click.command("plan")
@click.argument("run")
@click.option("--delta", default=0.05, show_default=True, help="Smallest difference worth detecting.")
@click.option("--alpha", default=0.05, show_default=True)
@click.option("--power", default=0.8, show_default=True)
@click.option("--baseline", default=None, help="A run on the same tasks: plan from the observed paired differences.")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option("--store", "store_path", default=None, type=click.Path(dir_okay=False))
@debug_option
@handle_errors
def command(run: str, delta: float, alpha: float, power: float, baseline: str | None, fmt: str,
            store_path: str | None, debug: bool) -> None:
    """The tasks (or trials per task) a paired comparison needs to detect DELTA, from RUN's variance.

    Planned on the variance of paired differences (between-task variance cancels), at
    alpha / number of metrics (Holm). With --baseline, the observed differences against that run.
    """
    from ..analysis._plan import plan_run
    from ..session import load_result
    from ._render_compare import plan_table
    from ..session import dumps

    base = load_result(baseline, store_path) if baseline else None
    rows = plan_run(load_result(run, store_path), delta=delta, alpha=alpha, power=power, baseline=base)
    if fmt == "json":
        click.echo(dumps(rows, indent=2))
    else:
        plan_table(rows, delta, power)
