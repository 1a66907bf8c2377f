"""Sample-size planning from an observed run: the variance of paired differences per metric.

A comparison pairs the same tasks in two runs, so the between-task variance (some tasks are simply
hard) cancels; only what differs between runs counts. With a baseline run the paired differences
are observed. From one run they are modelled as the difference of two independent trials of the
same task: variance 2 x the within-task variance, no task x run interaction (said in ``source``);
without repeated trials the within-task variance cannot be separated, and 2 x the total variance is
an upper bound. Every metric is planned at alpha / (number of metrics), Holm's first step.
"""

from __future__ import annotations

from typing import Any

from ..model import RunResult


def _scores(run: RunResult, name: str) -> dict[str, tuple[float, str]]:
    out = {}
    for t in run.traces:
        r = t.metrics.get(name)
        if r is not None and r.score is not None:
            out[t.id] = (float(r.score), t.task_id)
    return out


def plan_run(run: RunResult, *, delta: float = 0.05, alpha: float = 0.05, power: float = 0.8,
             baseline: RunResult | None = None) -> dict[str, Any]:
    """Per metric: what a paired comparison needs to detect ``delta`` (tasks, or trials per task)."""
    from ..stats import clustered_plan, iid_plan, plan_paired, variance_components

    names = [n for n in run.summary if len(_scores(run, n)) >= 2]
    if baseline is not None:
        names = [n for n in names if n in baseline.summary]
    n_tests = max(1, len(names))
    out: dict[str, Any] = {}
    for name in names:
        cur = _scores(run, name)
        tasks = [task for _, task in cur.values()]
        n_tasks = len(set(tasks))
        per_task = len(cur) / n_tasks
        if baseline is not None:
            base = _scores(baseline, name)
            ids = sorted(cur.keys() & base.keys())
            plan = plan_paired([cur[i][0] - base[i][0] for i in ids], [cur[i][1] for i in ids], delta=delta,
                               alpha=alpha, power=power, n_tests=n_tests)
            source = "paired differences against the baseline run"
        elif n_tasks < len(cur):
            vc = variance_components([v for v, _ in cur.values()], tasks)
            within = 2.0 * (vc.within or 0.0)
            plan = clustered_plan(within / per_task, 0.0, within, per_task, n_tasks, delta=delta, alpha=alpha,
                                  power=power, n_tests=n_tests)
            source = "one run: differences as two independent trials of a task (2 x within-task variance)"
        else:
            values = [v for v, _ in cur.values()]
            mean = sum(values) / len(values)
            var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
            plan = iid_plan(2 * var, delta=delta, alpha=alpha, power=power, n_tests=n_tests) if var > 0 else None
            source = ("one run without repeated trials: 2 x the total variance, an upper bound (between-task "
                      "variance cancels in a paired comparison but cannot be separated here)")
        row: dict[str, Any] = {"source": source, "n_tasks": n_tasks, "trials_per_task": per_task,
                               "n_tests": n_tests, "alpha_per_test": alpha / n_tests, "sd_difference": None,
                               "tasks_needed": None, "trials_needed": None, "feasible": True, "min_tasks": None}
        if plan is not None:
            row.update(sd_difference=plan.sd_difference, tasks_needed=plan.n_needed,
                       trials_needed=plan.trials_needed, feasible=plan.feasible, min_tasks=plan.min_tasks,
                       interaction=plan.interaction)
        out[name] = row
    return out
