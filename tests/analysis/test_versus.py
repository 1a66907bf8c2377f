"""Pairwise judging against the scripted judge server: both orders, position bias, the record, accounting."""

from __future__ import annotations

import math
import re

import pytest

from assay import evaluate
from assay.analysis._versus import versus
from assay.errors import ConfigError, DataError
from assay.judge import make_judge
from assay.metrics.pairwise import PAIRWISE, get_pairwise, pairwise_metric
from assay.model import Trace
from tests.support.judge_server import JudgeServer, obj, status


def make(outputs: dict[str, str], tasks: dict[str, str] | None = None) -> tuple:
    raw = [{"id": i, **({"task_id": tasks[i]} if tasks else {}),
            "turns": [{"input": f"What is item {i}?", "output": out}]} for i, out in outputs.items()]
    result = evaluate(raw, ["regex_match:pattern=."])
    return result, {r["id"]: Trace.model_validate(r) for r in raw}


def fenced(user: str, label: str) -> str:
    """The text fenced under *label* (the fence markers carry the request's nonce)."""
    m = re.search(rf"<<<BEGIN {label} ([0-9a-f]{{16}})>>>\n(.*?)\n<<<END {label} \1>>>", user, re.S)
    assert m, f"{label} is not fenced"
    return m.group(2)


def candidates(request: dict) -> tuple[str, str]:
    user = request["messages"][-1]["content"]
    return fenced(user, "CANDIDATE_A"), fenced(user, "CANDIDATE_B")


def prefers(word: str):
    """A judge that prefers the candidate whose reply contains *word* (tie when neither or both do)."""
    def reply(request: dict):
        a, b = candidates(request)
        verdict = "A" if word in a and word not in b else "B" if word in b and word not in a else "tie"
        return obj({"evidence": [], "reasoning": f"picked {verdict}", "verdict": verdict})
    return reply


def judge_at(server: JudgeServer, **kw):
    return make_judge(f"openai-compatible:scripted@{server.url}", cache=False, retries=0, **kw)


A_OUT = {f"t{i}": f"plain reply {i}" for i in range(10)}
B_OUT = {f"t{i}": (f"GOOD reply {i}" if i < 8 else f"plain reply {i} ") for i in range(10)}


def test_both_orders_are_judged_anonymised_and_fenced():
    (a, ta), (b, tb) = make(A_OUT), make(B_OUT)
    with JudgeServer(prefers("GOOD")) as server:
        out = versus(a, b, ta, tb, get_pairwise("pairwise_quality"), judge_at(server), names=("base-v1", "new-v2"))
        requests = [r.json for r in server.requests]
    assert len(requests) == 20  # 10 pairs x 2 orders
    by_trace: dict[str, list[tuple[str, str]]] = {}
    for req in requests:
        user = req["messages"][-1]["content"]
        item = re.search(r"What is item (t\d+)\?", user).group(1)
        by_trace.setdefault(item, []).append(candidates(req))
        text = " ".join(m["content"] for m in req["messages"])
        assert "base-v1" not in text and "new-v2" not in text  # the runs' names never reach the judge
        assert re.search(r"Fence code for this request: [0-9a-f]{16}", user)
    for shown in by_trace.values():
        assert len(shown) == 2
        (a1, b1), (a2, b2) = shown
        assert {a1, a2} == {b1, b2} and a1 != a2  # each reply once as A and once as B
    assert (out["wins_b"], out["ties"], out["losses_b"]) == (8, 2, 0)
    assert out["position_inconsistency"] == {"pairs_judged_both_orders": 10, "inconsistent": 0, "rate": 0.0}
    assert out["differing"] == [f"t{i}" for i in range(8)]
    row = out["pairs"][0]
    assert row["winner"] == "b" and [v["winner"] for v in row["verdicts"]] == ["b", "b"]
    assert {v["label"] for v in row["verdicts"]} == {"A", "B"}  # the same reply named by its position each time
    assert out["planned_judge_calls"] == 20 and out["judge"]["requests"] == 20


def test_an_order_biased_judge_gives_ties_and_its_inconsistency_rate():
    (a, ta), (b, tb) = make(A_OUT), make(B_OUT)

    def biased(request: dict):
        a_text, _ = candidates(request)
        number = int(re.search(r"reply (\d+)", a_text).group(1))
        if number < 4:  # on t0..t3 the judge always names whatever stands first
            return obj({"evidence": [], "reasoning": "the first one", "verdict": "A"})
        return prefers("GOOD")(request)

    with JudgeServer(biased) as server:
        out = versus(a, b, ta, tb, get_pairwise("pairwise_quality"), judge_at(server))
    pi = out["position_inconsistency"]
    assert pi["inconsistent"] == 4 and pi["rate"] == pytest.approx(0.4)
    assert (out["wins_b"], out["ties"], out["losses_b"]) == (4, 6, 0)
    flipped = [p for p in out["pairs"] if p["position_consistent"] is False]
    assert [p["id"] for p in flipped] == ["t0", "t1", "t2", "t3"]
    assert all(p["winner"] == "tie" and "swapped places" in p["reason"] for p in flipped)


def test_one_order_makes_one_call_per_pair():
    (a, ta), (b, tb) = make(A_OUT), make(B_OUT)
    with JudgeServer(prefers("GOOD")) as server:
        out = versus(a, b, ta, tb, get_pairwise("pairwise_quality:both_orders=false"), judge_at(server))
        assert len(server.requests) == 10
    assert out["position_inconsistency"]["rate"] is None and out["wins_b"] == 8


def test_win_rate_interval_and_sign_test_equal_hand_computed_values():
    outs_b = {f"t{i}": (f"GOOD {i}" if i < 8 else f"plain reply {i}") for i in range(10)}
    outs_a = {f"t{i}": (f"plain reply {i}" if i < 8 else f"GOOD {i}") for i in range(10)}
    (a, ta), (b, tb) = make(outs_a), make(outs_b)
    with JudgeServer(prefers("GOOD")) as server:
        out = versus(a, b, ta, tb, get_pairwise("pairwise_quality"), judge_at(server))
    assert (out["wins_b"], out["ties"], out["losses_b"]) == (8, 0, 2)
    assert out["win_rate_b"] == 0.8
    # two-sided exact sign test: 2 * P(X >= 8), X ~ Binomial(10, 1/2)
    assert out["p_value"] == pytest.approx(2 * (45 + 10 + 1) / 1024)
    # Wilson with half a continuity correction: the Wilson bounds at p -/+ 0.25 / n
    z, n = 1.959963984540054, 10

    def wilson(p, sign):
        c = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        return c + sign * half

    assert out["ci_low"] == pytest.approx(wilson(0.8 - 0.25 / n, -1), abs=1e-9)
    assert out["ci_high"] == pytest.approx(wilson(0.8 + 0.25 / n, 1), abs=1e-9)
    assert out["test"] == "sign test (exact)" and not out["significant"]
    # the anytime-valid reading: KT e-value 2^10 B(8.5, 2.5) / B(1/2, 1/2), below 1 / alpha = 20
    seq = out["sequential"]
    kt = 2**10 * math.exp(math.lgamma(8.5) + math.lgamma(2.5) - math.lgamma(11)) / math.pi
    assert (seq["task_wins_b"], seq["task_losses_b"], seq["decision"]) == (8, 2, "continue")
    assert seq["e_value"] == pytest.approx(kt, rel=1e-12) and kt < 20


def test_trials_of_one_task_are_one_unit_of_the_test():
    # 3 tasks x 4 trials, B wins all 12: a sign-flip over 3 tasks cannot go below 2 / 2**3
    ids = {f"t{i}": f"task{i // 4}" for i in range(12)}
    (a, ta) = make({i: f"plain reply {n}" for n, i in enumerate(ids)}, ids)
    (b, tb) = make({i: f"GOOD reply {n}" for n, i in enumerate(ids)}, ids)
    with JudgeServer(prefers("GOOD")) as server:
        out = versus(a, b, ta, tb, get_pairwise("pairwise_quality:both_orders=false"), judge_at(server))
    assert out["wins_b"] == 12 and out["n_tasks"] == 3
    assert out["p_value"] == pytest.approx(0.25) and not out["significant"]
    assert out["exit_reason"].startswith("inconclusive")
    assert (out["sequential"]["task_wins_b"], out["sequential"]["task_losses_b"]) == (3, 0)  # tasks, not trials


def test_custom_criteria_reach_the_rubric_and_key_the_cache():
    metric = pairwise_metric("brevity_vs", "Which reply answers in fewer words?", register=False)()
    (a, ta), (b, tb) = make({"t0": "yes"}), make({"t0": "GOOD yes indeed"})
    with JudgeServer(prefers("GOOD")) as server:
        out = versus(a, b, ta, tb, metric, judge_at(server))
        system = server.requests[0].json["messages"][0]["content"]
    assert "Which reply answers in fewer words?" in system
    assert out["metric"]["rubric"].startswith("brevity_vs@1-")
    assert "brevity_vs" not in PAIRWISE
    with pytest.raises(ConfigError, match="A, B and tie"):
        pairwise_metric("bad", "version: 1\n@@ main\n$fence_notice\n@@ choices verdict\nX: x\nY: y\n", register=False)


def test_dry_run_and_budget_count_pairs_times_orders():
    (a, ta), (b, tb) = make(A_OUT), make(B_OUT)
    with JudgeServer(prefers("GOOD")) as server:
        out = versus(a, b, ta, tb, get_pairwise("pairwise_quality"), judge_at(server, dry_run=True))
        assert server.requests == []
    assert out["judge"]["estimated_calls"] == 20 == out["planned_judge_calls"]
    assert out["n_judged"] == 0 and out["not_judged_reasons"] == {"not_evaluated": 10}
    with JudgeServer(prefers("GOOD")) as server:
        out = versus(a, b, ta, tb, get_pairwise("pairwise_quality"), judge_at(server, budget_tokens=1,
                                                                                concurrency=1))
        assert len(server.requests) == 1  # the first call spends the budget; no other starts
    assert out["n_judged"] == 0 and out["judge"]["skipped"] == 19


def test_cached_verdicts_are_reused(tmp_path):
    (a, ta), (b, tb) = make(A_OUT), make(B_OUT)
    cache = tmp_path / "judge.sqlite3"
    with JudgeServer(prefers("GOOD")) as server:
        j = make_judge(f"openai-compatible:scripted@{server.url}", cache=str(cache))
        first = versus(a, b, ta, tb, get_pairwise("pairwise_quality"), j)
        j2 = make_judge(f"openai-compatible:scripted@{server.url}", cache=str(cache))
        second = versus(a, b, ta, tb, get_pairwise("pairwise_quality"), j2)
        assert len(server.requests) == 20
    assert second["judge"]["cached"] == 20 and second["wins_b"] == first["wins_b"] == 8


def test_errored_judge_calls_leave_pairs_unjudged_not_tied():
    (a, ta), (b, tb) = make({"t0": "x", "t1": "y"}), make({"t0": "GOOD", "t1": "GOOD"})
    with JudgeServer([status(400, "bad request")] * 2, default=prefers("GOOD")) as server:
        out = versus(a, b, ta, tb, get_pairwise("pairwise_quality:both_orders=false"), judge_at(server))
    assert out["n_judged"] == 0 and out["not_judged_reasons"] == {"judge_error": 2}
    assert out["exit_reason"] == "could not evaluate: no pair was judged"


def test_pairing_problems_are_clear_errors():
    (a, ta), (b, tb) = make({"t0": "x"}), make({"u0": "y"})
    with pytest.raises(DataError, match="share no trace id"):
        versus(a, b, ta, tb, get_pairwise("pairwise_quality"), object())
    (a, ta), (b, tb) = make({"t0": "x"}), make({"t0": "y"})
    with pytest.raises(DataError, match="input traces of run B are not available"):
        versus(a, b, ta, {}, get_pairwise("pairwise_quality"), object())
    with pytest.raises(ConfigError, match="unknown pairwise metric 'pairwise_qualty'.*Did you mean"):
        get_pairwise("pairwise_qualty")
