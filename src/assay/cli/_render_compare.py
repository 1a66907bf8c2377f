"""Terminal rendering of comparisons and plans."""

from __future__ import annotations

from typing import Any

from ._render import escape


def _f(x: Any, fmt: str = "+.3f") -> str:
    return "—" if x is None else format(x, fmt)


def _verdict(r: dict[str, Any]) -> str:
    if r["regression"]:
        return "[red]regression[/]" if r.get("in_holm_family", True) else "[red]regression (unadjusted)[/]"
    if r["improvement"]:
        return "[green]improvement[/]" if r.get("in_holm_family", True) else "[green]improvement (unadjusted)[/]"
    if r.get("n_paired") and r.get("can_reach_significance") is False:
        return "[yellow]too few tasks[/]"
    return "[dim]not significant[/]"


def comparison_table(result: dict[str, Any], console: Any = None) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    family = result.get("holm_family")
    outside = [n for n in result["metrics"] if family is not None and n not in family]
    title = f"B vs A (Holm-corrected over {len(family) if family is not None else 'all'} metrics, alpha {result['alpha']})"
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
              show_edge=False, padding=(0, 1), collapse_padding=True)
    # Fits 80 columns without truncating a number or the verdict ("no signifi… change"): the interval
    # and long metric names wrap instead.
    widths = {"metric": 10, "mean A": 5, "mean B": 5, "B - A [95% CI]": 8, "p": 6, "p Holm": 6, "pairs": 5,
              "verdict": len("not significant")}
    for col, width in widths.items():
        t.add_column(col, justify="left" if col in ("metric", "verdict") else "right", min_width=width,
                     no_wrap=col not in ("metric", "B - A [95% CI]"), overflow="fold")
    for name, r in result["metrics"].items():
        ci = f" [{_f(r['ci_low'])}, {_f(r['ci_high'])}]" if r["ci_low"] is not None else ""
        p = _f(r["p_value"], ".4f")
        t.add_row(escape(name), _f(r["mean_a"], ".3f"), _f(r["mean_b"], ".3f"), _f(r["delta"]) + ci,
                  p, _f(r["p_adjusted"], ".4f") if r.get("in_holm_family", True) else "—",
                  str(r["n_paired"]), _verdict(r))
    console.print(t)
    if any(r.get("method") == "cluster_t" for r in result["metrics"].values()):
        console.print("[dim]interval and p from one cluster-t test over paired tasks: the interval excludes 0 "
                      "exactly when p < 1 - level[/]")
    if outside:
        console.print(f"[dim]{escape(', '.join(outside))}: reported with its own p-value, not in the Holm family "
                      "(--holm-overall adds it)[/]")
    for side in ("a", "b"):
        ids = result[f"only_in_{side}"]
        if ids:
            listed = ", ".join(ids[:10]) + (f" ... ({len(ids)} in all)" if len(ids) > 10 else "")
            console.print(f"unpaired, only in {side.upper()}: {escape(listed)}")
        if result[f"metrics_only_in_{side}"]:
            console.print(f"metrics only in {side.upper()}: {escape(', '.join(result[f'metrics_only_in_{side}']))}")
    dups = result.get("duplicate_ids")
    if dups:
        for side in ("a", "b"):
            if dups[side]:
                console.print(f"duplicate ids in {side.upper()} paired by the '{dups['rule']}' rule: "
                              + escape(", ".join(dups[side][:10])) + (" ..." if len(dups[side]) > 10 else ""))
    plans = {n: r["pairs_needed_for_delta"] for n, r in result["metrics"].items() if r.get("pairs_needed_for_delta")}
    if plans:
        console.print(f"paired tasks needed to detect a difference of {result['delta_for_plan']} "
                      f"(power {result['power']}, Holm): " + ", ".join(f"{n} {v}" for n, v in plans.items()))
    for warning in result.get("warnings", []):
        console.print(f"[yellow]warning: {warning}[/]")
    reason = result.get("exit_reason") or ("no significant regression" if not result["regressions"] else "")
    console.print(f"[bold red]{len(result['regressions'])} significant regression(s)[/]" if result["regressions"]
                  else f"[yellow]{reason}[/]" if result.get("cannot_reach_significance") else reason)


def sequential_lines(result: dict[str, Any]) -> list[str]:
    """Plain lines for ``assay compare --sequential``; the last is the decision."""
    cs = ("[" + _f(result["cs_low"]) + ", " + _f(result["cs_high"]) + "]") if result["cs_low"] is not None else "—"
    lines = [f"sequence {result['sequence_name']!r}: {result['metric']}, B - A over {result['n_tasks']} tasks "
             f"({result['new_tasks']} new this look)",
             f"mean difference {_f(result['mean_difference'])}, {1 - result['alpha']:.0%} confidence sequence {cs}"]
    if result["tasks_not_recounted"]:
        lines.append(f"{result['tasks_not_recounted']} task(s) already in the sequence kept their first difference")
    if result["cs_empty"]:
        lines.append("warning: the confidence sequence is empty: the differences drift (are the tasks in random "
                     "order?)")
    if result["decided_at"] is not None:
        lines.append(f"decided after {result['decided_at']} tasks")
    lines.append(result["decision"])
    return lines


def plan_table(rows: dict[str, Any], delta: float, power: float, console: Any = None) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    first = next(iter(rows.values()), None)
    holm = f", Holm over {first['n_tests']} metrics: alpha {first['alpha_per_test']:.3g} each" if first and \
        first["n_tests"] > 1 else ""
    t = Table(title=f"a paired comparison detecting a difference of {delta} (power {power}{holm})",
              title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in ("metric", "sd diff", "tasks", "trials/task", "tasks needed", "trials needed"):
        t.add_column(col, justify="left" if col == "metric" else "right", no_wrap=col != "metric",
                     min_width=12 if col == "metric" else None, overflow="fold")
    for name, r in rows.items():
        trials = ("—" if r["trials_needed"] is None else str(r["trials_needed"])) if r["feasible"] else \
            f"none (≥ {r['min_tasks']} tasks)"
        t.add_row(escape(name), _f(r["sd_difference"], ".3f"), str(r["n_tasks"]), _f(r["trials_per_task"], ".1f"),
                  "—" if r["tasks_needed"] is None else str(r["tasks_needed"]), trials)
    console.print(t)
    console.print("[dim]tasks needed: at today's trials per task; trials needed: per task, keeping today's tasks "
                  "(none: more trials cannot make up for too few tasks)[/]")
    for source in dict.fromkeys(r["source"] for r in rows.values()):
        console.print(f"[dim]variance: {source}[/]")
