"""A dollar budget holds whatever cost the agent's endpoint reports: NaN, infinite, negative or none."""

from __future__ import annotations

import math

import pytest

import assay
from assay.judge import make_judge
from tests.support.judge_server import text

TASKS = [{"id": f"t{i}", "input": f"question {i}"} for i in range(10)]


def collect(judge_server, costs, **options):
    """10 tasks against the scripted server at --budget-usd 3, one call at a time; the i-th call reports costs[i]."""
    calls = iter(costs)
    judge_server.reply = lambda request: text("ok", cost=next(calls))
    return assay.collect(TASKS, f"openai-compatible:agent@{judge_server.url}", budget_usd=3.0, concurrency=1,
                         cache=False, retries=0, **options)


@pytest.mark.parametrize("bad", [math.nan, -5.0, math.inf, -math.inf], ids=["nan", "negative", "inf", "minus-inf"])
def test_a_bad_cost_is_charged_as_the_dearest_call_and_the_budget_stops_at_3(judge_server, bad):
    got = collect(judge_server, [1.0, bad] + [1.0] * 8)
    assert len(judge_server.requests) == 3  # $1 + (bad: charged $1) + $1: the cap is reached
    assert len(got.traces) == 3 and len(got.not_collected) == 7
    assert all("budget exhausted" in why for _, _, why in got.not_collected)


def test_a_bad_first_cost_with_nothing_to_price_it_stops_the_budget(judge_server):
    got = collect(judge_server, [math.nan] + [1.0] * 9)
    assert len(judge_server.requests) == 1 and len(got.not_collected) == 9
    assert "reported cost nan and nothing prices it" in got.not_collected[0][2]


def test_a_price_must_be_a_finite_number_at_least_zero():
    with pytest.raises(assay.errors.ConfigError, match=r"price: input: expected a finite number >= 0"):
        make_judge("openai-compatible:agent@http://127.0.0.1:9/v1", prices={"agent": (math.nan, 1.0)})
    with pytest.raises(assay.errors.ConfigError, match=r"price: output: .* got -1"):
        make_judge("openai-compatible:agent@http://127.0.0.1:9/v1", prices={"agent": (1.0, -1)})
