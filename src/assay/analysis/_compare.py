"""Comparing two runs: paired per-metric differences, Holm-corrected, with planning help.

Traces pair by id (the same trace scored in both runs); trials of one task are one unit
(clusters = task ids), so repeated trials do not inflate significance. Interval and p-value come
from one cluster-t test (``assay.stats.paired_compare``), so they never contradict each other.
Every metric is "higher is better", so a significant negative difference is a regression.

``sequential_compare`` is the anytime-valid look of ``assay compare --sequential``: a betting
confidence sequence over task-level differences that may be rerun after every batch of tasks.

The Holm family is the metrics; ``overall`` (the traces' weighted score, a function of the same
metrics) is reported beside them with its own unadjusted p-value, and joins the family only when
asked (``holm_overall=True``): adding it would double every p-value of a one-metric comparison.
A design that cannot reach significance (too few clusters for the sign-flip test at this level and
family size) is said so, with the smallest achievable p, instead of a quiet "no change".
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from ..errors import ConfigError, DataError
from ..model import RunResult, TraceResult

OVERALL = "overall"
"""Pseudo-metric: the traces' overall weighted score."""

DUPLICATE_RULES = ("first", "last", "mean")
"""How ``compare`` pairs an id that occurs more than once in a run (``--allow-duplicate-ids``):
the first or the last trace with that id, or the mean of their scores."""


def _score(t: TraceResult, metric: str) -> float | None:
    if metric == OVERALL:
        return t.overall
    r = t.metrics.get(metric)
    return None if r is None else r.score


def duplicate_ids(run: RunResult) -> list[str]:
    """Ids that occur more than once in *run*, in order of first repeat."""
    seen: set[str] = set()
    out: dict[str, None] = {}
    for t in run.traces:
        if t.id in seen:
            out[t.id] = None
        seen.add(t.id)
    return list(out)


def _scores(traces: Iterable[TraceResult], metric: str, rule: str) -> dict[str, float | None]:
    """id -> score under a duplicate rule (ids are unique unless a rule was chosen)."""
    if rule == "last":
        return {t.id: _score(t, metric) for t in traces}
    if rule == "first":
        out: dict[str, float | None] = {}
        for t in traces:
            out.setdefault(t.id, _score(t, metric))
        return out
    acc: dict[str, list[float]] = {}
    ids: dict[str, None] = {}
    for t in traces:
        ids[t.id] = None
        s = _score(t, metric)
        if s is not None:
            acc.setdefault(t.id, []).append(s)
    return {i: (sum(acc[i]) / len(acc[i]) if i in acc else None) for i in ids}


def _check_duplicates(a: RunResult, b: RunResult, rule: str | None) -> dict[str, list[str]]:
    dups = {"a": duplicate_ids(a), "b": duplicate_ids(b)}
    if rule is None and (dups["a"] or dups["b"]):
        parts = []
        for side in ("a", "b"):
            ids = dups[side]
            if ids:
                shown = ", ".join(map(repr, ids[:10])) + (f" ... ({len(ids)} in all)" if len(ids) > 10 else "")
                parts.append(f"run {side.upper()} has duplicate trace ids: {shown}")
        raise DataError("; ".join(parts) + ". Pairing them would be ambiguous: make the ids unique, or pass "
                        f"--allow-duplicate-ids with one of {', '.join(DUPLICATE_RULES)} (first or last trace, "
                        "or the mean of their scores)")
    if rule is not None and rule not in DUPLICATE_RULES:
        raise ConfigError.unknown("duplicate-id rule", rule, DUPLICATE_RULES)
    return dups


def compare_runs(a: RunResult, b: RunResult, *, alpha: float = 0.05, level: float = 0.95, seed: int = 0,
                 n_boot: int = 2000, n_perm: int = 10000, delta: float = 0.05, power: float = 0.8,
                 holm_overall: bool = False, duplicates: str | None = None) -> dict[str, Any]:
    """Per-metric b - a with intervals, permutation p-values, Holm adjustment and a plan.

    *duplicates*: None refuses runs with repeated trace ids (DataError listing them); "first",
    "last" or "mean" pairs them by that rule (``DUPLICATE_RULES``).
    """
    from ..stats import holm, paired_compare, plan_paired

    dups = _check_duplicates(a, b, duplicates)
    rule = duplicates or "last"
    clusters = {t.id: t.task_id for t in a.traces}
    clusters.update({t.id: t.task_id for t in b.traces})
    ids_a, ids_b = {t.id for t in a.traces}, {t.id for t in b.traces}
    metrics = sorted(set(a.summary) & set(b.summary))
    family = metrics + ([OVERALL] if holm_overall else [])
    rows: dict[str, dict[str, Any]] = {}
    for name in metrics + [OVERALL]:
        sa, sb = _scores(a.traces, name, rule), _scores(b.traces, name, rule)
        c = paired_compare(sa, sb, clusters, level=level, n_boot=n_boot, n_perm=n_perm, seed=seed)
        row = {"mean_a": c.mean_a, "mean_b": c.mean_b, "delta": c.difference, "ci_low": c.ci_low,
               "ci_high": c.ci_high, "p_value": c.p_value, "n_paired": c.n_paired, "n_clusters": c.n_clusters,
               "method": c.method, "sign_flip_p": c.sign_flip_p,
               "exact_test": c.exact, "in_holm_family": name in family, "min_p_value": c.min_p_value}
        paired = [i for i in sorted(sa.keys() & sb.keys()) if sa[i] is not None and sb[i] is not None]
        diffs = [sb[i] - sa[i] for i in paired]  # type: ignore[operator]
        plan = plan_paired(diffs, [clusters[i] for i in paired], delta=delta, alpha=alpha, power=power,
                           n_tests=len(family) if name in family else 1) if len(diffs) >= 2 else None
        if plan is not None and plan.sd_difference > 0:
            row["pairs_needed_for_delta"] = plan.n_needed  # tasks when clustered, pairs otherwise
        rows[name] = row
    warnings = []
    params_a, params_b = _params(a), _params(b)
    for name in rows:
        pa, pb = params_a.get(name), params_b.get(name)
        if pa is not None and pb is not None and pa != pb:
            rows[name]["params_a"], rows[name]["params_b"] = pa, pb
            warnings.append(f"{name} was scored with different parameters: {pa} in A, {pb} in B")
    adjusted = holm({k: rows[k]["p_value"] for k in family if rows[k]["p_value"] is not None})
    m = len(adjusted)
    unreachable = []
    for name, row in rows.items():
        p = adjusted.get(name) if row["in_holm_family"] else row["p_value"]
        row["p_adjusted"] = adjusted.get(name)
        row["significant"] = p is not None and p < alpha
        row["regression"] = row["significant"] and (row["delta"] or 0) < 0
        row["improvement"] = row["significant"] and (row["delta"] or 0) > 0
        # Holm's first step multiplies the smallest p by m: nothing smaller is reachable
        reachable = None if row["min_p_value"] is None else row["min_p_value"] * (m if row["in_holm_family"] else 1)
        row["min_p_achievable"] = None if reachable is None else min(1.0, reachable)
        row["can_reach_significance"] = reachable is not None and reachable < alpha
        if row["n_paired"] and not row["can_reach_significance"]:
            unreachable.append(name)
    if unreachable:
        r0 = rows[unreachable[0]]
        warnings.append(
            f"the design cannot reach significance at alpha {alpha} for {', '.join(unreachable)}: with "
            f"{r0['n_clusters']} paired task(s) the smallest achievable p is {r0['min_p_value']:.4g}"
            + (f" ({r0['min_p_achievable']:.4g} after Holm over {m} metrics)" if r0["in_holm_family"] and m > 1
               else "") + "; pair more tasks")
    regressions = [n for n, r in rows.items() if r["regression"] and r["in_holm_family"]]
    # no metric in the family could have shown a difference (too few pairs, or none): not a pass
    inconclusive = not regressions and not any(rows[n]["can_reach_significance"] for n in family)
    if regressions:
        reason = f"significant regression: {', '.join(regressions)}"
    elif inconclusive:
        reason = "inconclusive: the design cannot reach significance (too few paired tasks)"
    else:
        reason = "no significant regression" + (f" (cannot reach significance for {', '.join(unreachable)})"
                                                if unreachable else "")
    return {
        "a": a.run.run_id or a.run.started_at, "b": b.run.run_id or b.run.started_at,
        "alpha": alpha, "level": level, "correction": "holm", "holm_family": family,
        "delta_for_plan": delta, "power": power,
        "metrics": rows,
        "only_in_a": sorted(ids_a - ids_b), "only_in_b": sorted(ids_b - ids_a),
        "metrics_only_in_a": sorted(set(a.summary) - set(b.summary)),
        "metrics_only_in_b": sorted(set(b.summary) - set(a.summary)),
        "duplicate_ids": {"rule": duplicates, "a": dups["a"], "b": dups["b"]} if duplicates else None,
        "regressions": regressions,
        "cannot_reach_significance": unreachable,
        "inconclusive": inconclusive,  # no metric in the family could show a difference: not a pass
        "exit_reason": reason,
        "warnings": warnings,
    }


def _params(run: RunResult) -> dict[str, Any]:
    """Metric name -> (version, parameters) as recorded in the run information."""
    return {m["name"]: {"version": m.get("version"), **(m.get("params") or {})}
            for m in run.run.get("metrics", []) if isinstance(m, dict) and "name" in m}


def sequential_compare(a: RunResult, b: RunResult, state: dict[str, Any] | None = None, *, metric: str = OVERALL,
                       alpha: float = 0.05, seed: int = 0, duplicates: str | None = None) -> dict[str, Any]:
    """One look of an anytime-valid comparison of *metric*, B against A, continuing *state*.

    The unit is the task: each paired task's difference is the mean of b - a over its paired
    trials (scores must lie in [0, 1], so differences lie in [-1, 1]). Tasks already in *state*
    keep the difference they had when first consumed (a rerun of an old task does not move the
    sequence); new paired tasks are shuffled (seeded by *seed* and the count so far: the test
    assumes tasks in random order) and added to a betting confidence sequence
    (``assay.stats.SequentialComparison``). The result's ``decision`` is "continue", "A better" or
    "B better", with the sequence's bounds; ``state`` is what to keep for the next look. Looking
    after every batch, and stopping at the first decision, keeps the false-alarm rate <= alpha.
    """
    from ..stats import SequentialComparison

    _check_duplicates(a, b, duplicates)
    rule = duplicates or "last"
    if state is not None:
        if state.get("metric") != metric or state.get("alpha") != alpha:
            raise ConfigError(f"the saved sequence compares {state.get('metric')!r} at alpha {state.get('alpha')}, "
                              f"this look asks {metric!r} at alpha {alpha}: one sequence, one metric and alpha "
                              "(start another with --sequence NAME, or --reset)")
        try:
            seq = SequentialComparison.from_dict(state["sequence"])
            seen = list(state["tasks"])
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"the saved sequence state is unreadable ({exc}): start again with --reset") from None
        if len(seen) != seq.n:
            raise DataError(f"the saved sequence state lists {len(seen)} tasks for {seq.n} differences: "
                            "start again with --reset")
    else:
        seq, seen = SequentialComparison(alpha=alpha), []
    known = [m for m in (set(a.summary) & set(b.summary)) | {OVERALL}]
    if metric not in known:
        raise ConfigError.unknown("metric of both runs", metric, sorted(known))
    task_of = {t.id: t.task_id for t in a.traces}
    task_of.update({t.id: t.task_id for t in b.traces})
    sa, sb = _scores(a.traces, metric, rule), _scores(b.traces, metric, rule)
    per_task: dict[str, list[float]] = {}
    for trace_id in sorted(sa.keys() & sb.keys()):
        x, y = sa[trace_id], sb[trace_id]
        if x is None or y is None:
            continue
        for side, v in (("A", x), ("B", y)):
            if not 0.0 <= v <= 1.0:
                raise DataError(f"--sequential needs scores in [0, 1]: {metric} of trace {trace_id!r} in run {side} "
                                f"is {v!r}")
        per_task.setdefault(str(task_of.get(trace_id) or trace_id), []).append(y - x)
    already = set(seen)
    new = sorted(t for t in per_task if t not in already)
    random.Random(f"{seed}:{len(seen)}").shuffle(new)  # a str seed: the same order in every process
    diffs = [min(1.0, max(-1.0, sum(per_task[t]) / len(per_task[t]))) for t in new]
    seq.update(diffs)
    seen.extend(new)
    return {
        "a": a.run.run_id or a.run.started_at, "b": b.run.run_id or b.run.started_at,
        "metric": metric, "alpha": alpha, "method": "betting confidence sequence (Waudby-Smith & Ramdas 2023)",
        "decision": seq.decision, "decided_at": seq.decided_at,
        "n_tasks": seq.n, "new_tasks": len(new), "tasks_not_recounted": len(already & per_task.keys()),
        "mean_difference": seq.mean, "cs_low": seq.low, "cs_high": seq.high, "cs_empty": seq.empty,
        "state": {"metric": metric, "alpha": alpha, "seed": seed, "tasks": seen, "sequence": seq.to_dict()},
    }
