"""The Anthropic judge reads replies through the bounded path: a hostile Messages API server (the
scripted one, on 127.0.0.1) cannot make it hold more than --max-reply-mb, nor be asked twice."""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from judge_helpers import GOOD, request

from assay.judge import AnthropicJudge, make_judge
from tests.support.judge_server import Reply, hostile

pytest.importorskip("anthropic")


def judge_on(server, **kw):
    backend = AnthropicJudge("claude-3-5-haiku-latest", api_key="test", base_url=server.base, timeout=20.0, **kw)
    return make_judge(backend, cache=False, base_delay=0.01, retries=3)


@pytest.mark.parametrize("mode,size", [("gzip_bomb", 2**31), ("endless_body", 0), ("huge_length", 2 * 10**9)])
def test_a_hostile_reply_is_refused_at_the_cap_and_not_retried(judge_server, mode, size):
    judge_server.push(hostile(mode, size))
    verdict = asyncio.run(judge_on(judge_server, max_reply_mb=1).judge(request()))
    assert verdict.error is not None and "reply over the 1 MiB limit (--max-reply-mb) refused" in verdict.error
    assert verdict.attempts == 1 and len(judge_server.requests) == 1


def test_a_compressed_reply_under_the_cap_still_parses(judge_server):
    body = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-3-5-haiku-latest",
                       "content": [{"type": "tool_use", "id": "t1", "name": "submit_verdict", "input": GOOD}],
                       "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5},
                       "padding": "x" * 300_000}).encode()
    judge_server.push(Reply(body=gzip.compress(body), headers={"Content-Encoding": "gzip"}))
    verdict = asyncio.run(judge_on(judge_server, max_reply_mb=1).judge(request()))
    assert verdict.error is None and verdict.parsed.score == 0.75 and verdict.input_tokens == 10


def test_max_reply_mb_reaches_the_anthropic_backend_from_make_judge(judge_server):
    judge = make_judge("anthropic:claude-3-5-haiku-latest", api_key="k", base_url=judge_server.base,
                       max_reply_mb=2, cache=False)
    backend = judge
    while hasattr(backend, "inner"):
        backend = backend.inner
    assert isinstance(backend, AnthropicJudge) and backend.max_reply == 2 * 2**20


def test_a_gzip_bomb_costs_megabytes_not_gigabytes(judge_server):
    """Peak memory of a fresh process that meets a 2 GiB gzip bomb with --max-reply-mb 4."""
    judge_server.push(hostile("gzip_bomb", 2**31))
    code = textwrap.dedent(f"""
        import asyncio, resource, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from judge_helpers import request
        from assay.judge import AnthropicJudge, make_judge
        judge = make_judge(AnthropicJudge("claude-3-5-haiku-latest", api_key="k", base_url={judge_server.base!r},
                                          timeout=60.0, max_reply_mb=4), cache=False, retries=0)
        verdict = asyncio.run(judge.judge(request()))
        print(verdict.error)
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    error, peak_mb = out.stdout.strip().splitlines()[-2:]
    assert "reply over the 4 MiB limit" in error, out.stdout + out.stderr
    assert int(peak_mb) < 400, peak_mb  # unbounded, the SDK held the 2 GiB reply decompressed
