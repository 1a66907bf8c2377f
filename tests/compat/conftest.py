"""Fixtures for the compat tests: a judge environment that sends bare model strings ("gpt-4o") to the scripted server."""

from __future__ import annotations

import pytest

from tests.support.judge_server import JudgeServer


@pytest.fixture()
def openai_env(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:  # noqa: F811
    """Bare model strings such as "gpt-4o" (the seeds' spelling) reach the scripted server."""
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return judge_server


@pytest.fixture()
def chat_url(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:  # noqa: F811
    """The fake LangChain models of tests/compat/fakes.py post to the scripted server."""
    monkeypatch.setenv("ASSAY_TEST_CHAT_URL", judge_server.url)
    return judge_server




def schema_name(request: dict) -> str:
    """The verdict schema a request asks for (OpenAI json_schema response format)."""
    fmt = request.get("response_format") or {}
    return fmt.get("json_schema", {}).get("name", "")
