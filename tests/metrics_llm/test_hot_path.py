"""The judge hot path builds nothing per call: verdict models and JSON schemas are made once.

Options are listed in a per-request order; the schema a request carries is the one model's JSON
schema with its enums in that order (``assay.judge.ordered``), exactly what a model built for
that order would give, so requests and cache keys are what they were.
"""

from __future__ import annotations

import itertools
import random
from typing import Literal

import pydantic
import pytest

from assay import evaluate
from assay.judge import bounded_schema, cache_key, make_judge, model_of
from assay.judge._parse import ParseError, json_schema, parse_verdict, schema_text, strict_schema
from assay.judge._protocol import JudgeRequest
from assay.metrics._judged import label_schema
from assay.metrics.eval_lib import BEHAVIOURS, FAILURE_WEIGHTS, failure_schema, outcome_schema
from tests.support.judge_server import JudgeServer, fitting
from tests.support.old_verdicts import IGNORE_EXTRA, evidence_and_reasoning


def conversations(n: int, offset: int = 0) -> list[dict]:
    return [{"id": f"c{i}", "turns": [
        {"input": f"Book a table for {i % 5 + 2} on day {i}.", "output": f"Which restaurant for day {i}?"},
        {"input": "The Italian place near the station.", "output": f"Done: table for {i % 5 + 2}, ref R{i}."}]}
        for i in range(offset, offset + n)]


@pytest.mark.parametrize("metric, style", [
    ("failure_rate", "full"), ("failure_rate", "compact"), ("goal_achievement_rate", "full"),
    ("goal_achievement_rate", "compact"), ("answer_relevance", "full"), ("resolution", "full"),
])
def test_no_model_and_no_json_schema_is_built_per_judge_call(metric, style, monkeypatch):
    built = []
    real_create, real_schema = pydantic.create_model, pydantic.BaseModel.model_json_schema.__func__

    def create_model(*args, **kw):
        built.append(("create_model", args[0] if args else kw))
        return real_create(*args, **kw)

    def model_json_schema(cls, *args, **kw):
        built.append(("model_json_schema", cls.__name__))
        return real_schema(cls, *args, **kw)

    with JudgeServer(fitting) as server:
        judge = make_judge(f"openai-compatible:scripted@{server.url}", cache=False, prompt_style=style)
        warm = evaluate(conversations(2), [metric], judge=judge)  # first use builds each model once
        assert all(t.metrics[metric].score is not None for t in warm.traces)
        monkeypatch.setattr(pydantic, "create_model", create_model)
        monkeypatch.setattr(pydantic.BaseModel, "model_json_schema", classmethod(model_json_schema))
        before = len(server.requests)
        result = evaluate(conversations(12, offset=100), [metric], judge=judge)  # new ids: new option orders
        calls = len(server.requests) - before
    assert calls >= 12 and all(t.metrics[metric].score is not None for t in result.traces)
    assert built == [], f"{len(built)} models or schemas built for {calls} judge calls: {built[:3]}"


def per_order_label_model(labels: tuple[str, ...], compact: bool = False) -> type[pydantic.BaseModel]:
    """What label_schema built before (a pydantic model per order, before verdict shapes): a model whose
    Literal lists the labels in this order."""
    return pydantic.create_model(
        "LabelVerdict", __config__=IGNORE_EXTRA, **evidence_and_reasoning("verdict", compact),
        verdict=(Literal[labels], pydantic.Field(description="Exactly one of the listed labels.")))


def per_order_failure_model(behaviours: tuple[str, ...], labels: tuple[str, ...]) -> type[pydantic.BaseModel]:
    finding = pydantic.create_model(
        "TurnFinding",
        turn=(int, pydantic.Field(description="The turn number the quote comes from.")),
        quote=(str, pydantic.Field(description="A short verbatim quote from the agent's reply in that turn.")),
        behaviour=(Literal[behaviours], pydantic.Field(description="What the agent did there.")))
    return pydantic.create_model(
        "FailureRateVerdict",
        findings=(list[finding], pydantic.Field(description="One entry per relevant agent reply.")),
        reason=(str, ...),
        verdict=(Literal[labels], pydantic.Field(description="Exactly one of the listed labels.")))


def same_wire_form(ordered_schema, reference) -> None:
    """What a provider and the cache see of an ordered schema equals a model built for that order."""
    assert json_schema(ordered_schema) == reference.model_json_schema()
    assert schema_text(ordered_schema) == schema_text(reference)
    assert strict_schema(ordered_schema) == strict_schema(reference)
    assert bounded_schema(ordered_schema) == bounded_schema(reference)
    assert bounded_schema(ordered_schema, 100, 50, 2) == bounded_schema(reference, 100, 50, 2)
    request = JudgeRequest(messages=({"role": "user", "content": "x"},), schema=ordered_schema, key="k@1")
    same = JudgeRequest(messages=request.messages, schema=reference, key="k@1")
    assert cache_key("m", request) == cache_key("m", same)


def test_label_orders_send_what_a_model_per_order_sent():
    labels = ("resolved", "partially_resolved", "unresolved", "escalated")
    for order in itertools.permutations(labels):
        for compact in (False, True):
            same_wire_form(label_schema(order, compact=compact), per_order_label_model(order, compact))


def test_failure_rate_orders_send_what_a_model_per_order_sent():
    rng = random.Random(7)
    for _ in range(25):
        behaviours, labels = list(BEHAVIOURS), list(FAILURE_WEIGHTS)
        rng.shuffle(behaviours)
        rng.shuffle(labels)
        schema = failure_schema(tuple(behaviours), tuple(labels))
        same_wire_form(schema, per_order_failure_model(tuple(behaviours), tuple(labels)))


def test_outcome_orders_keep_their_order_and_share_one_model():
    a, b = outcome_schema(("fully", "mostly", "partial", "minor", "none")), outcome_schema(
        ("none", "minor", "partial", "mostly", "fully"))
    assert json_schema(a)["properties"]["verdict"]["enum"] == ["fully", "mostly", "partial", "minor", "none"]
    assert json_schema(b)["properties"]["verdict"]["enum"] == ["none", "minor", "partial", "mostly", "fully"]
    assert model_of(a) is model_of(b)
    assert outcome_schema(("fully", "mostly", "partial", "minor", "none")) is a  # cached per order


def test_an_ordered_schema_validates_as_its_model_would():
    order = ("unresolved", "resolved", "partially_resolved")
    schema, reference = label_schema(order), per_order_label_model(order)
    good = '{"evidence": ["x"], "reasoning": "r", "verdict": "resolved"}'
    assert parse_verdict(good, schema).verdict == parse_verdict(good, reference).verdict == "resolved"
    for bad in ('{"evidence": [], "reasoning": "r", "verdict": "excellent"}',
                '{"evidence": [], "reasoning": "r", "verdict": 1}', '{"evidence": [], "verdict": "resolved"}'):
        with pytest.raises(ParseError):
            parse_verdict(bad, schema)
        with pytest.raises(ParseError):
            parse_verdict(bad, reference)
