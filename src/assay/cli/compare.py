"""``assay compare``: is run B better or worse than run A? Exits 1 on a significant regression, 3 when
the comparison is inconclusive (too few paired tasks for any metric to reach significance).

The last line says why it exits as it does.
"""

from __future__ import annotations

import sys

import click

from ._common import EXIT_FAILED, EXIT_NOT_EVALUATED, EXIT_OK, debug_option, handle_errors

EPILOG = """\b
Exit status:
  0  no significant regression
  1  a significant regression (Holm-corrected over the metrics)
  2  usage or input error (a run not found, repeated trace ids without --allow-duplicate-ids)
  3  inconclusive: with this few paired tasks no metric can reach significance at --alpha,
     so the comparison could not have shown a regression (`assay plan` says how many are needed)


With --sequential (one metric, --metric): an anytime-valid look that continues the sequence
saved in the run store under --sequence NAME. Exit 0 "B better", 1 "A better", 3 "continue".
Look after every batch of new tasks and stop at the first decision: the false-alarm rate stays
at most --alpha however often you look. Assumes tasks arrive in random order."""


@click.command("compare", epilog=EPILOG)
@click.argument("run_a")
@click.argument("run_b")
@click.option("--alpha", default=0.05, show_default=True, help="Family-wise error rate (Holm).")
@click.option("--delta", default=0.05, show_default=True, help="Difference to plan sample sizes for.")
@click.option("--seed", default=0, show_default=True, help="Seed of the bootstrap and permutations.")
@click.option("--holm-overall", is_flag=True, help="Put `overall` in the Holm family (default: reported apart).")
@click.option("--allow-duplicate-ids", "duplicates", type=click.Choice(["first", "last", "mean"]), default=None,
              help="Pair ids repeated within a run by the first or last trace, or the mean of their scores "
                   "(default: refuse, listing them).")
@click.option("--sequential", is_flag=True,
              help="Anytime-valid comparison of one metric (betting confidence sequence over task differences), "
                   "continuing the state kept in the run store; prints continue, A better or B better.")
@click.option("--metric", default="overall", show_default=True, help="The metric --sequential compares.")
@click.option("--sequence", "sequence", default="default", show_default=True,
              help="Name of the sequence kept in the run store (one per comparison you track).")
@click.option("--reset", is_flag=True, help="With --sequential: forget the saved sequence and start a new one.")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option("--store", "store_path", default=None, type=click.Path(dir_okay=False), help="Run store to look ids up in (with --sequential, also where the sequence is kept).")
@debug_option
@handle_errors
def command(run_a: str, run_b: str, alpha: float, delta: float, seed: int, holm_overall: bool,
            duplicates: str | None, sequential: bool, metric: str, sequence: str, reset: bool, fmt: str,
            store_path: str | None, debug: bool) -> None:
    """Compare RUN_B against RUN_A (result files from `assay run --output`, or run ids)."""
    from ..analysis._compare import compare_runs
    from ..session import load_result
    from ._render_compare import comparison_table
    from ..session import dumps

    a, b = load_result(run_a, store_path), load_result(run_b, store_path)
    if (a.run.run_id is not None and a.run.run_id == b.run.run_id) or _same_file(run_a, run_b):
        click.echo(f"warning: A and B are the same run ({a.run.run_id or run_a}): every difference is 0", err=True)
    if sequential:
        _sequential(a, b, alpha, seed, duplicates, metric, sequence, reset, fmt, store_path)
        return
    result = compare_runs(a, b, alpha=alpha, delta=delta, seed=seed, holm_overall=holm_overall, duplicates=duplicates)
    if fmt == "json":
        click.echo(dumps(result, indent=2))
    else:
        comparison_table(result)
    sys.exit(EXIT_FAILED if result["regressions"] else EXIT_NOT_EVALUATED if result.get("inconclusive") else EXIT_OK)


def _sequential(a, b, alpha: float, seed: int, duplicates: str | None, metric: str, name: str, reset: bool,
                fmt: str, store_path: str | None) -> None:
    from ..analysis._compare import sequential_compare
    from ..errors import ConfigError
    from ..store import RunStore, default_store_path, delete_sequence, load_sequence, save_sequence
    from ._render_compare import sequential_lines
    from ..session import dumps

    path = store_path or default_store_path()
    if path is None:
        raise ConfigError("--sequential keeps its state in the run store, which is off (ASSAY_STORE=off): "
                          "pass --store PATH")
    store = RunStore(path)
    if reset:
        delete_sequence(store, name)
    result = sequential_compare(a, b, load_sequence(store, name), metric=metric, alpha=alpha, seed=seed,
                                duplicates=duplicates)
    save_sequence(store, name, result["state"])
    result["sequence_name"] = name
    if fmt == "json":
        click.echo(dumps({k: v for k, v in result.items() if k != "state"}, indent=2))
    else:
        for line in sequential_lines(result):
            click.echo(line)
    sys.exit({"B better": EXIT_OK, "A better": EXIT_FAILED}.get(result["decision"], EXIT_NOT_EVALUATED))


def _same_file(a: str, b: str) -> bool:
    import os
    return os.path.isfile(a) and os.path.isfile(b) and os.path.samefile(a, b)
