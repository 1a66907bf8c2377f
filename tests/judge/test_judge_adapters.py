"""Adapters for user objects, and the Anthropic backend against the scripted /v1/messages."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from judge_helpers import GOOD, Score, request

from assay.errors import ProviderError
from assay.judge import AnthropicJudge, lookup_price, make_judge
from tests.support.judge_server import obj, status, text


def run_one(judge, *args, **kw):
    return asyncio.run(judge.judge(request(*args, **kw)))


class EvalLibClient:
    """eval_lib's CustomLLMClient contract."""

    def __init__(self, replies):
        self.replies, self.calls = list(replies), []

    async def chat_complete(self, messages, temperature):
        self.calls.append((messages, temperature))
        return self.replies.pop(0), 0.0042

    def get_model_name(self):
        return "my-llm"


def test_custom_client_contract():
    client = EvalLibClient(['Result: ```json\n{"score": 0.5, "reason": "x"}\n```'])
    judge = make_judge(client, cache=False)
    verdict = run_one(judge, temperature=0.2)
    assert verdict.parsed == Score(score=0.5, reason="x") and verdict.cost_usd == 0.0042
    assert verdict.model == judge.model == "custom:my-llm"
    messages, temperature = client.calls[0]
    assert temperature == 0.2 and messages[0]["role"] == "system" and "JSON schema" in messages[-1]["content"]
    assert judge.stats.cost_usd == pytest.approx(0.0042)


def test_custom_client_reask_and_errors():
    client = EvalLibClient(["not json", json.dumps(GOOD)])
    judge = make_judge(client, cache=False)
    assert run_one(judge).parsed == Score(**GOOD) and len(client.calls) == 2

    class Broken(EvalLibClient):
        async def chat_complete(self, messages, temperature):
            raise ValueError("client bug")
    verdict = run_one(make_judge(Broken([]), cache=False))
    assert verdict.error is not None and "client bug" in verdict.error


def test_plain_async_callable():
    seen = []

    async def judge_fn(messages):
        seen.append(messages)
        return json.dumps(GOOD)
    judge = make_judge(judge_fn, cache=False)
    verdict = run_one(judge)
    assert verdict.parsed == Score(**GOOD) and judge.model == "callable:judge_fn" and verdict.cost_usd is None
    assert seen[0][1]["content"].startswith("question 0")


def test_sync_callable_and_timeouts():
    judge = make_judge(lambda messages: GOOD, cache=False)
    assert run_one(judge).parsed == Score(**GOOD)

    async def slow(messages):
        await asyncio.sleep(5)
    verdict = run_one(make_judge(slow, cache=False, timeout=0.05, retries=1, base_delay=0.01))
    assert "no reply within 0.05 s" in verdict.error and verdict.attempts == 2


class FakeMessage:
    def __init__(self, content, usage=None):
        self.content, self.usage_metadata = content, usage


class FakeChatModel:
    """Duck-typed LangChain BaseChatModel: ainvoke + with_structured_output(include_raw=True)."""

    model_name = "fake-chat"

    def __init__(self, structured=True):
        self.calls = []
        if not structured:
            self.with_structured_output = None

    async def ainvoke(self, messages):
        self.calls.append(messages)
        return FakeMessage('{"score": 0.25, "reason": "plain"}', {"input_tokens": 11, "output_tokens": 7})

    def with_structured_output(self, schema, include_raw=False):
        model = self

        class Runnable:
            async def ainvoke(self, messages):
                model.calls.append(messages)
                parsed = schema(score=0.9, reason="structured")
                raw = FakeMessage("", {"input_tokens": 20, "output_tokens": 5})
                return {"raw": raw, "parsed": parsed, "parsing_error": None} if include_raw else parsed
        return Runnable()


def test_langchain_structured_output():
    chat = FakeChatModel()
    judge = make_judge(chat, cache=False)
    verdict = run_one(judge)
    assert verdict.parsed == Score(score=0.9, reason="structured")
    assert (verdict.input_tokens, verdict.output_tokens) == (20, 5) and judge.model == "langchain:fake-chat"
    assert chat.calls[0] == [dict(m) for m in request().messages]  # no JSON instruction needed


def test_langchain_without_structured_output_parses_text():
    chat = FakeChatModel(structured=False)
    verdict = run_one(make_judge(chat, cache=False))
    assert verdict.parsed == Score(score=0.25, reason="plain") and verdict.input_tokens == 11
    assert "JSON schema" in chat.calls[0][-1]["content"]


def test_langchain_is_not_imported():
    """Checked in a fresh interpreter: in this one an earlier test may have imported langchain
    (ragas does, when the extra is installed), which says nothing about make_judge."""
    import subprocess

    code = ("import sys\n"
            "from assay.judge import make_judge\n"
            "class Chat:\n"
            "    model_name = 'fake-chat'\n"
            "    async def ainvoke(self, messages): return None\n"
            "    def with_structured_output(self, schema, include_raw=False): return self\n"
            "make_judge(Chat(), cache=False)\n"
            "print(sorted(m for m in sys.modules if m.startswith('langchain')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr
    before = {m for m in sys.modules if m.startswith("langchain")}
    make_judge(FakeChatModel(), cache=False)
    assert {m for m in sys.modules if m.startswith("langchain")} == before


def test_langchain_check_holds_after_langchain_was_imported(monkeypatch):
    """What used to fail by test order: langchain already loaded by someone else (ragas, when installed)."""
    import types

    monkeypatch.setitem(sys.modules, "langchain_core", types.ModuleType("langchain_core"))
    test_langchain_is_not_imported()


def anthropic_judge(server, **kw):
    backend = AnthropicJudge("claude-3-5-haiku-latest", api_key="test", base_url=server.base, timeout=2.0,
                             price=lookup_price("claude-3-5-haiku-latest"), **kw)
    return make_judge(backend, cache=False, base_delay=0.01)


def test_anthropic_tool_use_against_scripted_messages(judge_server):
    judge_server.push(obj(GOOD, usage=(1000, 100)))
    judge = anthropic_judge(judge_server)
    verdict = run_one(judge)
    assert verdict.parsed == Score(**GOOD)
    assert verdict.cost_usd == pytest.approx((1000 * 0.80 + 100 * 4.00) / 1e6)
    sent = judge_server.requests[0]
    assert sent.path == "/v1/messages"
    assert "test" in (sent.headers.get("x-api-key", ""), sent.headers.get("Authorization", "").removeprefix("Bearer "))
    body = sent.json
    assert body["system"] == "Score the answer." and [m["role"] for m in body["messages"]] == ["user"]
    assert body["tool_choice"] == {"type": "tool", "name": "submit_verdict"}
    assert body["tools"][0]["input_schema"]["required"] == ["score", "reason"]
    assert body["max_tokens"] == 1024


def test_anthropic_json_mode_retries_and_auth(judge_server):
    judge_server.push(status(529, "overloaded"), text('{"score": 1, "reason": "t"}'))
    judge = anthropic_judge(judge_server, structured="json")
    assert run_one(judge).parsed == Score(score=1, reason="t")
    assert "tools" not in judge_server.requests[-1].json

    judge_server.push(status(401, "invalid x-api-key"))
    with pytest.raises(ProviderError) as info:
        run_one(anthropic_judge(judge_server))
    assert info.value.backend == "anthropic" and info.value.status == 401
