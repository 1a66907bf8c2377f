"""``assay plan``: how many trials per task a run's variance calls for."""

from __future__ import annotations

import click

from ._common import debug_option, handle_errors


@click.command("plan")
@click.argument("run")
@click.option("--delta", default=0.05, show_default=True, help="Smallest difference worth detecting.")
@click.option("--alpha", default=0.05, show_default=True)
@click.option("--power", default=0.8, show_default=True)
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option("--store", "store_path", default=None, type=click.Path(dir_okay=False))
@debug_option
@handle_errors
def command(run: str, delta: float, alpha: float, power: float, fmt: str, store_path: str | None, debug: bool) -> None:
    """From RUN's per-metric variance (and within-task correlation), the sample sizes needed."""
    from ..engine._plan import plan_run
    from ._loading import load_result
    from ._render_compare import plan_table
    from ._session import dumps

    rows = plan_run(load_result(run, store_path), delta=delta, alpha=alpha, power=power)
    if fmt == "json":
        click.echo(dumps(rows, indent=2))
    else:
        plan_table(rows, delta, power)
