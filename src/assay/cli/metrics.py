"""``assay metrics``: the catalog with dimensions, requirements and formulas."""

from __future__ import annotations

import click

from ._common import debug_option, handle_errors, config_option, open_session, plugin_option


@click.command("metrics")
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--markdown", is_flag=True, help="A Markdown table (the README's catalog: built-ins only).")
@config_option
@plugin_option
@debug_option
@handle_errors
def command(names: tuple[str, ...], as_json: bool, markdown: bool, config_path: str | None, plugins: tuple[str, ...],
            debug: bool) -> None:
    """List every registered metric (name, dimension, requirements, formula, origin), or document NAMES
    (the config file's [[criteria]] and plugins' metrics included)."""
    from ..metrics._base import REGISTRY

    open_session(config_path, plugins)
    if names:
        click.echo("\n".join(REGISTRY.describe(n) for n in names), nl=False)
        return
    specs = REGISTRY.specs()
    origins = REGISTRY.origins()
    if markdown:
        specs = [s for s in specs if origins[s.name] == "built-in"]
        click.echo("| metric | dimension | needs | judge calls | formula / basis |\n|---|---|---|---|---|")
        for s in sorted(specs, key=lambda s: (s.dimension, s.name)):
            needs = ", ".join(str(r) for r in s.requires) or "—"
            name = f"`{s.name}`" + ("" if s.default else " (opt-in)")
            click.echo(f"| {name} | {s.dimension} | {needs} | {s.judge_calls} | {s.summary.replace('|', '/')} |")
        return
    if as_json:
        from ..session import dumps
        click.echo(dumps([{"name": s.name, "dimension": s.dimension, "requires": [str(r) for r in s.requires],
                           "summary": s.summary, "level": s.level, "default": s.default,
                           "judge_calls": s.judge_calls, "version": s.version, "origin": origins[s.name]}
                          for s in specs], indent=2))
        return
    from ._render import catalog

    catalog(specs, origins, set(REGISTRY.default_names()))
