"""latency_score, token_efficiency, cost_efficiency, throughput, turn_efficiency (seed 004)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay import ConfigError
from assay.model import Warning


@pytest.mark.parametrize("latency_ms, want", [(500, 1.0), (2000, 1.0), (2500, 0.8), (10000, 0.2)],
                         ids=["seed-good-1.0", "at-threshold-1.0", "seed-partial-0.8", "seed-bad-0.2"])
def test_latency_seed_examples(build, run, latency_ms, want):
    assert run("latency_score", build(latency_ms=latency_ms)).score == pytest.approx(want)


def test_latency_sums_turns_and_respects_threshold_param(build, run):
    t = build([{"input": "a", "latency_ms": 600}, {"input": "b", "latency_ms": 400}])
    assert run("latency_score", t, threshold_ms=500).score == pytest.approx(0.5)


def test_latency_missing_is_null(build, run):
    r = run("latency_score", build())
    assert r.score is None and r.warning == Warning.MISSING_DATA


def test_latency_negative_is_invalid(build, run):
    assert run("latency_score", build(latency_ms=-5)).warning == Warning.INVALID_DATA


def test_latency_bad_threshold_is_config_error(build, run):
    with pytest.raises(ConfigError, match="threshold_ms"):
        run("latency_score", build(latency_ms=1), threshold_ms=0)


@pytest.mark.parametrize("quality, tokens, want", [(0.9, 500, 0.9), (0.8, 2000, 0.57), (0.8, 5000, 0.36)],
                         ids=["seed-good-0.9", "seed-partial-0.57", "seed-bad-0.36"])
def test_token_efficiency_seed_examples(build, run, quality, tokens, want):
    t = build(usage={"total_tokens": tokens}, metadata={"quality_score": quality})
    assert run("token_efficiency", t).score == pytest.approx(want, abs=0.005)


def test_token_efficiency_heavy_penalty(build, run):
    t = build(usage={"input_tokens": 1500, "output_tokens": 500}, metadata={"quality_score": 0.8})
    assert run("token_efficiency", t, penalty="heavy").score == pytest.approx(0.4)


@pytest.mark.parametrize("quality, cost, want", [(0.85, 0.005, 0.85), (0.8, 0.02, 0.57), (0.8, 0.05, 0.36)],
                         ids=["seed-good-0.85", "seed-partial-0.57", "seed-bad-0.36"])
def test_cost_efficiency_seed_examples(build, run, quality, cost, want):
    t = build(usage={"cost_usd": cost}, metadata={"quality_score": quality})
    assert run("cost_efficiency", t).score == pytest.approx(want, abs=0.005)


def test_efficiency_quality_from_earlier_results(build, run, mk):
    t = build(usage={"total_tokens": 500})
    results = {"answer_relevance": mk.result(0.8), "completeness": mk.result(0.6), "accuracy": mk.result(None)}
    r = run("token_efficiency", t, results)
    assert r.score == pytest.approx(0.7)
    assert r.details["quality_source"] == "mean of answer_relevance, completeness"


def test_efficiency_does_not_invert_hallucination_score(build, run, mk):
    # PEERS.md: UAEF used 1 - hallucination_score although 1.0 already means "no hallucination".
    t = build(usage={"total_tokens": 100})
    r = run("token_efficiency", t, {"hallucination_score": mk.result(0.9)})
    assert r.score == pytest.approx(0.9)


def test_efficiency_metadata_quality_wins_and_zero_is_valid(build, run, mk):
    t = build(usage={"total_tokens": 100}, metadata={"quality_score": 0.0})
    r = run("cost_efficiency", build(usage={"cost_usd": 0.001}, metadata={"quality_score": 0.0}),
            {"answer_relevance": mk.result(1.0)})
    assert r.score == 0.0
    assert run("token_efficiency", t).score == 0.0


@pytest.mark.parametrize("kw, warning", [
    ({"usage": {"total_tokens": 10}}, Warning.MISSING_DATA),
    ({"metadata": {"quality_score": 0.5}}, Warning.MISSING_DATA),
    ({"usage": {"total_tokens": 10}, "metadata": {"quality_score": 1.5}}, Warning.INVALID_DATA),
    ({"usage": {"total_tokens": 10}, "metadata": {"quality_score": "good"}}, Warning.INVALID_DATA),
], ids=["no-quality", "no-usage", "quality-out-of-range", "quality-not-number"])
def test_efficiency_nulls(build, run, kw, warning):
    r = run("token_efficiency", build(**kw))
    assert r.score is None and r.warning == warning


def test_efficiency_bad_penalty(build, run):
    with pytest.raises(ConfigError, match="'light', 'heavy'"):
        run("token_efficiency", build(), penalty="medium")


def test_efficiency_agents_usage_counts(build, run):
    t = build(agents={"a": {"turns": [], "usage": {"total_tokens": 3000}}}, metadata={"quality_score": 0.6})
    assert run("token_efficiency", t, expected_tokens=1000, penalty="heavy").score == pytest.approx(0.2)


@pytest.mark.parametrize("rps, want", [(12.5, 1.0), (5, 0.5), (2, 0.2)],
                         ids=["seed-good-1.0", "seed-partial-0.5", "seed-bad-0.2"])
def test_throughput_seed_examples(build, run, rps, want):
    assert run("throughput", build(throughput_rps=rps)).score == pytest.approx(want)


def test_throughput_missing(build, run):
    assert run("throughput", build()).warning == Warning.MISSING_DATA


def user_turns(n: int) -> list[dict]:
    return [{"input": f"q{i}", "output": f"a{i}"} for i in range(n)]


@pytest.mark.parametrize("n, want", [(2, 1.0), (5, 1.0), (7, 0.71), (20, 0.25)],
                         ids=["seed-good-1.0", "at-expected-1.0", "seed-partial-0.71", "seed-bad-0.25"])
def test_turn_efficiency_seed_examples(build, run, n, want):
    r = run("turn_efficiency", build(user_turns(n)))
    assert r.score == pytest.approx(want, abs=0.005)
    assert r.details["completeness_source"].startswith("assumed 1.0")


def test_turn_efficiency_counts_user_turns_not_tool_or_system_messages(build, run):
    # PEERS.md: UAEF counted system and tool messages as turns. Two user questions with a
    # system prompt and three tool round trips are 2 turns.
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "14C"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "forecast", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "rain"},
        {"role": "assistant", "content": "14C and rain."},
        {"role": "user", "content": "And Berlin?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c3", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Berlin\"}"}}]},
        {"role": "tool", "tool_call_id": "c3", "content": "10C"},
        {"role": "assistant", "content": "10C."},
    ]
    r = run("turn_efficiency", {"id": "m", "messages": messages, "expected": {"turns": 1}})
    assert r.details["user_turns"] == 2
    assert r.score == pytest.approx(0.5)


def test_turn_efficiency_uses_conversation_completeness(build, run, mk):
    r = run("turn_efficiency", build(user_turns(7)), {"conversation_completeness": mk.result(0.5)})
    assert r.score == pytest.approx(0.5 * 5 / 7)
    assert r.details["completeness_source"] == "conversation_completeness"


def test_turn_efficiency_expected_turns_from_trace_then_param(build, run):
    assert run("turn_efficiency", build(user_turns(4), expected={"turns": 2})).score == pytest.approx(0.5)
    assert run("turn_efficiency", build(user_turns(4)), expected_turns=2).score == pytest.approx(0.5)
    assert run("turn_efficiency", build(user_turns(4), expected={"turns": 4}), expected_turns=2).score == 1.0


def test_turn_efficiency_no_user_turns(build, run):
    r = run("turn_efficiency", build([{"output": "hello"}]))
    assert r.score is None and r.warning == Warning.MISSING_DATA


@settings(max_examples=80, deadline=None)
@given(latency=st.floats(0, 1e7), tokens=st.integers(0, 10**7), cost=st.floats(0, 100),
       quality=st.floats(0, 1), rps=st.floats(0, 1e4), n=st.integers(1, 30))
def test_performance_scores_bounded(build, run, latency, tokens, cost, quality, rps, n):
    t = build(user_turns(n), latency_ms=latency, usage={"total_tokens": tokens, "cost_usd": cost},
              throughput_rps=rps, metadata={"quality_score": quality})
    for name in ("latency_score", "token_efficiency", "cost_efficiency", "throughput", "turn_efficiency"):
        s = run(name, t).score
        assert s is not None and 0.0 <= s <= 1.0, name
