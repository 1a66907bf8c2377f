"""``assay calibrate``: measure a judge against human labels and save the judge card."""

from __future__ import annotations

import sys

import click

from ._common import EXIT_NOT_EVALUATED, EXIT_OK, debug_option, handle_errors, config_option, open_session, plugin_option
from ._judge_options import judge_options

EPILOG = """\b
Labels: a CSV (header trace_id,metric,label or trace_id,metric,score) or JSON Lines file
({"trace_id": ..., "metric": ..., "label": ...}); without --labels, each trace's
metadata.labels ({"resolution": "resolved", "user_satisfaction": 4}). A label is pass/fail, one of
a label metric's labels (failure_rate: hallucination ... not_applicable; goal_achievement_rate:
fully ... none), or a score (1-5 for scale metrics, else 0-1). Labels give a confusion matrix,
per-label recall and precision, kappa and MAE; pass/fail TPR/TNR always.
\b
Exit status: 0 card written; 2 bad usage or labels; 3 nothing could be compared (the judge failed
on every labelled trace)."""


@click.command("calibrate", epilog=EPILOG)
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("-m", "--metric", "metrics", multiple=True, metavar="NAME[:param=value,...]",
              help="Judge metric to calibrate (repeatable). Default: every metric the labels name.")
@click.option("--labels", "labels", type=click.Path(dir_okay=False), default=None,
              help="Human labels file (CSV or JSON Lines); default: each trace's metadata.labels.")
@click.option("--judge", default=None, envvar="ASSAY_JUDGE", help="Judge model, e.g. openai:gpt-4o-mini.")
@click.option("-o", "--output", default="judge-card.json", show_default=True, type=click.Path(dir_okay=False),
              help="Write the judge card (JSON) here.")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="What to print: a summary with the disagreements, or the card as JSON.")
@click.option("--show", type=click.IntRange(0), default=10, show_default=True,
              help="Disagreements listed per metric in the summary.")
@click.option("--input-format", default=None, help="Input format of the traces (default: detected).")
@click.option("--store", "store", type=click.Path(dir_okay=False), default=None,
              help="Run store file that keeps the card (default: $ASSAY_STORE, else the user data dir).")
@click.option("--no-store", is_flag=True, help="Do not keep the card in the run store (the judge cache is apart: "
              "--no-cache).")
@judge_options
@config_option
@plugin_option
@debug_option
@handle_errors
def command(paths: tuple[str, ...], metrics: tuple[str, ...], labels: str | None, judge: str | None, output: str,
            fmt: str, show: int, input_format: str | None, store: str | None, no_store: bool,
            config_path: str | None, plugins: tuple[str, ...], debug: bool, **judge_flags: object) -> None:
    """Score the labelled traces in PATHS with the judge and compare its verdicts with the labels:
    agreement, Cohen's kappa, confusion matrix, TPR/TNR with intervals, disagreements."""
    from .._files import check_writable, write_atomic
    from ..analysis import calibrate
    from ..errors import ConfigError
    from ..session import store_path
    from ..store import RunStore, save_card
    from ._input_options import input_warnings

    session = open_session(config_path, plugins)
    if session.judge_options(judge_flags).dry_run:
        raise ConfigError("--dry-run: a calibration needs the judge's verdicts; `assay run --dry-run` estimates cost")
    store_file = store_path(store, no_store)
    check_writable(output, "-o", uses=[*paths, *([labels] if isinstance(labels, str) else [])])
    judge_obj = session.judge(judge, judge_flags, needed_by="calibrating")
    with input_warnings():
        card = calibrate(list(paths), list(metrics) or None, judge=judge_obj, labels=labels,
                         input_format=input_format)
    write_atomic(output, card.to_json() + b"\n")
    if store_file is not None:
        save_card(RunStore(store_file), card)
    if fmt == "json":
        sys.stdout.buffer.write(card.to_json() + b"\n")
        sys.stdout.flush()
    else:
        click.echo(render(card, show))
    where = f"written to {output}" + (f", stored in {store_file}" if store_file is not None else "")
    click.echo(f"judge card {card.id} {where}; use it with: assay run ... --judge-card {output}", err=True)
    sys.exit(EXIT_OK if any(m.n_compared for m in card.metrics.values()) else EXIT_NOT_EVALUATED)


def render(card: object, show: int) -> str:
    """The summary lines, a confusion matrix and the first disagreements per metric."""
    lines = [card.summary()]  # type: ignore[attr-defined]
    for name, m in card.metrics.items():  # type: ignore[attr-defined]
        if m.confusion:
            width = max(len(str(c)) for c in [*m.categories, "human \\ judge"])
            lines.append(f"\n{name}: rows = human, columns = judge")
            lines.append("  " + "human \\ judge".ljust(width) + "".join(str(c).rjust(width + 2) for c in m.categories))
            for c, row in zip(m.categories, m.confusion):
                lines.append("  " + str(c).ljust(width) + "".join(str(v).rjust(width + 2) for v in row))
        for c, f in m.per_label.items():
            lines.append(f"  {c}: recall {_share(f.agreed, f.human)}, precision {_share(f.agreed, f.judge)}")
        if m.n_labelled and not m.n_compared:
            lines.append(f"{name}: nothing compared: the judge errored on {m.n_errored} and did not score "
                         f"{m.n_not_scored} of {m.n_labelled} labelled traces")
        for d in m.disagreements[:show]:
            reason = " ".join(d.reason.split())
            lines.append(f"  {d.trace_id}: human {d.human}, judge {d.judge}: {reason[:100]}")
        if len(m.disagreements) > show:
            lines.append(f"  ... and {len(m.disagreements) - show} more (the card lists them all)")
    return "\n".join(lines)


def _share(k: int, n: int) -> str:
    return f"{k}/{n}" if n else "-"
