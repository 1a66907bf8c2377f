"""``assay runs``: list stored runs; ``assay runs show ID``: one run's summary."""

from __future__ import annotations

import os

import click

from ._common import debug_option, handle_errors, shown

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
              help="Also delete completed runs beyond the newest KEEP (in scope).")
@click.option("--name", default=None, help="Only runs with this --name.")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Only runs with this tag (repeatable: all of them).")
@click.option("--dry-run", is_flag=True, help="List what would be deleted; delete nothing.")
@click.option("-y", "--yes", is_flag=True, help="Delete without asking.")
@store_option
@debug_option
@click.pass_context
@handle_errors
def prune(ctx: click.Context, keep: int | None, name: str | None, tags: tuple[str, ...], dry_run: bool, yes: bool,
          store: str | None, debug: bool) -> None:
    """Delete runs that did not complete (failed, interrupted, incomplete); with --keep N, old completed ones too.

    Only in a scope: --name, --tag or a store of its own (--store, $ASSAY_STORE); the default store
    holds every project's runs. Asks before deleting unless --yes."""
    from ..errors import ConfigError
    from ..store import ENV, prune_plan
    from ..session import open_store
    from .run import _parse_tags

    path = store or ctx.obj.get("store")
    scope = _parse_tags(tags)
    if name is None and not scope and not path and not os.environ.get(ENV):
        raise ConfigError("assay runs prune: the default run store holds every project's runs; scope it with "
                          "--name NAME, --tag KEY=VALUE or --store PATH (--dry-run lists what would go)")
    st = open_store(path)
    doomed, kept = prune_plan(st.runs(), name=name, tags=scope, keep=keep)
    for info in doomed:
        click.echo(shown(f"{'would delete' if dry_run else 'to delete'} {info.id} ({info.status})"))
    if dry_run or not doomed:
        click.echo(f"{len(doomed)} run(s) to delete, {kept} kept")
        return
    if not yes:
        try:
            confirmed = click.confirm(shown(f"Delete {len(doomed)} run(s) from {st.path}?"), default=False, err=True)
        except click.Abort:
            confirmed = False  # no answer (stdin closed)
        if not confirmed:
            raise ConfigError("nothing deleted: not confirmed (answer y, or pass --yes)")
    for info in doomed:
        st.delete(info.id)
    click.echo(f"{len(doomed)} run(s) deleted, {kept} kept")
