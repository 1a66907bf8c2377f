"""Terminal rendering of ``assay versus`` and ``assay tournament``."""

from __future__ import annotations

from typing import Any


def _f(x: Any, fmt: str = ".3f") -> str:
    return "—" if x is None else format(x, fmt)


def _short(text: Any, n: int = 160) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= n else s[: n - 1] + "…"


def inconsistency_line(pi: dict[str, Any]) -> str | None:
    if not pi.get("pairs_judged_both_orders"):
        return None
    return (f"position inconsistency: {pi['inconsistent']} of {pi['pairs_judged_both_orders']} pairs "
            f"({pi['rate']:.0%}) changed verdict when the candidates swapped places (counted as ties)")


def versus_table(r: dict[str, Any], console: Any = None, show: int = 10) -> None:
    from rich import box
    from ._render import escape, plain_console
    from rich.table import Table

    console = console or plain_console()
    m = r["metric"]
    orders = "both orders" if m["params"].get("both_orders", True) else "one order per pair"
    console.print(f"{escape(r['b'])} (B) vs {escape(r['a'])} (A), judged pairwise by "
                  f"{escape(str(r['judge'].get('model')))} (rubric {escape(m['rubric'].replace('@', ' v', 1))}, "
                  f"{orders})", highlight=False)
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1))
    level = f"{r['level']:.0%}"
    for col in ("pairs", "B wins", "ties", "B losses", f"win rate of B [{level} CI]", "p"):
        t.add_column(col, justify="right", no_wrap=True)
    ci = f" [{_f(r['ci_low'], '.2f')}, {_f(r['ci_high'], '.2f')}]" if r["ci_low"] is not None else ""
    t.add_row(str(r["n_judged"]), str(r["wins_b"]), str(r["ties"]), str(r["losses_b"]), _f(r["win_rate_b"]) + ci,
              _f(r["p_value"], ".4f"))
    console.print(t)
    console.print(f"[dim]{r['test']} on {r['n_judged']} judged pairs over {r['n_tasks']} tasks; "
                  f"interval: {r['interval']} over tasks; a tie counts half a win[/]")
    seq = r.get("sequential")
    if seq:
        console.print(f"[dim]anytime-valid (rerun as the runs grow): sign e-process over tasks, "
                      f"{seq['task_wins_b']} won / {seq['task_losses_b']} lost by B, e = {seq['e_value']:.3g} "
                      f"(decides at {1 / r['alpha']:g}): {seq['decision']}[/]")
    line = inconsistency_line(r["position_inconsistency"])
    if line:
        console.print(line)
    if r["not_judged"]:
        reasons = ", ".join(f"{k} {v}" for k, v in r["not_judged_reasons"].items())
        console.print(f"[yellow]{r['not_judged']} pair(s) not judged ({escape(reasons)})[/]")
    for side in ("a", "b"):
        ids = r[f"only_in_{side}"]
        if ids:
            console.print(f"unpaired, only in {side.upper()}: " + escape(", ".join(ids[:10]))
                          + (f" ... ({len(ids)} in all)" if len(ids) > 10 else ""))
    differing = [p for p in r["pairs"] if p.get("winner") in ("a", "b")]
    if differing and show:
        console.print(f"pairs with a winner ({len(differing)}; first {min(show, len(differing))}):")
        for p in differing[:show]:
            who = "B better" if p["winner"] == "b" else "A better"
            why = "; ".join(_short(v.get("reasoning"), 100) for v in p.get("verdicts", [])[:1])
            console.print(f"  {escape(p['id'])}: {who}: {escape(why)}")
    errored = [p for p in r["pairs"] if p.get("warning") == "judge_error"]
    if errored:
        console.print(f"[yellow]{len(errored)} pair(s) errored, e.g. {escape(errored[0]['id'])}: "
                      f"{escape(_short(errored[0]['reason'], 200))}[/]")
    judge = r.get("judge") or {}
    if judge.get("requests"):
        console.print(f"[dim]judge: {judge.get('calls', 0)} calls made, {judge.get('cached', 0)} cached, "
                      f"{judge.get('errors', 0)} errored, "
                      f"{judge.get('input_tokens', 0) + judge.get('output_tokens', 0):,} tokens[/]")
    reason = r["exit_reason"]
    console.print(f"[bold red]{escape(reason)}[/]" if r["b_worse"] else escape(reason))


def dry_run_line(r: dict[str, Any]) -> str:
    """What a dry run of versus would cost: pairs x orders judge calls (cached calls not counted)."""
    j = r.get("judge") or {}
    orders = 2 if r["metric"]["params"].get("both_orders", True) else 1
    pairs = r["planned_judge_calls"] // orders if orders else 0
    tokens = j.get("estimated_input_tokens", 0) + j.get("estimated_output_tokens", 0)
    cost = j.get("estimated_cost_usd")
    cost_text = "cost unknown" if cost is None else f"~${cost:.4f}"
    return (f"dry run: nothing was sent; {pairs} pairs x {orders} orders = {r['planned_judge_calls']} judge calls "
            f"planned, {j.get('estimated_calls', 0)} not in the cache (~{tokens:,} tokens, {cost_text})")


def tournament_table(r: dict[str, Any], console: Any = None) -> None:
    from rich import box
    from ._render import escape, plain_console
    from rich.table import Table

    console = console or plain_console()
    m = r["metric"]
    n_matches = len([x for x in r["matches"] if not x.get("bye")])
    schedule = {"all": "all-pairs", "swiss": "Swiss"}.get(r["schedule"], r["schedule"])
    console.print(f"tournament of {len(r['players'])} runs, {schedule} schedule"
                  + (f" ({r['rounds']} rounds)" if r["schedule"] == "swiss" else "")
                  + f", {n_matches} matches judged by {escape(str(r['judge'].get('model')))} ({escape(m['rubric'])})")
    bt = r.get("bradley_terry") or {}
    level = f"{bt.get('level', 0.95):.0%}"
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1))
    for col in ("rank", "run", f"strength [{level} CI]", "exp. win rate", "W", "T", "L"):
        t.add_column(col, justify="left" if col == "run" else "right", no_wrap=col != "run", overflow="fold")
    for row in r["ranking"]:
        ci = f" [{_f(row['ci_low'], '+.2f')}, {_f(row['ci_high'], '+.2f')}]" if row["ci_low"] is not None else ""
        t.add_row(str(row["rank"]), escape(row["name"]), _f(row["theta"], "+.2f") + ci,
                  _f(row["expected_win_rate"], ".3f"), str(row["wins"]), str(row["ties"]), str(row["losses"]))
    console.print(t)
    console.print(f"[dim]strength: Bradley-Terry log-strength (centred on 0; a gap of 1.1 is 3:1 odds), "
                  f"intervals from {bt.get('n_boot', 0)} resamples of {bt.get('n_tasks', 0)} tasks; "
                  "exp. win rate: against the average of the others[/]")
    if bt.get("prior"):
        console.print(f"[dim]{escape(bt['prior'])}[/]")
    players = r["players"]
    if len(players) <= 10:
        w = Table(title="win rate of row over column", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  show_edge=False, padding=(0, 1))
        w.add_column("", no_wrap=True, overflow="fold")
        for k in range(len(players)):
            w.add_column(str(k + 1), justify="right", no_wrap=True)
        for i, name in enumerate(players):
            cells = ["·" if i == j else "—" if c is None else f"{c['win_rate']:.2f}"
                     for j, c in enumerate(r["win_matrix"][i])]
            w.add_row(f"{i + 1} {escape(name)}", *cells)
        console.print(w)
    line = inconsistency_line(r["position_inconsistency"])
    if line:
        console.print(line)
    if r.get("winner"):
        top = r["ranking"][0]
        second = r["ranking"][1] if len(r["ranking"]) > 1 else None
        overlap = second is not None and second["ci_high"] is not None and top["ci_low"] is not None \
            and second["ci_high"] >= top["ci_low"]
        console.print(f"first: {escape(r['winner'])}" + (f" (its interval overlaps {escape(second['name'])}'s: "
                                                            "not a clear winner)" if overlap else ""))
