"""Costs a custom client reports: a NaN, negative or missing one never switches the budget off or
reaches a total (the scripted-server side of this is in tests/collect/test_collect_budget.py)."""

from __future__ import annotations

import asyncio
import math

from judge_helpers import GOOD, request

from assay.judge import make_judge

import json


class Client:
    """An eval_lib-style client reporting the costs it is given, one per call."""

    def __init__(self, costs):
        self.costs, self.calls = list(costs), 0

    async def chat_complete(self, messages, temperature):
        self.calls += 1
        return json.dumps(GOOD), self.costs.pop(0)

    def get_model_name(self):
        return "billed"


def run(judge, n):
    async def one_by_one():
        return [await judge.judge(request(i)) for i in range(n)]
    return asyncio.run(one_by_one())


def test_a_missing_cost_under_a_dollar_budget_is_charged_as_the_dearest_call():
    client = Client([1.0, None, 1.0] + [1.0] * 7)
    judge = make_judge(client, cache=False, budget_usd=3.0, concurrency=1)
    verdicts = run(judge, 10)
    assert client.calls == 3 and sum(v.skipped for v in verdicts) == 7
    assert judge.stats.cost_usd == 3.0 and judge.stats.unpriced_calls == 0


def test_a_client_that_never_reports_a_cost_cannot_hold_a_dollar_budget():
    client = Client([None] * 5)
    verdicts = run(make_judge(client, cache=False, budget_usd=3.0, concurrency=1), 5)
    assert client.calls == 1
    assert all("reported no cost and nothing prices it" in v.error for v in verdicts[1:])


def test_without_a_budget_bad_costs_are_unknown_or_conservative_never_summed_as_is():
    client = Client([0.5, math.nan, -3.0, None, math.inf])
    judge = make_judge(client, cache=False, concurrency=1)
    costs = [v.cost_usd for v in run(judge, 5)]
    assert costs == [0.5, 0.5, 0.5, None, 0.5]  # a bad one costs the dearest so far; a missing one is unknown
    assert judge.stats.cost_usd == 2.0 and judge.stats.unpriced_calls == 1
