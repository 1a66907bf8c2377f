"""A judge is the model it was given, not the function that calls it: plugin and callable judges
never answer from another model's cached verdicts (a real SQLite cache)."""

from __future__ import annotations

import asyncio
import json

import pytest
from judge_helpers import request

from assay.judge import _factory, make_judge, register_backend


@pytest.fixture(autouse=True)
def fresh_backends(monkeypatch):
    monkeypatch.setattr(_factory, "_BACKENDS", _factory._Backends())


def verdict_of(judge):
    return asyncio.run(judge.judge(request()))


def test_a_plugin_judge_for_another_model_does_not_reuse_the_cached_verdicts(tmp_path):
    calls: list[str] = []

    def factory(model, **options):
        def judge(messages):  # one function for every model: only the model it closes over differs
            calls.append(model)
            return json.dumps({"score": 0.25 if model == "m1" else 1.0, "reason": model})
        return judge

    register_backend("plug", factory)
    cache = tmp_path / "judge.sqlite3"
    first = verdict_of(make_judge("plug:m1", cache=cache))
    again = verdict_of(make_judge("plug:m1", cache=cache))
    second = verdict_of(make_judge("plug:m2", cache=cache))
    assert first.parsed.score == 0.25 and again.cached and again.parsed.score == 0.25
    assert second.cached is False and second.parsed.score == 1.0 and second.parsed.reason == "m2"
    assert calls == ["m1", "m2"]
    assert make_judge("plug:m2", cache=False).model == "plug:m2"  # run records and cards name the model


def test_two_different_functions_named_judge_never_share_verdicts(tmp_path):
    spaces = []
    for score in (0.25, 1.0):  # same module, same name and qualified name, different code
        space = {"__name__": "user_judges"}
        exec(f"def judge(messages):\n    return '{{\"score\": {score}, \"reason\": \"r{score}\"}}'\n", space)
        spaces.append(space["judge"])
    a, b = spaces
    assert (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)
    cache = tmp_path / "judge.sqlite3"
    assert verdict_of(make_judge(a, cache=cache)).parsed.score == 0.25
    from_b = verdict_of(make_judge(b, cache=cache))
    assert from_b.cached is False and from_b.parsed.score == 1.0
    assert verdict_of(make_judge(a, cache=cache)).cached  # the same function still hits its own verdicts


def test_closures_given_different_models_are_different_judges(tmp_path):
    def judge_for(model):
        def judge(messages):
            return json.dumps({"score": 0.25 if model == "small" else 1.0, "reason": model})
        return judge

    cache = tmp_path / "judge.sqlite3"
    assert verdict_of(make_judge(judge_for("small"), cache=cache)).parsed.score == 0.25
    big = verdict_of(make_judge(judge_for("big"), cache=cache))
    assert big.cached is False and big.parsed.reason == "big"
    assert verdict_of(make_judge(judge_for("small"), cache=cache)).cached  # a new closure, the same model
