"""Verdict shapes: a verdict's JSON schema without pydantic, and its model built when needed.

The JSON schema a shape writes must be exactly what pydantic writes for the model it builds (it
feeds the request bytes and the cache key), and that model must validate what the pydantic model
the metrics built before did."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading

import pydantic
import pytest

from assay.judge import ParseError, VerdictField, VerdictShape, json_schema, model_of, ordered, parse_verdict
from assay.judge._parse import schema_text, strict_schema
from assay.judge._shape import build_pending, pending
from assay.metrics._judged import label_schema, scale_schema
from tests.support.old_verdicts import IGNORE_EXTRA, evidence_and_reasoning

SCALES = [scale_schema(low, high, applicable, lists, name, compact)
          for low, high, applicable, lists, name, compact in itertools.product(
              [0, 1], [3, 5, 10], [False, True], [(), ("missing", "got_extra")], ["ScaleVerdict", "Other"],
              [False, True])]
LABELS = [label_schema(labels, name, compact) for labels, name, compact in itertools.product(
    [("yes", "no"), ("resolved", "partially_resolved", "unresolved"), ("b", "a_b", "C")], ["LabelVerdict", "X"],
    [False, True])]


@pytest.mark.parametrize("schema", SCALES + LABELS, ids=repr)
def test_a_shape_writes_the_json_schema_pydantic_writes_for_its_model(schema):
    shape = schema.base
    assert isinstance(shape, VerdictShape)
    # byte for byte, key order included: it is sent as it is
    assert json.dumps(shape.json_schema()) == json.dumps(shape.model.model_json_schema())


def old_scale_model(low: int, high: int, compact: bool) -> type[pydantic.BaseModel]:
    """What scale_schema built before verdict shapes (written out with pydantic)."""
    return pydantic.create_model(
        "ScaleVerdict", __config__=IGNORE_EXTRA, **evidence_and_reasoning("score", compact),
        score=(int, pydantic.Field(ge=low, le=high, description=f"An integer from {low} to {high}.")))


@pytest.mark.parametrize("compact", [False, True])
def test_a_scale_shape_sends_and_validates_what_the_old_model_did(compact):
    schema, old = scale_schema(1, 5, compact=compact), old_scale_model(1, 5, compact)
    assert schema_text(schema) == schema_text(old)
    assert strict_schema(schema) == strict_schema(old)
    for reply in ['{"evidence": ["q"], "reasoning": "r", "score": 4}',
                  '{"evidence": [], "reasoning": "r", "score": 5.0, "extra": "ignored"}',
                  '```json\n{"evidence": [], "reasoning": "r", "score": 1}\n```']:
        assert parse_verdict(reply, schema).model_dump() == parse_verdict(reply, old).model_dump()
    for bad in ['{"evidence": [], "reasoning": "r", "score": 6}', '{"evidence": [], "reasoning": "r", "score": "4"}',
                '{"evidence": [], "reasoning": "r", "score": true}', '{"evidence": "q", "reasoning": "r", "score": 3}',
                '{"evidence": [], "score": 3}']:
        with pytest.raises(ParseError):
            parse_verdict(bad, schema)
        with pytest.raises(ParseError):
            parse_verdict(bad, old)


def test_bounds_reach_the_judge_but_do_not_fail_a_longer_reply():
    schema = scale_schema(1, 5, compact=True)
    props = json_schema(schema)["properties"]
    assert props["evidence"]["maxItems"] == 2 and props["evidence"]["items"]["maxLength"] == 120
    long = json.dumps({"evidence": ["x" * 500] * 4, "reasoning": "y" * 1000, "score": 2})
    assert parse_verdict(long, schema).score == 2


def test_equal_shapes_share_one_model_and_orders_share_it_too():
    a = VerdictShape("T", (VerdictField("verdict", "enum", "one", options=("a", "b")),))
    b = VerdictShape("T", (VerdictField("verdict", "enum", "one", options=("a", "b")),))
    assert a == b and a.model is b.model
    first, second = ordered(a, ("b", "a")), ordered(b, ("a", "b"))
    assert model_of(first) is model_of(second) is a.model
    assert json_schema(first)["properties"]["verdict"]["enum"] == ["b", "a"]
    assert ordered(first, ("a", "b")) is second  # another order of an ordered schema: that order's schema


def test_threads_asking_for_a_model_at_once_get_the_same_one():
    shape = VerdictShape("Raced", (VerdictField("score", "integer", minimum=0, maximum=3),))
    start, got = threading.Barrier(8), []

    def ask():
        start.wait()
        got.append(shape.model)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len({id(m) for m in got}) == 1


def test_build_pending_builds_every_shape_made_so_far():
    shape = VerdictShape("Pending", (VerdictField("ok", "boolean", "yes or no"),))
    assert pending()
    build_pending()
    assert not pending()
    assert shape.model.model_validate({"ok": True}).ok is True


def test_a_failed_build_fails_where_the_model_is_used_not_in_the_background(monkeypatch):
    from assay.judge import _shape

    shape = VerdictShape("Unlucky", (VerdictField("ok", "boolean"),))
    monkeypatch.setattr(_shape, "_build", lambda shape: (_ for _ in ()).throw(ImportError("no pydantic today")))
    build_pending()  # the background build gives up quietly ...
    with pytest.raises(ImportError, match="no pydantic today"):  # ... the reply that needs it gets the error
        shape.model  # noqa: B018
    monkeypatch.undo()
    assert shape.model.model_validate({"ok": False}).ok is False  # and a later use tries again


def test_a_field_of_an_unknown_kind_is_refused_where_it_is_written():
    with pytest.raises(ValueError, match="'float'.*string, integer, boolean, array, enum"):
        VerdictField("x", "float")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="options"):
        VerdictField("x", "enum")
    with pytest.raises(ValueError, match="options"):
        VerdictField("x", "string", options=("a",))
    with pytest.raises(ValueError, match="minimum, max_items do not apply to kind 'string'"):
        VerdictField("x", "string", minimum=1, max_items=2)
    VerdictField("x", "array", max_length=10, max_items=2)  # what applies is accepted


def test_judge_metrics_and_their_requests_need_no_pydantic():
    """Building a one-call metric's request (schema, field guide, output bound, cache key, the request's
    bytes) imports no pydantic; validating the reply does."""
    code = (
        "import sys\n"
        "from assay.judge import JudgeRequest, OpenAICompatible, cache_key\n"
        "from assay.metrics._judged import field_guide, label_schema, output_bound, scale_schema\n"
        "from assay.judge._parse import base_of\n"
        "for schema in (scale_schema(1, 5, compact=True), label_schema(('b', 'a'), compact=True)):\n"
        "    field_guide(base_of(schema)); output_bound(base_of(schema))\n"
        "    request = JudgeRequest(messages=({'role': 'user', 'content': 'x'},), schema=schema, key='k@1')\n"
        "    cache_key('m', request)\n"
        "    OpenAICompatible('m', base_url='http://127.0.0.1:9/v1')._body(request, 'json_schema')\n"
        "before = 'pydantic' in sys.modules\n"
        "schema.model_validate_json('{\"evidence\": [], \"reasoning\": \"r\", \"verdict\": \"a\"}')\n"
        "print(before, 'pydantic' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["False", "True"]
