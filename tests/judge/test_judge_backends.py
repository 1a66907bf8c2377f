"""Judge backends by prefix: register_backend, the assay.judges entry point, clashes."""

from __future__ import annotations

import asyncio

import pytest
from judge_helpers import backend_of, request

from assay.errors import ConfigError
from assay.judge import Backend, CallableJudge, OpenAICompatible, backends, make_judge, parse_spec, register_backend
from assay.judge import _factory
from tests.support.judge_server import obj


@pytest.fixture(autouse=True)
def fresh_backends(monkeypatch):
    """Each test starts from the built-ins (registrations are process-wide)."""
    monkeypatch.setattr(_factory, "_BACKENDS", _factory._Backends())


def test_registered_prefix_builds_through_the_factory_and_the_default_stack():
    seen = {}

    def factory(model, **options):
        seen.update(model=model, options=options)
        return lambda messages: '{"score": 1, "reason": "fine"}'

    register_backend("myprovider", factory)
    judge = make_judge("myprovider:big-model", cache=False, timeout=5.0, base_url="http://127.0.0.1:1/v1")
    assert seen == {"model": "big-model", "options": {"timeout": 5.0, "base_url": "http://127.0.0.1:1/v1"}}
    backend = backend_of(judge)
    assert isinstance(backend, CallableJudge)
    assert backends()["myprovider"] == "registered"
    assert parse_spec("MyProvider:x").provider == "myprovider"


def test_registered_backend_answers_real_requests(judge_server):
    def factory(model, **options):
        return OpenAICompatible(model, base_url=judge_server.url, api_key="k", provider="myprovider", **options)

    register_backend("myprovider", factory, local=True)
    judge_server.push(obj({"score": 0.75, "reason": "ok"}))
    judge = make_judge("myprovider:m", cache=False)
    verdict = asyncio.run(judge.judge(request()))
    assert verdict.error is None and verdict.parsed.score == 0.75
    assert judge_server.requests[0].json["model"] == "m"
    assert make_judge("myprovider:m", dry_run=True).inner.price.input == 0  # local: free in a dry run


def test_a_clash_with_a_builtin_or_an_earlier_registration_is_an_error_unless_replace():
    with pytest.raises(ConfigError, match="'openai' from registered clashes with the one from built-in"):
        register_backend("openai", lambda model, **o: None)
    with pytest.raises(ConfigError, match="'gemini' .*built-in"):  # an alias is claimed too
        register_backend("gemini", lambda model, **o: None)
    register_backend("mine", lambda model, **o: (lambda m: "a"))
    with pytest.raises(ConfigError, match="'mine' from registered clashes with the one from registered"):
        register_backend("mine", lambda model, **o: (lambda m: "b"))
    calls = []
    register_backend("openai", lambda model, **o: calls.append(model) or (lambda m: "x"), replace=True)
    make_judge("openai:gpt-4o", cache=False)
    assert calls == ["gpt-4o"]


def test_bad_registrations_and_unknown_prefixes_say_what_exists():
    with pytest.raises(ConfigError, match="expected a name"):
        register_backend("my provider", lambda model, **o: None)
    with pytest.raises(ConfigError, match="not callable"):
        register_backend("myp", "not a factory")  # type: ignore[arg-type]
    register_backend("myprovider", lambda model, **o: (lambda m: "a"))
    with pytest.raises(ConfigError, match="unknown judge provider 'myprovidr'.*Did you mean 'myprovider'"):
        make_judge("myprovidr:m")


def test_a_factory_returning_a_backend_is_used_as_is():
    class Mine(Backend):
        backend = "mine"

        async def _complete(self, req):  # pragma: no cover - never called here
            raise AssertionError

    register_backend("mine", lambda model, **o: Mine(model))
    assert isinstance(backend_of(make_judge("mine:x", cache=False)), Mine)


def test_an_installed_plugin_s_entry_point_is_found_by_prefix(installed_plugin, judge_server, monkeypatch):
    monkeypatch.setenv("DUMMY_JUDGE_URL", judge_server.url)
    assert backends()["dummy"] == "plugin assay-dummy-plugin"
    judge_server.push(obj({"score": 0.5, "reason": "ok"}))
    verdict = asyncio.run(make_judge("dummy:tiny", cache=False).judge(request()))
    assert verdict.error is None and verdict.parsed.score == 0.5 and verdict.model == "dummy:tiny"
    with pytest.raises(ConfigError, match="'dummy' from registered clashes with the one from plugin assay-dummy-plugin"):
        register_backend("dummy", lambda model, **o: None)
