"""Retries, fatal errors, timeouts and structured-output fallback against the scripted server."""

from __future__ import annotations

import asyncio
import time

import pytest
from judge_helpers import GOOD, Score, request

from assay.errors import ProviderError
from tests.support.judge_server import broken_body, hang, malformed, obj, status, text, tool


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("failure", [
    status(429, retry_after=0.05), status(500), status(502, "bad gateway"), status(503), hang(5), broken_body(),
], ids=["429-retry-after", "500", "502", "503", "timeout", "non-json-200"])
def test_transient_failures_are_retried_until_success(make, judge_server, failure):
    judge_server.push(failure, failure, obj(GOOD))
    judge = make(timeout=0.3 if failure.hang else 10)  # a short timeout only where it is the failure (load-proof)
    verdict = run(judge.judge(request()))
    assert verdict.error is None and verdict.parsed == Score(**GOOD)
    assert verdict.attempts == 3 and judge.stats.retries == 2 and len(judge_server.requests) == 3


def test_retry_after_is_honoured(make, judge_server):
    judge_server.push(status(429, retry_after=0.3), obj(GOOD))
    judge = make()
    started = time.perf_counter()
    assert run(judge.judge(request())).error is None
    assert time.perf_counter() - started >= 0.3
    gap = judge_server.requests[1].started - judge_server.requests[0].started
    assert gap >= 0.3


def test_retries_exhausted_give_an_errored_verdict_with_the_reason(make, judge_server):
    judge_server.default = status(500, "overloaded")
    judge = make(retries=3)
    verdict = run(judge.judge(request()))
    assert verdict.parsed is None and verdict.attempts == 4 and len(judge_server.requests) == 4
    assert "HTTP 500" in verdict.error and "overloaded" in verdict.error and "after 4 attempts" in verdict.error
    assert judge.stats.errors == 1 and judge.stats.calls == 4


@pytest.mark.parametrize("code", [401, 403, 404], ids=["unauthorized", "forbidden", "unknown-model"])
def test_auth_and_unknown_model_raise_naming_the_backend_without_retry(make, judge_server, code):
    judge_server.default = status(code, "nope")
    judge = make()
    with pytest.raises(ProviderError) as info:
        run(judge.judge(request()))
    assert info.value.status == code and info.value.backend == "openai-compatible"
    assert "openai-compatible" in str(info.value) and f"HTTP {code}" in str(info.value)
    assert len(judge_server.requests) == 1
    with pytest.raises(ProviderError):  # doomed: later calls fail fast without a round trip
        run(judge.judge(request(1)))
    assert len(judge_server.requests) == 1


def test_bad_request_is_an_errored_verdict_without_retry(make, judge_server):
    judge_server.push(status(400, "context length exceeded"))
    judge = make()
    verdict = run(judge.judge(request()))
    assert verdict.parsed is None and "HTTP 400" in verdict.error and "context length" in verdict.error
    assert len(judge_server.requests) == 1 and judge.stats.retries == 0


def test_timeout_then_success_is_recorded_as_an_attempt(make, judge_server):
    judge_server.push(hang(5), obj(GOOD))
    judge = make(timeout=0.2)
    verdict = run(judge.judge(request()))
    assert verdict.error is None and verdict.parsed == Score(**GOOD)
    assert verdict.attempts == 2


def test_timeouts_exhausted_say_so(make, judge_server):
    judge_server.default = hang(5)
    judge = make(timeout=0.1, retries=1)
    verdict = run(judge.judge(request()))
    assert verdict.error is not None and ("timed out" in verdict.error.lower() or "within" in verdict.error)
    assert verdict.attempts == 2


def test_json_schema_rejected_falls_back_to_tools_then_json(make, judge_server):
    def reply(req):
        if "response_format" in req:
            return status(400, "response_format json_schema is not supported by this model")
        if "tools" in req:
            return status(400, "tools are not supported")
        return text("Here you go: " + '{"score": 0.5, "reason": "ok"}')
    judge_server.reply = reply
    judge = make()
    assert run(judge.judge(request())).parsed == Score(score=0.5, reason="ok")
    modes = ["response_format" in r.json for r in judge_server.requests], ["tools" in r.json for r in judge_server.requests]
    assert modes == ([True, False, False], [False, True, False])
    assert "JSON schema" in judge_server.requests[-1].messages[-1]["content"]
    run(judge.judge(request(1)))  # the working mode is remembered
    assert len(judge_server.requests) == 4 and "tools" not in judge_server.requests[-1].json


def test_tools_mode_reads_the_tool_call(make, judge_server):
    judge_server.push(tool(GOOD))
    judge = make(structured="tools")
    verdict = run(judge.judge(request()))
    assert verdict.parsed == Score(**GOOD)
    sent = judge_server.requests[0].json
    assert sent["tool_choice"]["function"]["name"] == "submit_verdict"
    assert sent["tools"][0]["function"]["parameters"]["properties"].keys() == {"score", "reason"}


def test_strict_json_schema_is_sent(make, judge_server):
    judge_server.push(obj(GOOD))
    run(make().judge(request(max_tokens=50, temperature=0.3)))
    sent = judge_server.requests[0].json
    fmt = sent["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["additionalProperties"] is False
    assert sent["max_tokens"] == 50 and sent["temperature"] == 0.3


def test_truncated_reply_is_reported(make, judge_server):
    judge_server.default = malformed(finish_reason="length")
    verdict = run(make(reasks=0).judge(request()))
    assert verdict.error is not None and "truncated" in verdict.error and verdict.raw.startswith('{"score"')


def test_a_batch_loses_nothing(make, judge_server):
    """Every request ends with a verdict or an error with a reason, whatever the server does."""
    script = [obj(GOOD), status(500), status(400, "bad"), malformed(), obj({"score": 7, "reason": "x"}),
              status(429, retry_after=0.01), text("no json at all"), hang(5)]

    def reply(req):
        n = int(req["messages"][1]["content"].split()[1].rstrip(":"))
        return script[n % len(script)] if len(req["messages"]) == 2 else obj(GOOD)
    judge_server.reply = reply
    judge = make(timeout=0.2, retries=1, concurrency=8)

    async def batch():
        return await asyncio.gather(*(judge.judge(request(i)) for i in range(40)))
    verdicts = run(batch())
    assert len(verdicts) == 40
    for v in verdicts:
        assert (v.parsed is not None) != (v.error is not None)
        assert v.error is None or v.error.strip()
    assert judge.stats.requests == 40
    assert sum(v.error is not None for v in verdicts) == judge.stats.errors


@pytest.mark.parametrize("headers,seconds", [
    ({"retry-after": "2"}, 2.0), ({"retry-after": "0.5"}, 0.5), ({"retry-after-ms": "250"}, 0.25),
    ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0), ({}, None), ({"retry-after": "soon"}, None),
], ids=["seconds", "fraction", "milliseconds", "past-http-date", "absent", "garbage"])
def test_retry_after_parsing(headers, seconds):
    from assay.judge._base import parse_retry_after
    assert parse_retry_after(headers) == seconds


def test_a_single_slot_local_server_is_not_retried_after_a_timeout(judge_server):
    """llama.cpp keeps working on the abandoned call: a retry would only queue behind it."""
    from assay.judge import make_judge

    judge_server.push(hang(3), obj(GOOD))
    judge = make_judge(f"llamacpp:qwen@{judge_server.url}", cache=False, timeout=0.3, base_delay=0.01)
    verdict = run(judge.judge(request()))
    assert verdict.error is not None and "not retried" in verdict.error and "--timeout" in verdict.error
    assert len(judge_server.requests) == 1 and judge.stats.retries == 0


def test_a_one_slot_server_times_a_call_from_when_it_gets_the_slot_and_reports_the_queue(judge_server):
    """Four calls at once to a server that answers one at a time in 0.3 s, with a 0.6 s timeout:
    timed from the send, the third and fourth would time out waiting for the others; timed from the
    slot, every call is answered and the wait is reported apart from the latency."""
    import threading

    from assay.judge import make_judge

    one_slot = threading.Lock()

    def serve(req):
        with one_slot:  # the server itself serves one request at a time
            time.sleep(0.3)
        return obj(GOOD)
    judge_server.reply = serve
    judge = make_judge(f"llamacpp:qwen@{judge_server.url}", cache=False, timeout=0.6, concurrency=4)

    async def four():
        return await asyncio.gather(*(judge.judge(request(i)) for i in range(4)))
    verdicts = run(four())
    assert [v.error for v in verdicts] == [None] * 4
    assert judge_server.peak == 1  # the calls queued here, not at the server
    queued = sorted(v.queued_s for v in verdicts)
    assert queued[0] < 0.1 and queued[-1] >= 0.8  # the last waited for three calls of ~0.3 s
    assert all(v.latency_s < 0.6 for v in verdicts)
    assert judge.stats.queued_s == pytest.approx(sum(queued))


def test_a_one_slot_timeout_still_stops_a_call_that_has_the_slot(judge_server):
    from assay.judge import make_judge

    judge_server.push(hang(2), obj(GOOD))
    judge = make_judge(f"ollama:llama3@{judge_server.url}", cache=False, timeout=0.3, concurrency=2)

    async def two():
        return await asyncio.gather(judge.judge(request(1)), judge.judge(request(2)))
    first, second = run(two())
    assert "no reply within 0.3 s of getting the server's one slot" in first.error and second.error is None
    assert second.queued_s >= 0.25  # it waited for the first call's slot, then had its own 0.3 s


def test_local_servers_get_a_longer_default_timeout():
    from assay.judge import make_judge

    def backend(judge):
        while hasattr(judge, "inner"):
            judge = judge.inner
        return judge
    assert backend(make_judge("ollama:llama3", cache=False)).timeout == 600.0
    assert backend(make_judge("openai-compatible:m@http://127.0.0.1:9/v1", cache=False)).timeout == 600.0
    assert backend(make_judge("openai-compatible:m@https://llm.example.com/v1", cache=False)).timeout == 60.0
