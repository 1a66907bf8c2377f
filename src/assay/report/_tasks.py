"""The per-task section: each task's trials as a grid (pass / fail / failed run / excluded), with
its pass rate, interval, pass^k and a flaky flag from ``statistics.trials.tasks``.

Every cell links to its trace's view when the trace has one; the figures come from the engine's
per-task table, so they cover every trace of the run even when the page keeps only some.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..model import RunResult, TraceResult
from ._html import Markup, fmt, h

MAX_TASKS = 300
"""Tasks drawn in the grid (flaky and weakest first beyond it); the results file has every task."""
MAX_TRIALS = 30
"""Trials drawn per task."""

CELLS = {"pass": ("pass", "✓"), "fail": ("fail", "✗"), "failed-run": ("failed-run", "!"),
         "excluded": ("excluded", "–"), "null": ("null", "·")}


def cell_status(t: TraceResult) -> str:
    """pass / fail / failed-run (the agent's run failed) / excluded (a harness fault) / null."""
    if t.outcome == "failed":
        return "failed-run"
    if t.outcome == "excluded":
        return "excluded"
    return "null" if t.passed is None else "pass" if t.passed else "fail"


def tasks_section(result: RunResult, viewed: set[int], *, href: Callable[[int], str] | None = None) -> Markup | None:
    """The section, or None when the run has no per-task table (no task has repeated trials).

    Cells of traces in ``viewed`` link to ``#trace-N``, or to ``href(i)`` (``assay view``: the trace's page)."""
    trials = result.statistics.get("trials") if isinstance(result.statistics.get("trials"), Mapping) else {}
    table = trials.get("tasks") if isinstance(trials, Mapping) else None
    if not table:
        return None
    by_task: dict[str, list[tuple[int, TraceResult]]] = {}
    for i, t in enumerate(result.traces):
        by_task.setdefault(t.task_id, []).append((i, t))
    rows_in = sorted(table, key=lambda r: (not r.get("flaky"), r["pass_rate"] if r.get("pass_rate") is not None else 2)) \
        if len(table) > MAX_TASKS else list(table)
    k = trials.get("per_task_k")
    head = h("tr", h("th", "task"), h("th", "trials", class_="num"), h("th", "passed", class_="num"),
             h("th", "pass rate [CI]", class_="num"), h("th", f"pass^{k}", class_="num"), h("th", ""),
             h("th", "trials (each opens its trace)"))
    rows = []
    for row in rows_in[:MAX_TASKS]:
        task = str(row["task_id"])
        cells = []
        for i, t in sorted(by_task.get(task, []), key=lambda it: (it[1].trial is None, it[1].trial or 0, it[0]))[:MAX_TRIALS]:
            cls, mark = CELLS[cell_status(t)]
            label = f"trial {t.trial if t.trial is not None else '?'}: {cls.replace('-', ' ')}" + (
                f" ({t.outcome_reason})" if t.outcome_reason else "")
            body = h("a", mark, href=href(i) if href is not None else f"#trace-{i + 1}") if i in viewed else mark
            cells.append(h("span", body, class_=f"cell {cls}", title=label))
        ci = row.get("pass_rate_ci")
        rate = fmt(row.get("pass_rate"), 2) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
        notes = [h("span", "flaky", class_="badge mixed") if row.get("flaky") else None,
                 h("span", f"{row['failed_runs']} failed run{'s' if row['failed_runs'] != 1 else ''}", class_="badge fail") if row.get("failed_runs") else None,
                 h("span", f"{row['excluded']} excluded", class_="badge error") if row.get("excluded") else None]
        rows.append(h("tr", h("td", task, class_="id"), h("td", str(row["trials"]), class_="num"),
                      h("td", str(row["passed"]), class_="num"), h("td", rate, class_="num"),
                      h("td", fmt(row.get("pass_pow_k"), 2), class_="num"), h("td", [n for n in notes if n]),
                      h("td", cells or h("span", "not in this page", class_="meta"), class_="cells")))
    more = len(table) - min(len(table), MAX_TASKS) + int(trials.get("tasks_omitted") or 0)
    legend = h("p", "Cells: ", h("span", "✓", class_="cell pass"), " passed · ", h("span", "✗", class_="cell fail"),
               " failed · ", h("span", "!", class_="cell failed-run"), " the agent's run failed (a failed trial) · ",
               h("span", "–", class_="cell excluded"), " excluded: a harness fault, in no statistic · ",
               h("span", "·", class_="cell null"), " no verdict. ",
               f"pass^{k}: all of {k} trials pass (the largest k every task has). Flaky: some trials pass, some fail.",
               class_="meta")
    note = h("p", f"{more} more tasks not drawn (flaky and weakest first); every trial is in the results file.",
             class_="meta") if more else None
    return h("section", h("h2", f"Per task ({len(table)} tasks, {trials.get('n_flaky', 0)} flaky)"), legend, note,
             h("div", h("table", h("thead", head), h("tbody", rows), class_="tasks"), class_="scroll"), id="tasks")
