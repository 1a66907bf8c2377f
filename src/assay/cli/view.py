"""``assay view``: browse the run store in a local web page."""

from __future__ import annotations

import click

from ._common import debug_option, handle_errors


@click.command("view")
@click.option("--store", type=click.Path(dir_okay=False), default=None,
              help="Run store file (default: $ASSAY_STORE, else the user data dir).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Any address other than loopback requires the token printed at start.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port to bind (0: any free port).")
@click.option("--open/--no-open", "open_browser", default=True, show_default=True,
              help="Open the viewer in the default browser.")
@click.option("--log/--no-log", default=False, help="Log each request on stderr.")
@debug_option
@handle_errors
def command(store: str | None, host: str, port: int, open_browser: bool, log: bool, debug: bool) -> None:
    """Serve the run store read-only at http://HOST:PORT/ until interrupted (Ctrl-C)."""
    from ..errors import ConfigError
    from ..store import RunStore, default_store_path
    from ..view import ViewServer, is_loopback

    path = store or default_store_path()
    if path is None:
        raise ConfigError("the run store is off (ASSAY_STORE=off): pass --store PATH")
    st = RunStore(path)
    st.reader().close()  # a missing or unreadable store is an error now, not on the first page
    try:
        server = ViewServer(st, host, port, log=log)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another --port") from None
    click.echo(f"assay view: serving {st.path} read-only at {server.url}", err=True)
    if not is_loopback(host):
        click.echo("assay view: bound to a non-loopback address: every request needs the token in that URL", err=True)
    click.echo("assay view: press Ctrl-C to stop", err=True)
    if open_browser:
        import webbrowser

        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
