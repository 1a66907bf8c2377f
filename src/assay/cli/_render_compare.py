"""Terminal rendering of comparisons and plans."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ._render import escape, plain_console


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


_PIECE = re.compile(r"[^_]*_+|[^_]+$")
"""A metric name's pieces: each up to and with its underscores, then the rest."""


def _pieces(name: str, width: int) -> str:
    """A metric name broken after underscores into lines of at most ``width`` (a piece longer stays whole)."""
    lines = [""]
    for piece in _PIECE.findall(name) or [name]:
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines.append("")
        lines[-1] += piece
    return "\n".join(lines)


def _longest_piece(names: Any) -> int:
    return max([10, *(len(p) for n in names for p in _PIECE.findall(n))])


def _fitted(console: Any, build: Callable[[int | None], Any]) -> Any:
    """``build(None)``, the table with a row a line, when it fits the console; else ``build(extra)``, its
    narrow form, whose metric names break after underscores and take the ``extra`` columns left over."""
    def width(table: Any) -> int:
        return int(console.measure(table, options=console.options.update_width(1000)).maximum)

    t = build(None)
    if width(t) > console.width:
        t = build(0)
        if (slack := console.width - width(t)) > 0:
            t = build(slack)
    return t


def comparison_table(result: dict[str, Any], console: Any = None) -> None:
    console = console or plain_console()
    family = result.get("holm_family")
    outside = [n for n in result["metrics"] if family is not None and n not in family]
    t = _fitted(console, lambda narrow: _comparison(result, family, narrow))
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


def _comparison(result: dict[str, Any], family: Any, narrow: int | None = None) -> Any:
    """The table, each row on one line; ``narrow`` (80 columns): names broken after underscores, never
    mid-word, in their longest piece plus ``narrow`` columns, and the interval under the difference, so
    no number is cut and the verdict stays whole."""
    from rich import box
    from rich.table import Table

    title = f"B vs A (Holm-corrected over {len(family) if family is not None else 'all'} metrics, alpha {result['alpha']})"
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
              show_edge=False, padding=(0, 1 if narrow is None else 0), collapse_padding=True)
    names = list(result["metrics"])
    width = _longest_piece(names) + (narrow or 0)
    for col in ("metric", "mean A", "mean B", "B - A [95% CI]", "p", "p Holm", "pairs", "verdict"):
        t.add_column(col, justify="left" if col in ("metric", "verdict") else "right",
                     no_wrap=narrow is None or col not in ("metric", "B - A [95% CI]"), overflow="fold",
                     min_width=width if narrow is not None and col == "metric" else None)
    for name, r in result["metrics"].items():
        delta = _f(r["delta"])
        if r["ci_low"] is not None:  # beside the difference, or under it when narrow
            delta += (" " if narrow is None else "\n") + f"[{_f(r['ci_low'])},{_f(r['ci_high'])}]"
        t.add_row(escape(name if narrow is None else _pieces(name, width)), _f(r["mean_a"], ".3f"),
                  _f(r["mean_b"], ".3f"), delta, _f(r["p_value"], ".4f"),
                  _f(r["p_adjusted"], ".4f") if r.get("in_holm_family", True) else "—",
                  str(r["n_paired"]), _verdict(r))
    return t


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
    from rich.table import Table

    console = console or plain_console()
    first = next(iter(rows.values()), None)
    holm = f", Holm over {first['n_tests']} metrics: alpha {first['alpha_per_test']:.3g} each" if first and \
        first["n_tests"] > 1 else ""
    title = f"a paired comparison detecting a difference of {delta} (power {power}{holm})"

    def build(narrow: int | None) -> Any:
        width = _longest_piece(rows) + (narrow or 0)
        t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for col in ("metric", "sd diff", "tasks", "trials/task", "tasks needed", "trials needed"):
            t.add_column(col, justify="left" if col == "metric" else "right", no_wrap=col != "metric",
                         min_width=(12 if narrow is None else width) if col == "metric" else None, overflow="fold")
        for name, r in rows.items():
            trials = ("—" if r["trials_needed"] is None else str(r["trials_needed"])) if r["feasible"] else \
                f"none (≥ {r['min_tasks']} tasks)"
            t.add_row(escape(name if narrow is None else _pieces(name, width)), _f(r["sd_difference"], ".3f"),
                      str(r["n_tasks"]), _f(r["trials_per_task"], ".1f"),
                      "—" if r["tasks_needed"] is None else str(r["tasks_needed"]), trials)
        return t

    t = _fitted(console, build)
    console.print(t)
    console.print("[dim]tasks needed: at today's trials per task; trials needed: per task, keeping today's tasks "
                  "(none: more trials cannot make up for too few tasks)[/]")
    for source in dict.fromkeys(r["source"] for r in rows.values()):
        console.print(f"[dim]variance: {source}[/]")
