"""Answers read as probabilities: token log-probabilities asked for (``logprobs``), carried on the
Verdict, cached with it, and P(yes) of each yes/no (and label) field found in the reply's JSON."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Literal

import pydantic
import pytest

from assay.errors import ConfigError
from assay.judge import JudgeOptions, JudgeRequest, TokenLogprob, Verdict, answer_probs, make_judge
from assay.judge._cache import JudgeCache, cache_key, endpoint_of
from assay.judge._probs import field_probs
from tests.support.judge_server import scored

ln = math.log


def approx(expected):
    return pytest.approx(expected, abs=1e-6)  # probabilities are rounded to 6 places


class Sheet(pydantic.BaseModel):
    answers: bool
    admits: bool
    points: bool
    evasive: bool


class Level(pydantic.BaseModel):
    reason: str
    verdict: Literal["fully", "mostly", "partial", "minor", "none"]


def tokens(*pieces) -> tuple[TokenLogprob, ...]:
    out = []
    for piece in pieces:
        token, logprob, top = (piece, 0.0, {}) if isinstance(piece, str) else (*piece, {})[:3]
        out.append(TokenLogprob(token, logprob, tuple({token: logprob, **top}.items())))
    return tuple(out)


def verdict_of(schema, toks) -> Verdict:
    raw = "".join(t.token for t in toks)
    return Verdict(parsed=schema.model_validate_json(raw[raw.index("{"):]), raw=raw, model="m", tokens=toks)


def test_p_yes_is_the_true_mass_normalised_over_true_and_false():
    v = verdict_of(Sheet, tokens('{"answers":', ("true", ln(0.6), {"false": ln(0.3), "[": ln(0.1)}),
                                 ',"admits":', ("false", ln(0.8), {"true": ln(0.1)}),
                                 ',"points":', ("false", ln(0.5), {"tr": ln(0.25), "t": ln(0.25)}),
                                 ',"evasive":false}'))
    p = answer_probs(v, Sheet)
    assert p["answers"] == approx(0.6 / 0.9)          # "[" is no allowed value: left out
    assert p["admits"] == approx(0.1 / 0.9)
    assert p["points"] == approx(0.5)                  # "tr" and "t" both start true
    assert p["evasive"] == 0.0                                # no alternative listed: the greedy answer


def test_an_answer_split_across_tokens_follows_the_greedy_path_until_it_is_decided():
    # "f" + "alse" chosen; at "f" the model also gave "t" and "tru"; "alse" is certain once "f" is out
    v = verdict_of(Sheet, tokens('{"answers":true,"admits":', ("f", ln(0.55), {"t": ln(0.3), "tru": ln(0.1)}),
                                 ("alse", ln(0.9), {"ake": ln(0.1)}), ',"points":false,"evasive":false}'))
    assert answer_probs(v, Sheet)["admits"] == approx(0.4 / 0.95)


def test_a_token_that_carries_the_key_separator_with_the_value():
    # llama.cpp's tokenizer often fuses ':' and the value: the alternatives carry the same lead
    v = verdict_of(Sheet, tokens('{"answers', ('":true', ln(0.7), {'":false': ln(0.2), '":"': ln(0.1)}),
                                 ',"admits":false,"points":false,"evasive":false}'))
    assert answer_probs(v, Sheet)["answers"] == approx(0.7 / 0.9)


def test_an_answer_inside_a_longer_reply_and_text_around_the_object():
    raw_before = 'Here is my verdict: '
    toks = tokens(raw_before, '{"reason":"the user says {thanks}, \\"done\\"","verdict":"',
                  ("most", ln(0.5), {"min": ln(0.2), "m": ln(0.2), "none": ln(0.1)}), 'ly"}')
    v = Verdict(parsed=Level(reason='the user says {thanks}, "done"', verdict="mostly"),
                raw="".join(t.token for t in toks), model="m", tokens=toks)
    p = answer_probs(v, Level)["verdict"]
    # "m" starts both mostly and minor: shared equally
    assert p == approx({"fully": 0.0, "mostly": 0.6, "partial": 0.0, "minor": 0.3, "none": 0.1})
    assert sum(p.values()) == approx(1.0)


def test_no_probabilities_without_tokens_or_when_they_do_not_spell_the_reply():
    plain = Verdict(parsed=Sheet(answers=True, admits=False, points=False, evasive=False),
                    raw='{"answers":true,"admits":false,"points":false,"evasive":false}', model="m")
    assert answer_probs(plain, Sheet) == {}
    assert field_probs('{"answers":true}', tokens('{"answers":', "false}"), {"answers": (True, False)}) == {}


def test_the_option_is_typed_and_checked():
    assert JudgeOptions(logprobs=True).backend() == {"logprobs": True}
    with pytest.raises(ConfigError, match="logprobs.*1-20"):
        make_judge("openai-compatible:x@http://127.0.0.1:9/v1", logprobs=50, cache=False)
    with pytest.raises(ConfigError, match="Anthropic's messages API returns no token log-probabilities"):
        make_judge("anthropic:claude-3-5-haiku-latest", api_key="k", logprobs=True, cache=False)
    with pytest.raises(ConfigError, match="does not take option 'logprobs'"):
        make_judge(lambda messages: "{}", logprobs=True, cache=False)


@pytest.mark.parametrize("given, message", [
    ({"failure_rate.admits": 1.5}, "between 0 and 1"), ({"admits": 0.3}, "METRIC.QUESTION"),
    (["failure_rate.admits"], "METRIC.QUESTION=P"), ({"failure_rate.admits": "x"}, "between 0 and 1")])
def test_thresholds_are_checked(given, message):
    with pytest.raises(ConfigError, match=message):
        JudgeOptions(thresholds=given)


def test_thresholds_from_the_cli_form_and_from_a_table():
    assert JudgeOptions(thresholds=["goal_achievement_rate.satisfied=0.4", "failure_rate.admits = 0.35"]).thresholds \
        == {"failure_rate.admits": 0.35, "goal_achievement_rate.satisfied": 0.4}
    assert JudgeOptions(thresholds={}).thresholds is None


@pytest.mark.parametrize("metrics, thresholds, message", [
    (["failure_rate"], {"failure_rate.admitz": 0.3}, "no yes/no question 'admitz'; its questions: answers, admits"),
    (["failure_rate"], {"failure_rate.evasive": 0.3}, "no yes/no question 'evasive'"),  # asked, but it decides nothing
    (["answer_relevance"], {"answer_relevance.score": 0.3}, "no yes/no questions a threshold can decide"),
    (["failure_rate"], {"failure_rate.admits": 0.3, "goal_achievement_rate.satisfied": 0.5}, None),  # goal: not in this run
    (["goal_achievement_rate"], {"goal_achievement_rate.got_essentials": 0.5}, None)])
def test_a_threshold_must_name_a_question_of_its_metric_in_the_run(metrics, thresholds, message):
    """A misspelt question would decide nothing, silently: the run refuses it before any call."""
    from assay import Evaluation

    judge = make_judge("openai-compatible:x@http://127.0.0.1:9/v1", cache=False, thresholds=thresholds)
    if message is None:
        Evaluation(metrics, judge=judge)
    else:
        with pytest.raises(ConfigError, match=message):
            Evaluation(metrics, judge=judge)


def request() -> JudgeRequest:
    return JudgeRequest(messages=({"role": "system", "content": "Judge."}, {"role": "user", "content": "Reply: hi"}),
                        schema=Sheet, key="m@1", max_tokens=40)


def test_without_the_option_requests_and_cache_keys_are_what_they_were(judge_server):
    url = f"openai-compatible:scripted@{judge_server.url}"
    plain = make_judge(url, cache=False)
    asked = make_judge(url, cache=False, logprobs=5)
    for judge in (plain, asked):
        judge_server.push(scored('{"answers":true,"admits":false,"points":false,"evasive":false}'))
        asyncio.run(judge.judge(request()))
    sent_plain, sent_asked = (r.json for r in judge_server.requests)
    assert "logprobs" not in sent_plain and "top_logprobs" not in sent_plain
    assert sent_asked["logprobs"] is True and sent_asked["top_logprobs"] == 5
    # the rest of the request is the same bytes
    rest = {k: v for k, v in sent_asked.items() if k not in ("logprobs", "top_logprobs")}
    assert json.dumps(rest, sort_keys=True) == json.dumps(sent_plain, sort_keys=True)
    # the cache identity gains the option only when it is set
    assert endpoint_of(plain) == {"backend": "openai-compatible", "base_url": judge_server.url.rstrip("/")}
    assert endpoint_of(asked) == {**endpoint_of(plain), "logprobs": 5}
    assert cache_key(plain.model, request(), endpoint_of(plain)) != cache_key(asked.model, request(), endpoint_of(asked))
    # thresholds decide after the cache: a judge with them reads the same verdicts
    decided = make_judge(url, cache=False, logprobs=5, thresholds={"failure_rate.admits": 0.3})
    assert endpoint_of(decided) == endpoint_of(asked) and decided.answer_thresholds == {"failure_rate.admits": 0.3}


def test_tokens_come_back_on_the_verdict_and_through_the_cache(judge_server, tmp_path):
    judge = make_judge(f"openai-compatible:scripted@{judge_server.url}", cache=JudgeCache(tmp_path / "c.sqlite3"),
                       logprobs=True)
    judge_server.push(scored('{"answers":', ("true", ln(0.75), {"false": ln(0.25)}),
                             ',"admits":false,"points":false,"evasive":false}'))
    first = asyncio.run(judge.judge(request()))
    again = asyncio.run(judge.judge(request()))
    assert len(judge_server.requests) == 1 and again.cached
    assert judge_server.requests[0].json["top_logprobs"] == 10  # True: 10 alternatives per token
    assert first.tokens == again.tokens and len(first.tokens) == 3
    assert answer_probs(first, Sheet)["answers"] == answer_probs(again, Sheet)["answers"] == approx(0.75)


def test_a_server_that_ignores_the_option_gives_verdicts_without_tokens(judge_server):
    judge = make_judge(f"openai-compatible:scripted@{judge_server.url}", cache=False, logprobs=True)
    judge_server.push('{"answers":true,"admits":false,"points":false,"evasive":false}')
    v = asyncio.run(judge.judge(request()))
    assert v.error is None and v.tokens is None and answer_probs(v, Sheet) == {}


def test_a_dry_run_keys_its_cache_look_ups_like_the_real_judge():
    url = "openai-compatible:x@http://127.0.0.1:9/v1"
    for options in ({}, {"logprobs": True}):
        real, dry = make_judge(url, cache=False, **options), make_judge(url, cache=False, dry_run=True, **options)
        assert endpoint_of(dry) == endpoint_of(real)
