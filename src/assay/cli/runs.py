"""``assay runs``: list stored runs; ``assay runs show ID``: one run's summary."""

from __future__ import annotations

import click

from ._common import debug_option, handle_errors

store_option = click.option("--store", type=click.Path(dir_okay=False), default=None,
                            help="Run store file (default: $ASSAY_STORE, else the user data dir).")


@click.group("runs", invoke_without_command=True)
@click.option("-n", "--limit", type=int, default=20, show_default=True, help="How many runs to list (0: all).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@store_option
@debug_option
@click.pass_context
@handle_errors
def command(ctx: click.Context, limit: int, as_json: bool, store: str | None, debug: bool) -> None:
    """List recorded runs, newest first: id, time, inputs, traces, pass rate, cost, status."""
    ctx.ensure_object(dict)["store"] = store
    if ctx.invoked_subcommand is not None:
        return
    from . import _render
    from ..session import dumps, open_store

    infos = open_store(store).runs(limit=limit or None)
    if as_json:
        click.echo(dumps([i.to_dict() for i in infos], indent=2))
    else:
        _render.runs_table(infos)


@command.command("show")
@click.argument("ref")
@click.option("--json", "as_json", is_flag=True, help="Print the run's results as JSON (as `assay run -o` writes).")
@store_option
@debug_option
@click.pass_context
@handle_errors
def show(ctx: click.Context, ref: str, as_json: bool, store: str | None, debug: bool) -> None:
    """Show run REF (an id, a unique prefix, latest or latest~N): its information and summary table."""
    from . import _render
    from ..model import encode_run
    from ..session import open_store

    st = open_store(store or ctx.obj.get("store"))
    info, result = st.info(ref), st.load(ref)
    if as_json:
        click.echo(encode_run(result, indent=2).decode())
    else:
        _render.run_detail(info, result)


@command.command("rm")
@click.argument("refs", nargs=-1, required=True)
@store_option
@debug_option
@click.pass_context
@handle_errors
def rm(ctx: click.Context, refs: tuple[str, ...], store: str | None, debug: bool) -> None:
    """Delete runs REFS from the store."""
    from ..session import open_store

    st = open_store(store or ctx.obj.get("store"))
    for ref in refs:
        click.echo(f"deleted {st.delete(ref)}")


@command.command("prune")
@click.option("--keep", type=click.IntRange(0), default=None,
              help="Also delete completed runs beyond the newest KEEP.")
@click.option("--dry-run", is_flag=True, help="List what would be deleted; delete nothing.")
@store_option
@debug_option
@click.pass_context
@handle_errors
def prune(ctx: click.Context, keep: int | None, dry_run: bool, store: str | None, debug: bool) -> None:
    """Delete runs that did not complete (failed, interrupted, incomplete); with --keep N, old completed ones too."""
    from ..session import open_store

    st = open_store(store or ctx.obj.get("store"))
    infos = st.runs()
    completed = [i for i in infos if i.status == "completed"]
    doomed = [i for i in infos if i.status in ("failed", "interrupted", "incomplete")]
    if keep is not None:
        doomed += completed[keep:]
    for info in doomed:
        click.echo(f"{'would delete' if dry_run else 'deleted'} {info.id} ({info.status})")
        if not dry_run:
            st.delete(info.id)
    click.echo(f"{len(doomed)} run(s) {'to delete' if dry_run else 'deleted'}, {len(infos) - len(doomed)} kept")
