"""The chat-completions backend speaks HTTP itself (httpx, no SDK): what it sends, how errors read."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from judge_helpers import GOOD, request

from assay.judge import make_judge
from tests.support.judge_server import obj, status


def headers_of(recorded) -> dict[str, str]:
    return {k.lower(): v for k, v in recorded.headers.items()}


def test_openai_compatible_requests_carry_the_key_the_json_body_and_the_organization(judge_server, monkeypatch):
    monkeypatch.setenv("OPENAI_ORG_ID", "org-123")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-9")
    judge_server.push(obj(GOOD))
    judge = make_judge(f"openai-compatible:m@{judge_server.url}", api_key="sk-test-key-000111", cache=False,
                       default_headers={"X-Team": "evals"})
    verdict = asyncio.run(judge.judge(request()))
    assert verdict.error is None and verdict.parsed.score == 0.75
    (sent,) = judge_server.requests
    headers = headers_of(sent)
    assert sent.path == "/v1/chat/completions"
    assert headers["authorization"] == "Bearer sk-test-key-000111" and "api-key" not in headers
    assert (headers["openai-organization"], headers["openai-project"], headers["x-team"]) == ("org-123", "proj-9",
                                                                                              "evals")
    assert headers["content-type"] == "application/json"
    assert sent.json["model"] == "m" and sent.json["messages"][0]["role"] == "system"


def test_azure_routes_by_deployment_with_the_api_version_and_its_key_header(judge_server):
    judge_server.push(obj(GOOD))
    judge = make_judge("azure:my deploy", api_key="azure-key-0000111122", base_url=judge_server.base, cache=False)
    assert asyncio.run(judge.judge(request())).error is None
    (sent,) = judge_server.requests
    assert sent.path == "/openai/deployments/my%20deploy/chat/completions?api-version=2024-10-21"
    headers = headers_of(sent)
    assert headers["api-key"] == "azure-key-0000111122" and "authorization" not in headers


def test_an_error_reply_reads_as_the_provider_s_message_with_status_and_retry_after(judge_server):
    judge_server.push(status(400, {"error": {"message": "model 'm' does not exist", "type": "invalid_request"}}),
                      status(503, "<html>upstream down</html>", retry_after=0.01), obj(GOOD))
    judge = make_judge(f"openai-compatible:m@{judge_server.url}", cache=False, retries=0)
    first = asyncio.run(judge.judge(request(1)))
    assert first.error is not None and "(HTTP 400): model 'm' does not exist" in first.error
    assert json.loads(first.raw)["error"]["type"] == "invalid_request"  # the body is kept
    second = asyncio.run(judge.judge(request(2)))
    assert "(HTTP 503)" in second.error and "upstream down" in second.error
    assert asyncio.run(judge.judge(request(3))).error is None


def test_a_refused_connection_is_a_retryable_connection_error():
    judge = make_judge("openai-compatible:m@http://127.0.0.1:9/v1", cache=False, retries=1, base_delay=0.01)
    verdict = asyncio.run(judge.judge(request()))
    assert verdict.error is not None and "connection error" in verdict.error and verdict.attempts == 2


def test_building_and_calling_a_chat_completions_judge_does_not_import_the_openai_sdk(judge_server):
    judge_server.push(obj(GOOD))
    code = ("import asyncio, sys\n"
            f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
            "from judge_helpers import request\n"
            "from assay.judge import make_judge\n"
            f"judge = make_judge('openai-compatible:m@{judge_server.url}', cache=False)\n"
            "verdict = asyncio.run(judge.judge(request()))\n"
            "print(verdict.error, sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "None []"
    assert len(judge_server.requests) == 1
