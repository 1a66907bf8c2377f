"""Tournaments against the scripted judge: all pairs and Swiss schedules, Bradley-Terry equal to hand-computed values."""

from __future__ import annotations

import math
import re

import pytest

from assay import evaluate
from assay.analysis._tournament import Entrant, swiss_round, tournament
from assay.errors import ConfigError
from assay.judge import make_judge
from assay.metrics.pairwise import get_pairwise
from assay.model import Trace
from tests.support.judge_server import JudgeServer, obj


def entrant(name: str, qualities: list[int]) -> Entrant:
    raw = [{"id": f"t{k}", "turns": [{"input": f"Task {k}?", "output": f"{name} answer of quality {q}"}]}
           for k, q in enumerate(qualities)]
    return Entrant(name, evaluate(raw, ["regex_match:pattern=."]), {r["id"]: Trace.model_validate(r) for r in raw})


def by_quality(request: dict):
    """Prefers the reply of higher 'quality N'; equal qualities are a tie."""
    user = request["messages"][-1]["content"]
    qa, qb = (int(re.search(rf"<<<BEGIN CANDIDATE_{c} \w+>>>\n.*?quality (\d+)", user, re.S).group(1)) for c in "AB")
    v = "A" if qa > qb else "B" if qb > qa else "tie"
    return obj({"evidence": [], "reasoning": f"quality {max(qa, qb)} wins", "verdict": v})


def judge_at(server: JudgeServer, **kw):
    return make_judge(f"openai-compatible:scripted@{server.url}", cache=False, **kw)


# per task t0..t5: A beats B 4-2, B and C split 3-3, A beats C 4-2: strengths 2 : 1 : 1 fit exactly
QUALITIES = {"A": [3, 3, 3, 3, 1, 1], "B": [2, 2, 1, 1, 2, 3], "C": [1, 1, 2, 2, 3, 2]}


def test_all_pairs_ranking_equals_the_hand_computed_fit():
    field = [entrant(n, q) for n, q in QUALITIES.items()]
    with JudgeServer(by_quality) as server:
        out = tournament(field, get_pairwise("pairwise_quality"), judge_at(server), n_boot=200)
        assert len(server.requests) == 3 * 6 * 2 == out["planned_judge_calls"]
    assert out["schedule"] == "all" and [(m["a"], m["b"]) for m in out["matches"]] == [("A", "B"), ("A", "C"),
                                                                                      ("B", "C")]
    ranking = {r["name"]: r for r in out["ranking"]}
    # the records A-B 4-2, B-C 3-3, A-C 4-2 under the stated N(0, 2^2) prior: B and C are exchangeable
    # (theta_B = theta_C = -theta_A / 2) and A's score equation, 8 - 12 sigma(1.5 theta_A) = 0.25 theta_A,
    # has one root (the MLE without the prior is 2/3 ln 2 = 0.462: the prior shrinks it a little)
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 8 - 12 / (1 + math.exp(-1.5 * mid)) - 0.25 * mid > 0 else (lo, mid)
    assert ranking["A"]["theta"] == pytest.approx(lo, abs=1e-8) and 0.4 < lo < 2 / 3 * math.log(2)
    assert ranking["B"]["theta"] == pytest.approx(-lo / 2, abs=1e-8) == ranking["C"]["theta"]
    assert out["ranking"][0]["name"] == "A" == out["winner"]
    assert ranking["A"]["expected_win_rate"] == pytest.approx(1 / (1 + math.exp(-1.5 * lo)))
    assert (ranking["A"]["wins"], ranking["A"]["ties"], ranking["A"]["losses"]) == (8, 0, 4)
    assert out["win_matrix"][0][1] == {"win_rate": 4 / 6, "n": 6} and out["win_matrix"][1][2]["win_rate"] == 0.5
    assert out["win_matrix"][0][0] is None
    for r in out["ranking"]:
        assert r["ci_low"] <= r["theta"] <= r["ci_high"]
    assert out["bradley_terry"]["n_tasks"] == 6
    assert out["position_inconsistency"] == {"pairs_judged_both_orders": 18, "inconsistent": 0, "rate": 0.0}


def test_swiss_schedule_pairs_by_record_and_caps_the_calls():
    field = [entrant(f"r{k}", [k] * 4) for k in range(5)]  # run k always has quality k
    with JudgeServer(by_quality) as server:
        out = tournament(field, get_pairwise("pairwise_quality:both_orders=false"), judge_at(server),
                         schedule="swiss", rounds=2, n_boot=50)
        calls = len(server.requests)
    played = [(m["round"], m["a"], m["b"]) for m in out["matches"]]
    # round 1 in entry order, r4 has the bye; round 2: the winners r1 and r3 meet, r0 meets r4, r2 has the bye
    assert played == [(1, "r0", "r1"), (1, "r2", "r3"), (1, "r4", None), (2, "r1", "r3"), (2, "r0", "r4"),
                      (2, "r2", None)]
    assert calls == 4 * 4 < 10 * 4  # 4 matches x 4 pairs x 1 order, against 10 matches for all pairs
    assert out["ranking"][0]["name"] in ("r3", "r4")


def test_swiss_round_avoids_rematches():
    pairs, bye = swiss_round([2, 2, 1, 1], {frozenset((0, 1))}, set())
    assert pairs == [(0, 2), (1, 3)] and bye is None


def test_bad_tournaments_are_refused():
    a = entrant("A", [1])
    with pytest.raises(ConfigError, match="at least 2 runs"):
        tournament([a], get_pairwise("pairwise_quality"), object())
    with pytest.raises(ConfigError, match="named twice"):
        tournament([a, a], get_pairwise("pairwise_quality"), object())
    with pytest.raises(ConfigError, match="unknown tournament schedule"):
        tournament([a, entrant("B", [1])], get_pairwise("pairwise_quality"), object(), schedule="knockout")


def test_a_run_that_never_loses_gets_a_finite_strength_and_the_output_says_why():
    field = [entrant("A", [5] * 4), entrant("B", [3, 3, 2, 2]), entrant("C", [2, 2, 3, 3])]
    with JudgeServer(by_quality) as server:
        out = tournament(field, get_pairwise("pairwise_quality"), judge_at(server), n_boot=100)
    bt = out["bradley_terry"]
    assert bt["converged"] and (bt["prior_sd"], bt["penalty"]) == (2.0, 0.25) and "N(0, 2^2)" in bt["prior"]
    ranking = {r["name"]: r for r in out["ranking"]}
    assert out["winner"] == "A" and ranking["A"]["losses"] == 0
    assert all(math.isfinite(r["theta"]) and abs(r["theta"]) < 5 for r in out["ranking"])
