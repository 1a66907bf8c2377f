"""Each backend owns its options: one it does not take is a ConfigError naming the backend and the option,
decided where the backend is built (never a TypeError from its constructor, never silently dropped)."""

from __future__ import annotations

import pytest

from assay.errors import ConfigError
from assay.judge import _factory, make_judge, register_backend
from tests.support.cli import cli_env, run_pipe


@pytest.fixture(autouse=True)
def fresh_backends(monkeypatch):
    monkeypatch.setattr(_factory, "_BACKENDS", _factory._Backends())


@pytest.mark.parametrize("model, option, says", [
    ("local:/nowhere/judge.gguf", {"max_reply_mb": 1}, "--max-tokens"),
    ("local:/nowhere/judge.gguf", {"api_version": "2024-10-21"}, "it takes:"),
    ("openai-compatible:m@http://127.0.0.1:9/v1", {"bogus": 1}, "it takes:"),
    ("openai-compatible:m@http://127.0.0.1:9/v1", {"threads": 2}, "in-process judge"),
    ("anthropic:claude-x", {"extra_body": {}}, "OpenAI-compatible setting"),
    ("openai-compatible:m@http://127.0.0.1:9/v1", {"concurency": 4}, "(did you mean 'concurrency'?); it takes:"),
    ("openai-compatible:m@http://127.0.0.1:9/v1", {"temprature": 0}, "(did you mean 'temperature'?)"),
], ids=["local-reply-cap", "local-azure-option", "openai-unknown", "openai-threads", "anthropic-extra-body",
        "a-slip-of-a-judge-option", "a-slip-of-a-backend-option"])
def test_an_option_a_backend_does_not_take_is_a_config_error_naming_both(monkeypatch, model, option, says):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    name = next(iter(option))
    with pytest.raises(ConfigError, match=rf"{model.split('@')[0]}.*{name}|{name}.*{model.split('@')[0]}") as err:
        make_judge(model, cache=False, **option)
    assert says in str(err.value)


def test_a_registered_factory_declares_its_options_by_its_signature():
    def fixed(model, *, timeout=None):
        return lambda messages: '{"score": 1, "reason": "fine"}'

    register_backend("fixedprovider", fixed)
    make_judge("fixedprovider:m", cache=False, timeout=3.0)  # taken
    with pytest.raises(ConfigError, match=r"fixedprovider:m does not take option 'seed'; it takes: timeout"):
        make_judge("fixedprovider:m", cache=False, seed=1)


def test_the_cli_refuses_a_reply_cap_for_a_local_judge_with_a_usage_error(tmp_path):
    (tmp_path / "t.jsonl").write_text('{"id": "a", "turns": [{"input": "hi", "output": "hello"}]}\n')
    r = run_pipe(["run", str(tmp_path / "t.jsonl"), "-m", "answer_relevance", "--judge",
                  f"local:{tmp_path / 'judge.gguf'}", "--max-reply-mb", "1", "--no-store"], cli_env(tmp_path))
    assert r.returncode == 2, r.stderr
    assert "local:" in r.stderr and "max_reply_mb" in r.stderr and "internal error" not in r.stderr


@pytest.mark.parametrize("option", [{"max_reply_mb": 1}, {"seed": 1}], ids=["reply-cap", "seed"])
def test_a_function_judge_refuses_what_it_cannot_honour(option):
    with pytest.raises(ConfigError, match=rf"a function judge does not take option '{next(iter(option))}'"):
        make_judge(lambda messages: '{"score": 1, "reason": "ok"}', cache=False, **option)
    make_judge(lambda messages: '{"score": 1, "reason": "ok"}', cache=False, timeout=3.0)  # one it takes
