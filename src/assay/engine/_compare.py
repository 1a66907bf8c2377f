"""Comparing two runs: paired per-metric differences, Holm-corrected, with planning help.

Traces pair by id (the same trace scored in both runs); trials of one task are resampled
together (clusters = task ids), so repeated trials do not inflate significance. Every metric is
"higher is better", so a significant negative difference is a regression.
"""

from __future__ import annotations

from typing import Any

from ..model import RunResult

OVERALL = "overall"
"""Pseudo-metric: the traces' overall weighted score."""


def _scores(run: RunResult, metric: str) -> dict[str, float | None]:
    if metric == OVERALL:
        return {t.id: t.overall for t in run.traces}
    return {t.id: (t.metrics[metric].score if metric in t.metrics else None) for t in run.traces}


def compare_runs(a: RunResult, b: RunResult, *, alpha: float = 0.05, level: float = 0.95, seed: int = 0,
                 n_boot: int = 2000, n_perm: int = 10000, delta: float = 0.05, power: float = 0.8) -> dict[str, Any]:
    """Per-metric b - a with intervals, permutation p-values, Holm adjustment and a trials plan."""
    from ..stats import holm, paired_compare, trials_needed

    clusters = {t.id: t.task_id for t in a.traces}
    clusters.update({t.id: t.task_id for t in b.traces})
    ids_a, ids_b = {t.id for t in a.traces}, {t.id for t in b.traces}
    names = sorted(set(a.summary) & set(b.summary)) + [OVERALL]
    rows: dict[str, dict[str, Any]] = {}
    for name in names:
        c = paired_compare(_scores(a, name), _scores(b, name), clusters, level=level, n_boot=n_boot,
                           n_perm=n_perm, seed=seed)
        row = {"mean_a": c.mean_a, "mean_b": c.mean_b, "delta": c.difference, "ci_low": c.ci_low,
               "ci_high": c.ci_high, "p_value": c.p_value, "n_paired": c.n_paired, "n_clusters": c.n_clusters,
               "exact_test": c.exact}
        diffs = _paired_diffs(a, b, name)
        if len(diffs) >= 2:
            mean = sum(diffs) / len(diffs)
            sd = (sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)) ** 0.5
            if sd > 0:
                plan = trials_needed(delta, sd=sd, alpha=alpha, power=power, design="paired")
                row["pairs_needed_for_delta"] = plan.n
        rows[name] = row
    warnings = []
    params_a, params_b = _params(a), _params(b)
    for name in rows:
        pa, pb = params_a.get(name), params_b.get(name)
        if pa is not None and pb is not None and pa != pb:
            rows[name]["params_a"], rows[name]["params_b"] = pa, pb
            warnings.append(f"{name} was scored with different parameters: {pa} in A, {pb} in B")
    adjusted = holm({k: v["p_value"] for k, v in rows.items() if v["p_value"] is not None})
    for name, row in rows.items():
        p = adjusted.get(name)
        row["p_adjusted"] = p
        row["significant"] = p is not None and p < alpha
        row["regression"] = row["significant"] and (row["delta"] or 0) < 0
        row["improvement"] = row["significant"] and (row["delta"] or 0) > 0
    return {
        "a": a.run.get("run_id") or a.run.get("started_at"), "b": b.run.get("run_id") or b.run.get("started_at"),
        "alpha": alpha, "level": level, "correction": "holm", "delta_for_plan": delta, "power": power,
        "metrics": rows,
        "only_in_a": sorted(ids_a - ids_b), "only_in_b": sorted(ids_b - ids_a),
        "metrics_only_in_a": sorted(set(a.summary) - set(b.summary)),
        "metrics_only_in_b": sorted(set(b.summary) - set(a.summary)),
        "regressions": [n for n, r in rows.items() if r["regression"]],
        "warnings": warnings,
    }


def _params(run: RunResult) -> dict[str, Any]:
    """Metric name -> (version, parameters) as recorded in the run information."""
    return {m["name"]: {"version": m.get("version"), **(m.get("params") or {})}
            for m in run.run.get("metrics", []) if isinstance(m, dict) and "name" in m}


def _paired_diffs(a: RunResult, b: RunResult, name: str) -> list[float]:
    sa, sb = _scores(a, name), _scores(b, name)
    return [sb[i] - sa[i] for i in sa if sa[i] is not None and sb.get(i) is not None]  # type: ignore[operator]
