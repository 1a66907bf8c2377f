"""From model strings and objects to judges: the resolution table, environment and errors."""

from __future__ import annotations

import asyncio

import pytest
from judge_helpers import GOOD, backend_of, request

from assay.errors import ConfigError
from assay.judge import (AnthropicJudge, CallableJudge, Cached, ClientJudge, DryRun, Judge, JudgeRequest,
                         LangChainJudge, OpenAICompatible, Verdict, make_judge, parse_spec)
from tests.support.judge_server import obj

KEYS = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "ak-test", "GOOGLE_API_KEY": "g-test",
        "GROQ_API_KEY": "gq", "TOGETHER_API_KEY": "tg", "OPENROUTER_API_KEY": "or"}

TABLE = [
    # spec, backend class, provider, model name, base_url (None = SDK default), local
    ("gpt-4o", OpenAICompatible, "openai", "gpt-4o", None, False),
    ("openai:gpt-4o-mini", OpenAICompatible, "openai", "gpt-4o-mini", None, False),
    ("o3-mini", OpenAICompatible, "openai", "o3-mini", None, False),
    ("anthropic:claude-3-5-sonnet-latest", AnthropicJudge, "anthropic", "claude-3-5-sonnet-latest", None, False),
    ("claude-3-7-sonnet-latest", AnthropicJudge, "anthropic", "claude-3-7-sonnet-latest", None, False),
    ("google:gemini-2.0-flash", OpenAICompatible, "google", "gemini-2.0-flash",
     "https://generativelanguage.googleapis.com/v1beta/openai/", False),
    ("gemini:gemini-2.5-pro", OpenAICompatible, "google", "gemini-2.5-pro",
     "https://generativelanguage.googleapis.com/v1beta/openai/", False),
    ("gemini-2.0-flash", OpenAICompatible, "google", "gemini-2.0-flash",
     "https://generativelanguage.googleapis.com/v1beta/openai/", False),
    ("ollama:llama3", OpenAICompatible, "ollama", "llama3", "http://localhost:11434/v1", True),
    ("ollama:llama3.1:8b", OpenAICompatible, "ollama", "llama3.1:8b", "http://localhost:11434/v1", True),
    ("vllm:meta-llama/Llama-3.1-8B-Instruct", OpenAICompatible, "vllm", "meta-llama/Llama-3.1-8B-Instruct",
     "http://localhost:8000/v1", True),
    ("llama.cpp:qwen2.5", OpenAICompatible, "llamacpp", "qwen2.5", "http://localhost:8080/v1", True),
    ("lmstudio:phi-4", OpenAICompatible, "lmstudio", "phi-4", "http://localhost:1234/v1", True),
    ("groq:llama-3.3-70b-versatile", OpenAICompatible, "groq", "llama-3.3-70b-versatile",
     "https://api.groq.com/openai/v1", False),
    ("together:meta-llama/Llama-3-70b", OpenAICompatible, "together", "meta-llama/Llama-3-70b",
     "https://api.together.xyz/v1", False),
    ("openrouter:openai/gpt-4o", OpenAICompatible, "openrouter", "openai/gpt-4o", "https://openrouter.ai/api/v1", False),
    ("litellm:gpt-4o", OpenAICompatible, "litellm", "gpt-4o", "http://localhost:4000", True),
    ("openai-compatible:my-model@http://10.0.0.5:8000/v1", OpenAICompatible, "openai-compatible", "my-model",
     "http://10.0.0.5:8000/v1", False),
    ("openai-compatible:qwen@http://127.0.0.1:9000/v1", OpenAICompatible, "openai-compatible", "qwen",
     "http://127.0.0.1:9000/v1", True),
]


@pytest.mark.parametrize("spec,cls,provider,name,base_url,local", TABLE, ids=[row[0] for row in TABLE])
def test_model_string_resolution(monkeypatch, spec, cls, provider, name, base_url, local):
    for key, value in KEYS.items():
        monkeypatch.setenv(key, value)
    judge = make_judge(spec, cache=False)
    backend = backend_of(judge)
    assert isinstance(backend, cls)
    assert (backend.backend, backend.name, backend.model) == (provider, name, f"{provider}:{name}")
    assert judge.model == backend.model
    assert getattr(backend, "base_url", None) == base_url
    if local:
        assert backend.price is not None and backend.price.input == backend.price.output == 0
    elif name in ("gpt-4o", "gpt-4o-mini", "o3-mini", "claude-3-5-sonnet-latest", "gemini-2.0-flash"):
        assert backend.price is not None and backend.price.input > 0


@pytest.mark.parametrize("spec", ["foo:bar", "opneai:gpt-4o"], ids=["unknown", "typo"])
def test_unknown_provider_lists_choices(spec):
    with pytest.raises(ConfigError) as info:
        make_judge(spec)
    message = str(info.value)
    assert "unknown judge provider" in message and "anthropic" in message and "ollama" in message
    if spec.startswith("opneai"):
        assert "Did you mean 'openai'" in message


def test_missing_key_names_the_variable():
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_judge("openai:gpt-4o")
    with pytest.raises(ConfigError, match="GOOGLE_API_KEY or GEMINI_API_KEY"):
        make_judge("google:gemini-2.0-flash")


def test_gemini_key_is_accepted(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "x")
    assert make_judge("google:gemini-2.0-flash", cache=False).model == "google:gemini-2.0-flash"


def test_compatible_without_url_says_how():
    with pytest.raises(ConfigError, match="ASSAY_JUDGE_BASE_URL"):
        make_judge("openai-compatible:m")


def test_no_spec_reads_assay_judge(monkeypatch):
    with pytest.raises(ConfigError, match="ASSAY_JUDGE"):
        make_judge()
    monkeypatch.setenv("ASSAY_JUDGE", "ollama:llama3")
    assert make_judge(cache=False).model == "ollama:llama3"


def test_env_base_url_applies_to_bare_names(monkeypatch, judge_server):
    monkeypatch.setenv("ASSAY_JUDGE", "my-local-model")
    monkeypatch.setenv("ASSAY_JUDGE_BASE_URL", judge_server.url)
    judge_server.default = obj(GOOD)
    from assay.judge import judge_from_env
    judge = judge_from_env(cache=False)
    assert judge.model == "openai-compatible:my-local-model"
    verdict = asyncio.run(judge.judge(request()))
    assert verdict.error is None and judge_server.requests[0].json["model"] == "my-local-model"


def test_base_url_option(judge_server):
    judge_server.default = obj(GOOD)
    judge = make_judge("served-model", base_url=judge_server.url, cache=False)
    assert asyncio.run(judge.judge(request())).error is None


def test_ollama_host_env(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11434")
    backend = backend_of(make_judge("ollama:llama3", cache=False))
    assert backend.base_url == "http://gpu-box:11434/v1"


def test_environment_is_read_only_when_asked(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "first")
    judge = make_judge("openai:gpt-4o", cache=False)
    monkeypatch.setenv("OPENAI_API_KEY", "second")
    assert backend_of(judge)._api_key == "first"


def test_default_stack_has_cache_outermost(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    judge = make_judge("gpt-4o-mini", cache=tmp_path / "j.sqlite3")
    assert isinstance(judge, Cached) and judge.cache.path == tmp_path / "j.sqlite3"
    assert repr(judge).startswith("Cached(Reasking(Retrying(Limited(Tripping(Metered(OpenAICompatible(")


def test_bad_options_are_config_errors(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with pytest.raises(ConfigError, match="structured-output mode"):
        make_judge("gpt-4o", structured="xml")
    with pytest.raises(ConfigError, match="judge backend openai:gpt-4o does not take option 'no_such_option'"):
        make_judge("gpt-4o", no_such_option=1)


class Existing:
    model = "mine"

    async def judge(self, request: JudgeRequest) -> Verdict:
        return Verdict(parsed=None, raw="", model=self.model, error="never")


def test_existing_judge_passes_through():
    judge = Existing()
    assert isinstance(judge, Judge) and make_judge(judge) is judge
    with pytest.raises(ConfigError, match="cannot apply"):
        make_judge(judge, concurrency=2)


def test_objects_become_backends():
    class Client:
        async def chat_complete(self, messages, temperature):
            return "{}", 0.0

        def get_model_name(self):
            return "c"

    class Chat:
        async def ainvoke(self, messages):
            return "{}"

    async def fn(messages):
        return "{}"

    assert isinstance(backend_of(make_judge(Client(), cache=False)), ClientJudge)
    assert isinstance(backend_of(make_judge(Chat(), cache=False)), LangChainJudge)
    assert isinstance(backend_of(make_judge(fn, cache=False)), CallableJudge)
    assert isinstance(make_judge(fn, dry_run=True, cache=False), DryRun)
    with pytest.raises(ConfigError, match="cannot make a judge"):
        make_judge(42)


def test_parse_spec_keeps_ollama_tags_and_urls():
    assert parse_spec("ollama:qwen2.5:7b").model == "qwen2.5:7b"
    assert parse_spec("llama3:8b").provider == "openai"  # a bare name with a tag: no provider prefix
    spec = parse_spec("openai-compatible:m@https://host/v1")
    assert (spec.model, spec.base_url) == ("m", "https://host/v1")


@pytest.mark.parametrize("spec,modules,extra", [
    # The chat-completions backend speaks HTTP through the client the openai extra brings.
    ("openai:gpt-4o", ("httpx2", "httpx"), "openai"), ("anthropic:claude-3-5-haiku-latest", ("anthropic",), "anthropic"),
], ids=["openai", "anthropic"])
def test_missing_sdk_names_the_pip_command(monkeypatch, spec, modules, extra):
    for module in modules:
        monkeypatch.setitem(__import__("sys").modules, module, None)  # makes `import module` fail
    with pytest.raises(ConfigError, match=rf"pip install 'assay\[{extra}\]'"):
        make_judge(spec, api_key="k")
    assert make_judge(spec, dry_run=True, cache=False).model == spec  # a dry run needs no SDK
