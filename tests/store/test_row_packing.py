"""The store's row packing: which rows say that no result carries tokens or a cost (the recorder then
skips its judge totals for them), and the input budget that stops being asked once spent."""

from __future__ import annotations

from assay.model import MetricResult, TraceResult, Warning
from assay.store._compact import RowCodec
from assay.store._recording import InputBudget

METRICS = [{"name": "a", "params": {"threshold": 0.5}}, {"name": "b", "params": {"threshold": 0.5}}]


def _trace(*results: MetricResult, passed: bool | None = True) -> TraceResult:
    return TraceResult("t", "t", None, {r.name: r for r in results}, passed=passed)


def _ok(name: str, **kw) -> MetricResult:
    return MetricResult(name=name, score=0.9, passed=True, threshold=0.5, **kw)


def test_a_row_says_whether_a_result_carries_tokens_or_a_cost():
    codec = RowCodec(METRICS)
    plain = _trace(_ok("a"), _ok("b"))
    assert codec.pack_row(plain, False)[2] is False
    assert codec.pack_row(plain, True)[2] is False
    failing = _trace(_ok("a"), MetricResult(name="b", score=0.1, passed=False, threshold=0.5, reason="low"), passed=False)
    assert codec.pack_row(failing, False)[2] is False
    for costly in (_ok("b", tokens=7), _ok("b", cost_usd=0.0), _ok("b", judge_calls=1, tokens=3, cost_usd=0.01)):
        for keep in (False, True):
            assert codec.pack_row(_trace(_ok("a"), costly), keep)[2] is True
    # a result with tokens but no judge call packs as a plain passing score (nothing else is kept for it)
    assert codec.pack_row(_trace(_ok("a"), _ok("b", tokens=7)), False)[:2] == codec.pack(plain, False)


def test_rows_are_the_same_whichever_result_first_needs_more():
    codec = RowCodec(METRICS)
    low = MetricResult(name="a", score=0.1, passed=False, threshold=0.5, reason="low", details={"k": 1})
    null = MetricResult(name="b", threshold=0.5, reason="none", warning=Warning.MISSING_DATA)
    for results in ([low, _ok("b")], [_ok("a"), null], [low, null], [_ok("a"), _ok("b")]):
        t = _trace(*results)
        scores, extra = codec.pack(t, False)
        back = RowCodec(METRICS, regroup=lambda m: ({}, None, None)).unpack("t", None, None, None, scores, extra)
        assert {n: (r.score, r.passed, r.warning, r.reason if r.passed is not True else "")
                for n, r in back.metrics.items()} == \
            {r.name: (r.score, r.passed, r.warning, r.reason if r.passed is not True else "") for r in results}


def test_the_input_budget_closes_when_both_caps_are_spent():
    budget = InputBudget(passed=1, other=2)
    passed, failed = _trace(_ok("a")), _trace(_ok("a"), passed=False)
    assert budget.open
    assert budget(passed) and budget.open
    assert not budget(passed) and budget.open  # the passing cap is spent, not the other
    assert budget(failed) and budget.open
    assert budget(failed) and not budget.open
    assert not budget(failed) and not budget(passed)
    assert not InputBudget(0, 0).open


def test_a_row_of_scored_results_packs_as_the_general_loop_packs_it():
    """The one-loop row (scored results, some failing or warned) against the same results in a row that the
    general loop packs (a trailing null result sends it there): the same bytes and kept words."""
    import msgspec

    codec = RowCodec([*METRICS, {"name": "c", "params": {"threshold": 0.5}}])
    low = MetricResult(name="a", score=0.1, passed=False, threshold=0.5, reason="low", evidence=["e"],
                       details={"k": [1, 2]})
    warned = MetricResult(name="b", score=0.9, passed=True, threshold=0.5, reason="kept only if failing",
                          warning=Warning.NOT_APPLICABLE)
    odd = MetricResult(name="b", score=0.9, passed=False, threshold=0.5, reason="failed above its threshold")
    null = MetricResult(name="c", threshold=0.5, reason="none", warning=Warning.MISSING_DATA)
    for results in ([low, _ok("b")], [_ok("a"), warned], [low, odd], [_ok("a"), odd], [low, warned]):
        scores, extra, costly = codec.pack_row(_trace(*results), False)
        g_scores, g_extra, _ = codec.pack_row(_trace(*results, null), False)
        assert costly is False
        assert g_scores[:len(scores)] == scores and len(g_scores) == len(scores) + 2  # c: index and status only
        got = msgspec.json.decode(extra) if extra else {}
        general = msgspec.json.decode(g_extra)
        assert general.pop("c") == {"reason": "none"}
        assert got == general and list(got) == list(general)
        if extra:
            assert extra == msgspec.json.encode(general)  # the same text, keys in the same order
    # what is kept: a failing result's words, a warning's status, a verdict its score does not give
    scores, extra, _ = codec.pack_row(_trace(low, odd), False)
    assert msgspec.json.decode(extra) == {"a": {"reason": "low", "evidence": ["e"], "details": {"k": [1, 2]}},
                                          "b": {"reason": "failed above its threshold", "passed": False}}
    assert codec.pack_row(_trace(_ok("a"), warned), False)[0][11] == 3  # b's status: not_applicable's code
