"""``versus``: two runs judged head to head, pair by pair, by a pairwise judge metric.

Traces pair by id, as in ``compare``; each pair's candidates are the final replies of the input
traces the runs scored (the store keeps them; a results file needs its input files, unchanged).
The record is run b's: wins, ties and losses, the win rate with a task-clustered interval and the
sign-flip test over tasks (``assay.stats.win_rate``), the judge's position-inconsistency rate, and
every pair with the judge's reasons. B is significantly worse when its win rate is below 0.5 with
p < alpha: what ``assay versus`` exits 1 on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, DataError
from ..metrics._sections import clip
from ..metrics.pairwise import PairwiseJudged, final_reply, metric_info
from ..model import MetricResult, RunResult, Trace, TraceResult
from ._compare import _check_duplicates
from ..engine._run import _drive, _judge_info

MAX_REPLY_CHARS = 4000
"""Each candidate reply kept in the result (for the table and the HTML view), clipped in the middle."""


@dataclass(frozen=True, slots=True)
class Pair:
    """One trace id both runs scored, with the input traces behind the two results."""

    id: str
    task_id: str
    a: Trace | None
    b: Trace | None


def run_label(run: RunResult, given: str) -> str:
    """The run's ``--name``, else what the user typed (a results file or a run id)."""
    return str(run.run.name or given)


def pair_runs(a: RunResult, b: RunResult, traces_a: Mapping[str, Trace], traces_b: Mapping[str, Trace]
              ) -> tuple[list[Pair], list[str], list[str]]:
    """The pairs (in run a's order), the ids only in a and those only in b. Duplicate ids: DataError."""
    _check_duplicates(a, b, None)

    def trace_of(t: TraceResult, traces: Mapping[str, Trace]) -> Trace | None:
        got = traces.get(t.source) if t.source else None
        return got if got is not None else traces.get(t.id)

    by_b = {t.id: t for t in b.traces}
    ids_a = {t.id for t in a.traces}
    pairs = [Pair(t.id, t.task_id, trace_of(t, traces_a), trace_of(by_b[t.id], traces_b))
             for t in a.traces if t.id in by_b]
    return pairs, sorted(ids_a - by_b.keys()), sorted(by_b.keys() - ids_a)


def trace_file_run(records: Sequence[tuple[str, Trace]], path: str) -> tuple[RunResult, dict[str, Trace]]:
    """A trace file as a run with nothing scored: its traces, keyed by ``file:line``, to judge head to head."""
    results = [TraceResult(t.id, t.task, t.trial, {}, source=loc) for loc, t in records]  # type: ignore[arg-type]
    return RunResult(results, {}, {"inputs": [{"path": path}], "from_traces": True}), dict(records)


def pair_by_task(runs: Sequence[RunResult]) -> list[RunResult]:
    """*runs* keyed by task (and trial) instead of trace id, when their ids do not meet but their tasks do.

    Two agents' trace files rarely share trace ids; they share tasks. So when no two runs share an
    id, and every trace has a task_id and its (task, trial) is unique within its run, the pairs are
    made by (task, trial). Otherwise the runs come back as they are (pairing by id).
    """
    ids = [{t.id for t in r.traces} for r in runs]
    if any(ids[i] & ids[j] for i in range(len(ids)) for j in range(i + 1, len(ids))):
        return list(runs)
    keyed = []
    for r in runs:
        keys = [t.task_id if t.trial is None else f"{t.task_id}#{t.trial}" for t in r.traces]
        if any(t.task_id == t.id for t in r.traces) or len(set(keys)) < len(keys):
            return list(runs)  # a trace without a task of its own, or a task repeated without trials
        keyed.append(RunResult([t.replace(id=k) for t, k in zip(r.traces, keys)], r.summary, r.run,
                               r.input_issues, r.statistics))
    return keyed


async def ajudge_pairs(metric: PairwiseJudged, judge: Any, pairs: Sequence[Pair]) -> list[MetricResult | None]:
    """Every pair judged (concurrently; the judge stack limits how many calls are in flight).

    None for a pair whose input traces are not available.
    """
    async def one(p: Pair) -> MetricResult | None:
        if p.a is None or p.b is None:
            return None
        return await metric.judge_pair(judge, p.a, p.b)

    return list(await asyncio.gather(*(one(p) for p in pairs)))


def judge_pairs(metric: PairwiseJudged, judge: Any, pairs: Sequence[Pair]) -> list[MetricResult | None]:
    """:func:`ajudge_pairs` from sync code (in a worker thread when a loop is already running)."""
    async def gen() -> Any:
        yield await ajudge_pairs(metric, judge, pairs)

    return list(_drive(gen))[0]


def _sign_e_process(scored: Sequence[tuple[Any, Any]], alpha: float) -> dict[str, Any]:
    """The anytime-valid reading of the record: the KT e-process (``assay.stats.SignEProcess``) on
    task-level wins and losses (a task won when B's pair scores sum to more than half its pairs;
    even tasks carry no sign). It depends on the counts only, so rerunning ``versus`` on runs that
    grow and stopping at the first "B better" / "A better" keeps false alarms <= alpha."""
    from ..stats import SignEProcess

    totals: dict[Any, list[float]] = {}
    for task, score in scored:
        totals.setdefault(task, []).append(score)
    wins = sum(1 for v in totals.values() if sum(v) > len(v) / 2)
    losses = sum(1 for v in totals.values() if sum(v) < len(v) / 2)
    e = SignEProcess(alpha=alpha).update(wins, losses)
    return {"method": "sign e-process (KT mixture) over tasks", "task_wins_b": wins, "task_losses_b": losses,
            "e_value": e.e_value, "decision": {"wins": "B better", "losses": "A better"}.get(e.decision, "continue")}


def summarise_pairs(pairs: Sequence[Pair], results: Sequence[MetricResult | None], *, alpha: float,
                    level: float, seed: int) -> dict[str, Any]:
    """The head-to-head record of run b against run a from judged pairs."""
    from ..stats._pairwise import win_rate

    judged = [(p, r) for p, r in zip(pairs, results) if r is not None and r.score is not None]
    wr = win_rate([r.score for _, r in judged], [p.task_id for p, _ in judged], level=level, seed=seed)  # type: ignore[misc]
    both = [r for _, r in judged if r.details.get("position_consistent") is not None]
    flipped = [r for r in both if r.details["position_consistent"] is False]
    significant = wr.p_value is not None and wr.p_value < alpha
    rows = []
    for p, r in zip(pairs, results):
        row: dict[str, Any] = {"id": p.id, "task_id": p.task_id}
        if r is None:
            row.update(winner=None, warning="missing_data", reason="input trace not available")
        else:
            d = r.details
            row.update(winner=d.get("winner"), score=r.score, reason=r.reason,
                       warning=None if r.warning is None else str(r.warning),
                       position_consistent=d.get("position_consistent"), verdicts=d.get("verdicts", []),
                       judge_calls=r.judge_calls, tokens=r.tokens, cost_usd=r.cost_usd)
        for side, t in (("a", p.a), ("b", p.b)):
            reply = final_reply(t) if t is not None else None
            row[f"reply_{side}"] = None if reply is None else clip(reply, MAX_REPLY_CHARS)
        if p.a is not None and p.a.turns and p.a.turns[-1].input is not None:
            row["input"] = clip(p.a.turns[-1].input, MAX_REPLY_CHARS)
        rows.append(row)
    not_judged = [row for row in rows if row["winner"] is None]
    reasons: dict[str, int] = {}
    for row in not_judged:
        reasons[row["warning"] or "not judged"] = reasons.get(row["warning"] or "not judged", 0) + 1
    return {
        "n_pairs": len(pairs), "n_judged": wr.n, "n_tasks": wr.n_tasks,
        "wins_b": wr.wins, "ties": wr.ties, "losses_b": wr.losses,
        "win_rate_b": wr.rate, "ci_low": wr.ci_low, "ci_high": wr.ci_high, "level": level, "interval": wr.method,
        "p_value": wr.p_value, "test": "sign test (exact)" if wr.exact and wr.n == wr.n_tasks else
        "sign-flip test over tasks" + (" (exact)" if wr.exact else "" if wr.min_p_value is None
                                       else f" (random flips: p >= {wr.min_p_value:.2g})"),
        "min_p_value": wr.min_p_value, "alpha": alpha, "significant": significant,
        "sequential": _sign_e_process([(p.task_id, r.score) for p, r in judged], alpha),
        "b_worse": significant and wr.rate is not None and wr.rate < 0.5,
        "b_better": significant and wr.rate is not None and wr.rate > 0.5,
        "position_inconsistency": {"pairs_judged_both_orders": len(both), "inconsistent": len(flipped),
                                   "rate": len(flipped) / len(both) if both else None},
        "not_judged": len(not_judged), "not_judged_reasons": reasons,
        "differing": [row["id"] for row in rows if row["winner"] in ("a", "b")],
        "pairs": rows,
    }


def versus(a: RunResult, b: RunResult, traces_a: Mapping[str, Trace], traces_b: Mapping[str, Trace],
           metric: PairwiseJudged, judge: Any, *, alpha: float = 0.05, level: float = 0.95, seed: int = 0,
           names: tuple[str, str] = ("A", "B")) -> dict[str, Any]:
    """Judge run *b* against run *a* on every trace id both scored; the record and the verdict."""
    if judge is None:
        raise ConfigError("assay versus needs a judge: pass --judge (or set ASSAY_JUDGE)")
    pairs, only_a, only_b = pair_runs(a, b, traces_a, traces_b)
    if not pairs:
        raise DataError(f"runs {names[0]} and {names[1]} share no trace id (nor task_id and trial): nothing to compare")
    if not any(p.a is not None and p.b is not None for p in pairs):
        side = names[0] if all(p.a is None for p in pairs) else names[1]
        raise DataError(f"the input traces of run {side} are not available, so there are no replies to compare: "
                        "stored runs keep them; a results file needs its input files where they were, unchanged")
    results = judge_pairs(metric, judge, pairs)
    out = {"a": names[0], "b": names[1], "metric": metric_info(metric),
           **summarise_pairs(pairs, results, alpha=alpha, level=level, seed=seed),
           "only_in_a": only_a, "only_in_b": only_b, "judge": _judge_info(judge),
           "planned_judge_calls": sum(metric.planned_calls() for p in pairs if p.a is not None and p.b is not None)}
    out["exit_reason"] = exit_reason(out)
    return out


def exit_reason(out: dict[str, Any]) -> str:
    """The verdict line (what the exit status follows)."""
    if not out["n_judged"]:
        return "could not evaluate: no pair was judged"
    rate, p = out["win_rate_b"], out["p_value"]
    record = f"win rate of {out['b']} {rate:.3f}, p = {p:.4g}"
    if out["b_worse"]:
        return f"{out['b']} is significantly worse than {out['a']} ({record})"
    if out["b_better"]:
        return f"{out['b']} is significantly better than {out['a']} ({record})"
    if out["min_p_value"] is not None and out["min_p_value"] >= out["alpha"]:
        return (f"inconclusive: with {out['n_tasks']} judged task(s) the smallest achievable p is "
                f"{out['min_p_value']:.4g}; judge more tasks ({record})")
    return f"no significant difference ({record})"
