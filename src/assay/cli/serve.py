"""``assay serve``: an OTLP/HTTP receiver that scores agents' traces as they arrive."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import click

from ._common import debug_option, handle_errors

if TYPE_CHECKING:
    from ..serve import Server


@click.command("serve")
@click.option("--store", type=click.Path(dir_okay=False), default=None,
              help="Run store file (default: $ASSAY_STORE, else the user data dir).")
@click.option("--journal", type=click.Path(dir_okay=False), default=None,
              help="Journal of received spans (default: the store's file with .serve-journal added). Start again "
                   "with the same journal to resume: nothing acknowledged is lost, nothing is scored twice.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Any address other than loopback requires the token printed at start "
                   "('Authorization: Bearer TOKEN' on every request).")
@click.option("--port", type=click.IntRange(0, 65535), default=4318, show_default=True,
              help="Port to bind (4318: OTLP/HTTP's; 0: any free port).")
@click.option("-m", "--metric", "metrics", multiple=True, metavar="NAME[:param=value,...]",
              help="Metric to score (repeatable). Default: the config file's, else every metric the data supports.")
@click.option("-c", "--config", "config_path", type=click.Path(dir_okay=False),
              help="TOML or JSON config file (default: the nearest assay.toml, as `assay run`).")
@click.option("--judge", default=None, envvar="ASSAY_JUDGE", help="Judge model for judge metrics, e.g. openai:gpt-4o-mini.")
@click.option("--sample", type=click.FloatRange(0, 1), default=1.0, show_default=True, metavar="RATE",
              help="Share of traces the judge metrics score (by trace id); deterministic metrics score every trace.")
@click.option("--quiet-period", "quiet_s", type=click.FloatRange(0, min_open=True), default=30.0, show_default=True,
              metavar="SECONDS", help="Score a trace whose root span never arrives this long after its last span.")
@click.option("--max-pending", type=click.IntRange(1), default=200_000, show_default=True, metavar="SPANS",
              help="Spans received but not yet scored; past it, exporters get 503 with Retry-After.")
@click.option("--name", "run_name", default="serve", show_default=True, help="The live run's name in the run store.")
@click.option("--alert-baseline", metavar="RUN", default=None,
              help="A stored run (id, prefix, latest~N): alert when the live pass rate falls below its pass rate, "
                   "by an anytime-valid test (watching all day does not raise the false-alarm rate).")
@click.option("--alert-alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="The alert's false-alarm rate, over the server's whole life.")
@click.option("--alert-webhook", metavar="URL", default=None, help="POST the alert here as JSON.")
@debug_option
@handle_errors
def command(store: str | None, journal: str | None, host: str, port: int, metrics: tuple[str, ...],
            config_path: str | None, judge: str | None, sample: float, quiet_s: float, max_pending: int,
            run_name: str, alert_baseline: str | None, alert_alpha: float, alert_webhook: str | None,
            debug: bool) -> None:
    """Receive OTLP traces at http://HOST:PORT/v1/traces and score each as it completes, into a live run."""
    from ..errors import ConfigError
    from ..serve import Limits, Server, Settings
    from ..session import stop_on_signals
    from ..session._session import Session
    from ..store import default_store_path

    session = Session.open(config_path)  # the config file, its plugins and [[criteria]], as every command
    spec = session.run_spec(metrics=metrics, judge=session.judge_spec(judge), name=run_name)
    path = store or default_store_path()
    if path is None:
        raise ConfigError("the run store is off (ASSAY_STORE=off): pass --store PATH")
    if alert_webhook and not alert_baseline:
        raise ConfigError("--alert-webhook needs --alert-baseline RUN (the run the live pass rate is compared with)")
    settings = Settings(host=host, port=port, sample=sample, quiet_s=quiet_s, limits=Limits(max_pending=max_pending),
                        alert_baseline=alert_baseline, alert_alpha=alert_alpha, alert_webhook=alert_webhook)
    stopping = threading.Event()
    with stop_on_signals(stopping):  # from here a Ctrl-C or SIGTERM, however early, is a clean stop (exit 0)
        try:
            server = Server(spec, path, journal or f"{path}.serve-journal", settings)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another --port") from None
        _serve(server, path, settings.token, stopping)


def _serve(server: Server, path: str, token: str | None, stopping: threading.Event) -> None:
    """Announce the server, run it until ``stopping`` is set, then stop it and say what it did."""
    click.echo(f"assay serve: receiving OTLP traces at {server.url} (JSON or protobuf), run {server.run_id} "
               f"in {path}", err=True)
    if token is not None:
        click.echo(f"assay serve: bound to a non-loopback address: send 'Authorization: Bearer {token}'", err=True)
    click.echo("assay serve: press Ctrl-C to stop", err=True)
    server.start()
    try:
        stopping.wait()  # a signal sets it; one that came before start() is not lost (a KeyboardInterrupt was)
    finally:
        server.stop()
        status = server.status()
        click.echo(f"assay serve: stopped; {status['spans']} spans received ({status['duplicates']} duplicates, "
                   f"{status['rejected_spans']} refused), {status['scored']} traces scored this time, "
                   f"{status['open']} waiting in the journal", err=True)
