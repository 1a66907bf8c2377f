"""Sample-size planning from an observed run: variance and within-task correlation per metric."""

from __future__ import annotations

from typing import Any

from ..model import RunResult


def plan_run(run: RunResult, *, delta: float = 0.05, alpha: float = 0.05, power: float = 0.8) -> dict[str, Any]:
    """Per metric: sd, ICC, and the paired sample size (and trials per task) to detect ``delta``.

    The paired difference of two runs has about twice the per-trace variance when the runs are
    independent given the trace; we plan on sd * sqrt(2) as a conservative default.
    """
    from ..stats import trials_needed, variance_components

    out: dict[str, Any] = {}
    for name in run.summary:
        values, tasks = [], []
        for t in run.traces:
            r = t.metrics.get(name)
            if r is not None and r.score is not None:
                values.append(r.score)
                tasks.append(t.task_id)
        if len(values) < 2:
            continue
        n_tasks = len(set(tasks))
        vc = variance_components(values, tasks) if n_tasks < len(values) else None
        mean = sum(values) / len(values)
        var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
        icc = vc.icc if vc is not None else 0.0
        sd = (2 * var) ** 0.5
        per_task = len(values) / n_tasks
        row: dict[str, Any] = {"sd": var ** 0.5, "icc": icc, "n_tasks": n_tasks, "trials_per_task": per_task,
                               "n_needed": None, "tasks_needed": None, "trials_needed": None, "feasible": True,
                               "min_tasks": None}
        if sd > 0:
            # at today's trials per task: how many paired traces (and tasks) in all
            now = trials_needed(delta, sd=sd, alpha=alpha, power=power, design="paired", icc=icc,
                                trials_per_task=max(1, round(per_task)))
            row.update(n_needed=now.n, tasks_needed=now.n_tasks)
            if vc is not None:  # keeping today's tasks: how many trials each, if any number suffices
                fixed = trials_needed(delta, sd=sd, alpha=alpha, power=power, design="paired", icc=icc,
                                      n_tasks=n_tasks)
                row.update(trials_needed=fixed.trials_per_task, feasible=fixed.feasible, min_tasks=fixed.min_tasks)
        out[name] = row
    return out
