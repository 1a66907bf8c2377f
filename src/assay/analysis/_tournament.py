"""Tournaments: N runs judged pairwise, all pairs or a Swiss schedule, ranked by a Bradley-Terry fit.

Every match is a ``versus`` between two runs on the trace ids both scored (both orders by
default). The comparisons of all matches feed one Bradley-Terry fit (``assay.stats``); its
intervals resample whole tasks, so a ranking built on few tasks says so. The schedule caps the
judge calls: all pairs make N (N - 1) / 2 matches; a Swiss schedule makes about N / 2 per round
over ``rounds`` rounds (default ceil(log2 N) + 1), pairing runs with similar records that have
not met yet.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, DataError
from ..metrics.pairwise import PairwiseJudged, metric_info
from ..model import MetricResult, RunResult, Trace
from ..engine._run import _drive, _judge_info
from ._versus import Pair, pair_runs

SCHEDULES = ("auto", "all", "swiss")
ALL_PAIRS_UP_TO = 8
PRIOR_NOTE = ("strengths carry a stated normal prior, log-strength ~ N(0, 2^2) (a ridge penalty of 0.25 on their "
              "squares), always on: a run that never lost still gets a finite strength, and a loss never raises one")
"""``schedule="auto"``: all pairs up to this many runs, Swiss beyond."""


@dataclass(frozen=True, slots=True)
class Entrant:
    """One run in a tournament: its name, its results and the input traces behind them."""

    name: str
    run: RunResult
    traces: Mapping[str, Trace]


def all_pairs(n: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(n) for j in range(i + 1, n)]


def swiss_round(points: Sequence[float], met: set[frozenset[int]], byes: set[int]) -> tuple[list[tuple[int, int]], int | None]:
    """One Swiss round: pair runs in order of points (then entry order) with the nearest one not met yet.

    An odd field gives a bye to the lowest-placed run that has not had one. Returns the pairs and
    the run with the bye (None when the field is even).
    """
    order = sorted(range(len(points)), key=lambda i: (-points[i], i))
    bye = None
    if len(order) % 2:
        bye = next((i for i in reversed(order) if i not in byes), order[-1])
        order.remove(bye)
    pairs: list[tuple[int, int]] = []
    free = list(order)
    while free:
        i = free.pop(0)
        j = next((k for k in free if frozenset((i, k)) not in met), free[0])
        free.remove(j)
        pairs.append((min(i, j), max(i, j)))
    return pairs, bye


def _check(entrants: Sequence[Entrant]) -> None:
    if len(entrants) < 2:
        raise ConfigError(f"a tournament needs at least 2 runs, got {len(entrants)}")
    names = [e.name for e in entrants]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"runs named twice in the tournament: {', '.join(dup)}")


def tournament(entrants: Sequence[Entrant], metric: PairwiseJudged, judge: Any, *, schedule: str = "auto",
               rounds: int | None = None, level: float = 0.95, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Judge the runs against each other; matches, a win matrix and the Bradley-Terry ranking."""
    from ..stats._pairwise import PRIOR_SD, bradley_terry

    _check(entrants)
    if schedule not in SCHEDULES:
        raise ConfigError.unknown("tournament schedule", schedule, SCHEDULES)
    if judge is None:
        raise ConfigError("a tournament needs a judge: pass --judge (or set ASSAY_JUDGE)")
    n = len(entrants)
    kind = ("all" if n <= ALL_PAIRS_UP_TO else "swiss") if schedule == "auto" else schedule
    if rounds is not None and rounds < 1:
        raise ConfigError(f"rounds must be at least 1, got {rounds}")
    n_rounds = 1 if kind == "all" else min(n - 1, rounds or math.ceil(math.log2(n)) + 1)
    pairs_of: dict[tuple[int, int], list[Pair]] = {}
    matches: list[dict[str, Any]] = []
    comparisons: list[tuple[int, int, float, str]] = []
    points = [0.0] * n
    met: set[frozenset[int]] = set()
    byes: set[int] = set()
    planned = 0
    for rnd in range(1, n_rounds + 1):
        if kind == "all":
            todo, bye = all_pairs(n), None
        else:
            todo, bye = swiss_round(points, met, byes)
            if bye is not None:
                byes.add(bye)
        for i, j in todo:
            if (i, j) not in pairs_of:
                pairs_of[(i, j)] = pair_runs(entrants[i].run, entrants[j].run, entrants[i].traces,
                                             entrants[j].traces)[0]
        fresh = [(i, j) for i, j in todo if frozenset((i, j)) not in met]
        planned += sum(metric.planned_calls() for ij in fresh for p in pairs_of[ij]
                       if p.a is not None and p.b is not None)
        results = _judge_matches(metric, judge, [pairs_of[ij] for ij in fresh])
        for (i, j), res in zip(fresh, results):
            met.add(frozenset((i, j)))
            matches.append(_match(rnd, entrants, i, j, pairs_of[(i, j)], res, comparisons))
            points[i] += matches[-1]["points_a"]
            points[j] += matches[-1]["points_b"]
        if bye is not None:
            matches.append({"round": rnd, "a": entrants[bye].name, "b": None, "bye": True})
    judged = [m for m in matches if not m.get("bye")]
    if not comparisons:
        raise_none = not any(m["n_pairs"] for m in judged)
        if raise_none:
            raise DataError("no two runs of the tournament share a trace id: nothing to compare")
    names = [e.name for e in entrants]
    out: dict[str, Any] = {"players": names, "schedule": kind, "rounds": n_rounds, "metric": metric_info(metric),
                           "matches": matches, "n_comparisons": len(comparisons), "planned_judge_calls": planned,
                           "judge": _judge_info(judge)}
    out["win_matrix"] = _win_matrix(n, comparisons)
    flips = sum(m["position_inconsistency"]["inconsistent"] for m in judged)
    both = sum(m["position_inconsistency"]["pairs_judged_both_orders"] for m in judged)
    out["position_inconsistency"] = {"pairs_judged_both_orders": both, "inconsistent": flips,
                                     "rate": flips / both if both else None}
    out["ranking"] = []
    if comparisons:
        try:
            bt = bradley_terry(names, comparisons, level=level, n_boot=n_boot, seed=seed)
        except ValueError as exc:
            raise DataError(f"cannot rank the runs: {exc}") from None
        out["bradley_terry"] = {"level": level, "n_boot": bt.n_boot, "n_tasks": bt.n_tasks,
                                "converged": bt.converged, "scale": "log-strength, centred on 0",
                                "prior_sd": PRIOR_SD, "penalty": bt.prior, "prior": PRIOR_NOTE}
        record = _records(n, comparisons)
        rows = []
        for i in range(n):
            others = [bt.win_probability(i, j) for j in range(n) if j != i]
            rows.append({"name": names[i], "theta": bt.theta[i], "ci_low": bt.ci_low[i], "ci_high": bt.ci_high[i],
                         "expected_win_rate": sum(others) / len(others), **record[i]})
        rows.sort(key=lambda r: (-r["theta"], r["name"]))
        for rank, r in enumerate(rows, 1):
            r["rank"] = rank
        out["ranking"] = rows
    out["winner"] = out["ranking"][0]["name"] if out["ranking"] else None
    return out


async def _ajudge_matches(metric: PairwiseJudged, judge: Any, matches: Sequence[Sequence[Pair]]
                          ) -> list[list[MetricResult | None]]:
    async def one(p: Pair) -> MetricResult | None:
        if p.a is None or p.b is None:
            return None
        return await metric.judge_pair(judge, p.a, p.b)

    flat = await asyncio.gather(*(one(p) for m in matches for p in m))
    out, k = [], 0
    for m in matches:
        out.append(list(flat[k:k + len(m)]))
        k += len(m)
    return out


def _judge_matches(metric: PairwiseJudged, judge: Any, matches: Sequence[Sequence[Pair]]
                   ) -> list[list[MetricResult | None]]:
    async def gen() -> Any:
        yield await _ajudge_matches(metric, judge, matches)

    return list(_drive(gen))[0]


def _match(rnd: int, entrants: Sequence[Entrant], i: int, j: int, pairs: Sequence[Pair],
           results: Sequence[MetricResult | None], comparisons: list[tuple[int, int, float, str]]) -> dict[str, Any]:
    wins_a = ties = wins_b = flips = both = not_judged = 0
    for p, r in zip(pairs, results):
        if r is None or r.score is None:
            not_judged += 1
            continue
        comparisons.append((i, j, 1.0 - r.score, p.task_id))  # the score is run b's: i is run a here
        wins_b += r.score == 1.0
        ties += r.score == 0.5
        wins_a += r.score == 0.0
        consistent = r.details.get("position_consistent")
        both += consistent is not None
        flips += consistent is False
    n = wins_a + ties + wins_b
    rate_a = (wins_a + ties / 2) / n if n else None
    return {"round": rnd, "a": entrants[i].name, "b": entrants[j].name, "n_pairs": len(pairs), "n_judged": n,
            "wins_a": wins_a, "ties": ties, "wins_b": wins_b, "not_judged": not_judged, "win_rate_a": rate_a,
            "points_a": 0.0 if rate_a is None else rate_a, "points_b": 0.0 if rate_a is None else 1.0 - rate_a,
            "position_inconsistency": {"pairs_judged_both_orders": both, "inconsistent": flips}}


def _win_matrix(n: int, comparisons: Sequence[tuple[int, int, float, str]]) -> list[list[dict[str, Any] | None]]:
    """[i][j]: run i's win rate over run j (a tie is half a win) and the pairs behind it; None if they never met."""
    score = [[0.0] * n for _ in range(n)]
    count = [[0] * n for _ in range(n)]
    for i, j, s, _ in comparisons:
        score[i][j] += s
        score[j][i] += 1.0 - s
        count[i][j] += 1
        count[j][i] += 1
    return [[{"win_rate": score[i][j] / count[i][j], "n": count[i][j]} if count[i][j] else None for j in range(n)]
            for i in range(n)]


def _records(n: int, comparisons: Sequence[tuple[int, int, float, str]]) -> list[dict[str, int]]:
    rec = [{"wins": 0, "ties": 0, "losses": 0} for _ in range(n)]
    for i, j, s, _ in comparisons:
        if s == 0.5:
            rec[i]["ties"] += 1
            rec[j]["ties"] += 1
        else:
            rec[i if s == 1.0 else j]["wins"] += 1
            rec[j if s == 1.0 else i]["losses"] += 1
    return rec
