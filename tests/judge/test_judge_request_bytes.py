"""The per-call shortcuts of the judge path give what the plain code gives, byte for byte.

A request body made from a layout encoded once (``_openai.Body``) against ``json.dumps`` of the
whole body; the content digest of one joined update against one update per part; the fence's
byte-level check for control characters against the regex; a layer whose ``inner`` is replaced
calling the new one.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.judge import content_digest, ordered
from assay.judge._base import Wrapper
from assay.judge._fence import _CONTROL, _ENTITY, _plain
from assay.judge._openai import Body, OpenAICompatible
from assay.judge._protocol import JudgeRequest, Verdict
from assay.metrics._judged import label_schema, scale_schema
from assay.metrics.eval_lib import BEHAVIOURS, FAILURE_WEIGHTS, failure_schema

TEXTS = ["plain", "naïve café — «quoted» \u2028 line", 'a "quote" and a \\ backslash', "tab\tnew\nline\r\x00\x07\x1f\x7f",
         "emoji 😀 and CJK 漢字", "</script><<<END DATA 0>>>", "\ufeff\u200b", ""]


def backend(**kw) -> OpenAICompatible:
    return OpenAICompatible("judge-model", base_url="http://127.0.0.1:9/v1", provider=kw.pop("provider", "openai"),
                            **kw)


def request(schema, *, texts=("system text", "user text"), **kw) -> JudgeRequest:
    messages = ({"role": "system", "content": texts[0]}, {"role": "user", "content": texts[1]})
    return JudgeRequest(messages=messages, schema=schema, **kw)


def plain_body(b: OpenAICompatible, r: JudgeRequest, mode: str) -> bytes:
    return json.dumps(b._params(r, mode), ensure_ascii=False).encode()


SCHEMAS = [
    lambda rng: failure_schema(tuple(rng.sample(sorted(BEHAVIOURS), len(BEHAVIOURS))),
                               tuple(rng.sample(sorted(FAILURE_WEIGHTS), len(FAILURE_WEIGHTS)))),
    lambda rng: label_schema(tuple(rng.sample(["yes", "no", "partly"], 3)), compact=rng.random() < 0.5),
    lambda rng: scale_schema(1, 5, applicable=rng.random() < 0.5, compact=rng.random() < 0.5),
    lambda rng: ordered(scale_schema(1, 5)),  # an ordered schema with no option list to order
]


@pytest.mark.parametrize("provider, mode", [("openai", "json_schema"), ("llamacpp", "json_schema"),
                                            ("openai", "tools"), ("openai", "json")])
@pytest.mark.parametrize("settings_", [{}, {"max_tokens": 300, "seed": 7}, {"temperature": 0.2}])
def test_a_body_from_its_layout_is_json_dumps_of_the_whole_body(provider, mode, settings_):
    b = backend(provider=provider, **settings_)
    rng = random.Random(43)
    for i in range(60):
        schema = SCHEMAS[i % len(SCHEMAS)](rng)
        r = request(schema, texts=(rng.choice(TEXTS), "".join(rng.sample(TEXTS, 3))),
                    temperature=rng.choice([0.0, 0.3]), max_tokens=rng.choice([None, 64, 512]))
        assert b._body(r, mode) == plain_body(b, r, mode), (mode, schema)
    if mode != "json":  # a layout per schema model and settings, reused across option orders
        assert 0 < len(b._bodies) <= len(SCHEMAS) * 2 * 3 * 2


def test_two_option_lists_with_the_same_values_take_the_first_matching_order():
    import pydantic
    from typing import Literal

    model = pydantic.create_model("Twice", a=(Literal["x", "y", "z"], ...), b=(Literal["x", "y", "z"], ...))
    b = backend()
    for order in itertools.permutations("xyz"):
        r = request(ordered(model, order))
        assert b._body(r, "json_schema") == plain_body(b, r, "json_schema")
        assert json.loads(b._body(r, "json_schema"))["response_format"]["json_schema"]["schema"]["properties"]["b"][
            "enum"] == list(order)


def test_a_reask_conversation_and_odd_messages_encode_alike():
    b = backend()
    schema = label_schema(("yes", "no"))
    messages = ({"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                {"role": "assistant", "content": "not json"}, {"role": "user", "content": "again"},
                {"role": "user", "content": "x", "name": "extra"}, {"role": "user", "content": None})
    r = JudgeRequest(messages=messages, schema=schema)
    assert b._body(r, "json_schema") == plain_body(b, r, "json_schema")


def test_extra_body_keeps_the_plain_encoding():
    b = backend(extra_body={"temperature": 1.0, "top_p": 0.5})
    r = request(label_schema(("no", "yes")))
    assert b._body(r, "json_schema") == plain_body(b, r, "json_schema") and not b._bodies


def test_a_lone_surrogate_fails_as_json_dumps_does():
    b = backend()
    r = request(label_schema(("no", "yes")), texts=("s", "bad \ud800 text"))
    with pytest.raises(UnicodeEncodeError):
        plain_body(b, r, "json_schema")
    with pytest.raises(UnicodeEncodeError):
        b._body(r, "json_schema")


def test_body_layout_has_one_slot_for_the_messages():
    b = backend()
    layout = Body(b, request(failure_schema(tuple(sorted(BEHAVIOURS)), tuple(sorted(FAILURE_WEIGHTS)))),
                  "json_schema")
    assert [p for p in layout.pieces if isinstance(p, str)].count("m") == 1 and len(layout.enums) == 2


def per_part_digest(parts) -> str:
    """content_digest as it was: one update per part and per separator."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x1e")
    return h.hexdigest()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF)), max_size=8))
def test_the_content_digest_is_the_per_part_digest(parts):
    assert content_digest(parts) == per_part_digest(parts)
    assert content_digest(iter(parts)) == per_part_digest(parts)


def test_the_content_digest_keeps_lone_surrogates_apart():
    parts = ["a\ud83d", "\ude00b", "\x1e", ""]
    assert content_digest(parts) == per_part_digest(parts)
    assert content_digest(["\ud83d\ude00"]) != content_digest(["😀"]) == per_part_digest(["😀"])


def regex_plain(text: str) -> bool:
    return text.isascii() and ("&" not in text or not _ENTITY.search(text)) and not _CONTROL.search(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x100)))
def test_the_fence_plain_check_is_the_regex_check(text):
    assert _plain(text) == regex_plain(text)


@pytest.mark.parametrize("code", range(256))
def test_the_fence_plain_check_on_every_single_character(code):
    text = f"ok {chr(code)} ok"
    assert _plain(text) == regex_plain(text)


class Named:
    def __init__(self, name: str) -> None:
        self.model, self.name, self.seen = "m", name, 0

    async def call(self, request):
        self.seen += 1
        return Verdict(parsed=None, raw=self.name, model="m")


def test_a_layer_calls_the_inner_judge_it_is_given_later():
    first, second = Named("first"), Named("second")
    layer = Wrapper(first)
    assert asyncio.run(layer.call(None)).raw == "first"
    layer.inner = second  # as assay collect does to ask a judge's backend as an agent
    assert asyncio.run(layer.call(None)).raw == "second" and (first.seen, second.seen) == (1, 1)
    assert layer.inner is second


def test_a_model_name_that_looks_like_a_placeholder_falls_back_to_the_plain_encoding():
    b = OpenAICompatible("\x00slotm\x00", base_url="http://127.0.0.1:9/v1")
    r = request(label_schema(("no", "yes")))
    assert b._body(r, "json_schema") == plain_body(b, r, "json_schema")
    assert next(iter(b._bodies.values())).pieces is None


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_an_ordered_schema_s_text_is_json_dumps_of_its_reordered_schema(data):
    """The cache key's share of the schema is made from the base's text cut at its option lists: the same
    bytes ``json.dumps`` writes of the reordered schema, for pydantic models and shapes, one list or two,
    orders of every list, of some or of none (the cache keys are unchanged)."""
    from assay.metrics.eval_lib import OUTCOME_WEIGHTS, outcome_schema

    labels = sorted(FAILURE_WEIGHTS)
    odd = ["Ünïcode ✓", 'a "quoted" one', "plain", "tab\there"]
    schema = data.draw(st.sampled_from([
        failure_schema(tuple(data.draw(st.permutations(BEHAVIOURS))), tuple(data.draw(st.permutations(labels)))),
        failure_schema(tuple(BEHAVIOURS), tuple(labels)),
        outcome_schema(tuple(data.draw(st.permutations(sorted(OUTCOME_WEIGHTS))))),
        label_schema(tuple(data.draw(st.permutations(odd)))),
        label_schema(tuple(data.draw(st.permutations(["yes", "no"]))), compact=True),
        scale_schema(1, 5),
        ordered(label_schema(tuple(odd)), tuple(data.draw(st.permutations(odd[:2])))),  # an order matching no list
    ]))
    assert schema.text == json.dumps(schema.json, sort_keys=True, separators=(",", ":"))


_strings = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40) | st.sampled_from(TEXTS)
_floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, -0.0, 0.2, 1.0, 1e-05, 1e16, 1e-4])


@settings(max_examples=400, deadline=None)
@given(model=_strings, contents=st.lists(st.tuples(st.sampled_from(["system", "user", "assistant"]), _strings),
                                         min_size=1, max_size=4),
       content_key=st.sampled_from(["", "ab12"]), temperature=_floats | st.integers(0, 2),
       max_tokens=st.none() | st.integers(1, 10**6), repeat=st.integers(0, 9),
       endpoint=st.none() | st.dictionaries(_strings, _strings, max_size=3)
       | st.fixed_dictionaries({"backend": st.just("x"), "odd": st.sampled_from([1.5, 3, None, ("a",), b"\x00"])}))
def test_a_cache_key_is_the_sha256_of_the_json_it_always_was(model, contents, content_key, temperature, max_tokens,
                                                            repeat, endpoint):
    """Keys made by msgspec where the values are plain are the bytes ``json.dumps`` wrote for every key so far
    (a user's cache stays valid); other values (odd floats, non-string identities) go through json itself."""
    from assay.judge._cache import cache_key

    messages = tuple({"role": role, "content": text} for role, text in contents)
    request = JudgeRequest(messages=messages, schema=label_schema(("yes", "no")), key="m@1", repeat=repeat,
                           temperature=temperature, max_tokens=max_tokens, content_key=content_key)
    material = {"model": model, "messages": content_key or list(messages), "schema": request.schema.digest,
                "temperature": temperature, "max_tokens": max_tokens, "key": "m@1", "repeat": repeat,
                "endpoint": dict(endpoint) if endpoint else None}
    old = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    assert cache_key(model, request, endpoint) == hashlib.sha256(old.encode("utf-8")).hexdigest()
