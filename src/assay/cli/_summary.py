"""What ``assay run`` says about its judge when it ends, and the plan a dry run prints."""

from __future__ import annotations

from typing import Any

from ..model._record import RunRecord


def judge_summary(run: RunRecord) -> str | None:
    """One human paragraph: calls made / cached / retried / errored (top reasons), budget, tokens, cost."""
    j = run.get("judge")
    if not j or run.get("dry_run"):
        return None
    reasks = f" ({j['reasks']} re-asks)" if j.get("reasks") else ""
    parts = [f"{j.get('calls', 0)} calls made{reasks}", f"{j.get('cached', 0)} cached",
             f"{j.get('retries', 0)} retried"]
    errors = j.get("errors", 0)
    if errors:
        top = sorted((j.get("error_reasons") or {}).items(), key=lambda kv: -kv[1])[:3]
        parts.append(f"errored {errors}: " + "; ".join(f"{reason} ({n})" for reason, n in top))
    else:
        parts.append("errored 0")
    skipped = j.get("skipped_reasons") or {}
    if skipped.get("budget reached"):
        parts.append(f"budget reached: {skipped['budget reached']} not evaluated")
    if skipped.get("judge not answering"):
        parts.append(f"judge not answering: {skipped['judge not answering']} calls skipped")
    parts.append(f"{j.get('input_tokens', 0) + j.get('output_tokens', 0):,} tokens")
    parts.append(_spent(j))
    return f"judge {j.get('model')}: " + ", ".join(parts)


def _spent(j: dict[str, Any]) -> str:
    """The cost, never a made-up ``$0.0000``: unknown when a call had no price, none when nothing was answered."""
    cost, unpriced = j.get("cost_usd") or 0.0, j.get("unpriced_calls") or 0
    if unpriced and not cost:
        return f"cost unknown (no price for {j.get('model')})"
    if not j.get("calls"):
        return "$0 (nothing sent)"
    if not cost:
        if not (j.get("input_tokens") or j.get("output_tokens")):
            return "no cost counted (no call was answered)"
        return "$0 (a local server or a model priced at 0)"
    extra = f" (+{unpriced} calls unpriced)" if unpriced else ""
    return (f"${cost:.4f}" if cost >= 0.00005 else f"${cost:.2g}") + extra


def dry_run_plan(run: RunRecord) -> str:
    """The dry run's table: per metric the traces, planned calls, estimated tokens and cost."""
    plan = run.get("judge_plan") or {}
    j = run.get("judge") or {}
    sampled = j.get("estimated_calls", 0)
    per_call = ((j.get("estimated_input_tokens", 0) + j.get("estimated_output_tokens", 0)) / sampled
                if sampled else None)
    cost = j.get("estimated_cost_usd")
    cost_per_call = cost / sampled if cost is not None and sampled else None
    rows = [("metric", "traces", "calls", "est. tokens", "est. cost")]
    total_calls = total_tokens = 0
    for name, p in plan.items():
        tokens = round(p["calls"] * per_call) if per_call is not None else None
        total_calls += p["calls"]
        total_tokens += tokens or 0
        rows.append((name, str(p["traces"]), str(p["calls"]), "?" if tokens is None else f"~{tokens:,}",
                     _cost(p["calls"], cost_per_call, j.get("model"))))
    rows.append(("total", "", str(total_calls), f"~{total_tokens:,}" if per_call is not None else "?",
                 _cost(total_calls, cost_per_call, j.get("model"))))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["dry run: nothing was sent and no run was stored; cached calls are not counted"]
    for k, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
        if k == 0 or k == len(rows) - 2:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cost(calls: int, per_call: float | None, model: Any) -> str:
    if not calls:
        return "$0"
    return "unknown" if per_call is None else f"~${calls * per_call:.4f}"
