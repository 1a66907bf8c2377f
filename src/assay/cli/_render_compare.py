"""Terminal rendering of comparisons and plans."""

from __future__ import annotations

from typing import Any


def _f(x: Any, fmt: str = "+.3f") -> str:
    return "—" if x is None else format(x, fmt)


def comparison_table(result: dict[str, Any], console: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    t = Table(title=f"B vs A (Holm-corrected, alpha {result['alpha']})", title_justify="left")
    for col in ("metric", "mean A", "mean B", "delta [95% CI]", "p", "p (Holm)", "pairs", "verdict"):
        t.add_column(col, justify="left" if col in ("metric", "verdict") else "right")
    for name, r in result["metrics"].items():
        verdict = ("[red]regression[/]" if r["regression"] else "[green]improvement[/]" if r["improvement"]
                   else "[dim]no significant change[/]")
        ci = f" [{_f(r['ci_low'])}, {_f(r['ci_high'])}]" if r["ci_low"] is not None else ""
        t.add_row(name, _f(r["mean_a"], ".3f"), _f(r["mean_b"], ".3f"), _f(r["delta"]) + ci,
                  _f(r["p_value"], ".4f"), _f(r["p_adjusted"], ".4f"), str(r["n_paired"]), verdict)
    console.print(t)
    for side in ("a", "b"):
        ids = result[f"only_in_{side}"]
        if ids:
            shown = ", ".join(ids[:10]) + (f" ... ({len(ids)} in all)" if len(ids) > 10 else "")
            console.print(f"unpaired, only in {side.upper()}: {shown}")
        if result[f"metrics_only_in_{side}"]:
            console.print(f"metrics only in {side.upper()}: {', '.join(result[f'metrics_only_in_{side}'])}")
    plans = {n: r["pairs_needed_for_delta"] for n, r in result["metrics"].items() if r.get("pairs_needed_for_delta")}
    if plans:
        console.print(f"paired traces needed to detect a difference of {result['delta_for_plan']} "
                      f"(power {result['power']}): " + ", ".join(f"{n} {v}" for n, v in plans.items()))
    for warning in result.get("warnings", []):
        console.print(f"[yellow]warning: {warning}[/]")
    console.print(f"[bold red]{len(result['regressions'])} significant regression(s)[/]" if result["regressions"]
                  else "no significant regression")


def plan_table(rows: dict[str, Any], delta: float, power: float, console: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    t = Table(title=f"trials needed to detect a difference of {delta} (power {power}, paired)", title_justify="left")
    for col in ("metric", "sd", "ICC", "tasks", "trials/task now", "pairs needed", "tasks needed",
                "trials/task needed (these tasks)"):
        t.add_column(col, justify="left" if col == "metric" else "right")
    for name, r in rows.items():
        t.add_row(name, _f(r["sd"], ".3f"), _f(r["icc"], ".2f"), str(r["n_tasks"]), _f(r["trials_per_task"], ".1f"),
                  "—" if r["n_needed"] is None else str(r["n_needed"]),
                  "—" if r["tasks_needed"] is None else str(r["tasks_needed"]),
                  f"infeasible: need ≥ {r['min_tasks']} tasks" if not r["feasible"]
                  else "—" if r["trials_needed"] is None else str(r["trials_needed"]))
    console.print(t)
