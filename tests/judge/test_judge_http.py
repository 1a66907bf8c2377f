"""The chat-completions backend speaks HTTP itself (no SDK): what it sends, how errors read.

Servers on this machine get the loopback client, the rest httpx; the tests that go through the
scripted server run on both (``transport``), the raw-socket tests on the loopback client only.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from judge_helpers import GOOD, request

import pytest

from assay.judge import _http, make_judge
from tests.support.judge_server import Reply, hostile, obj, status


@pytest.fixture(params=["loopback", "httpx"])
def transport(request, monkeypatch):
    """Run the test through the loopback client, then through httpx (as for a remote server)."""
    if request.param == "httpx":
        monkeypatch.setattr(_http, "is_loopback", lambda url: False)
    return request.param


def headers_of(recorded) -> dict[str, str]:
    return {k.lower(): v for k, v in recorded.headers.items()}


def test_openai_compatible_requests_carry_the_key_the_json_body_and_the_organization(transport, judge_server, monkeypatch):
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


def test_azure_routes_by_deployment_with_the_api_version_and_its_key_header(transport, judge_server):
    judge_server.push(obj(GOOD))
    judge = make_judge("azure:my deploy", api_key="azure-key-0000111122", base_url=judge_server.base, cache=False)
    assert asyncio.run(judge.judge(request())).error is None
    (sent,) = judge_server.requests
    assert sent.path == "/openai/deployments/my%20deploy/chat/completions?api-version=2024-10-21"
    headers = headers_of(sent)
    assert headers["api-key"] == "azure-key-0000111122" and "authorization" not in headers


def test_an_error_reply_reads_as_the_provider_s_message_with_status_and_retry_after(transport, judge_server):
    judge_server.push(status(400, {"error": {"message": "model 'm' does not exist", "type": "invalid_request"}}),
                      status(503, "<html>upstream down</html>", retry_after=0.01), obj(GOOD))
    judge = make_judge(f"openai-compatible:m@{judge_server.url}", cache=False, retries=0)
    first = asyncio.run(judge.judge(request(1)))
    assert first.error is not None and "(HTTP 400): model 'm' does not exist" in first.error
    assert json.loads(first.raw)["error"]["type"] == "invalid_request"  # the body is kept
    second = asyncio.run(judge.judge(request(2)))
    assert "(HTTP 503)" in second.error and "upstream down" in second.error
    assert asyncio.run(judge.judge(request(3))).error is None


def test_a_refused_connection_is_a_retryable_connection_error(transport):
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


# -- the loopback client's HTTP, against a raw socket server that sends exactly the bytes a test chooses --

class RawServer:
    """Reads one request per reply on a connection, answers with the next canned bytes; b"" closes."""

    def __init__(self, replies: list[bytes | None]) -> None:
        self.replies, self.requests, self.connections = list(replies), [], 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        stream = conn.makefile("rb")
        with conn:
            while self.replies:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = stream.readline()
                    if not line:
                        return
                    head += line
                length = int(next(v for k, v in (h.split(b":", 1) for h in head.split(b"\r\n")[1:] if b":" in h)
                                  if k.strip().lower() == b"content-length"))
                self.requests.append(head + stream.read(length))
                reply = self.replies.pop(0)
                if reply is None:  # close without answering: a kept-alive connection gone stale
                    return
                conn.sendall(reply)
                if b"Connection: close" in reply or b"HTTP/1.0" in reply:
                    return

    def close(self) -> None:
        self.sock.close()


VERDICT = json.dumps({"choices": [{"message": {"role": "assistant", "content": json.dumps(GOOD)},
                                   "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})


def fixed_length(body: bytes, *extra: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in extra)
    return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode() \
        + body


def chunked(body: bytes) -> bytes:
    parts = [body[:10], body[10:]]
    chunks = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in parts)
    return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"


def judge_all(url: str, n: int, **options):
    judge = make_judge(f"openai-compatible:m@{url}", cache=False, base_delay=0.01, timeout=5.0, **options)

    async def run():
        return [await judge.judge(request(i)) for i in range(n)]  # one after another: one connection
    return asyncio.run(run())


def test_loopback_replies_in_chunks_gzip_without_length_and_with_connection_close_all_parse():
    body = VERDICT.encode()
    replies = [chunked(body), fixed_length(gzip.compress(body), "Content-Encoding: gzip"),
               fixed_length(body, "Connection: close"),
               b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body]
    server = RawServer(replies)
    try:
        verdicts = judge_all(server.url, 4)
    finally:
        server.close()
    assert [v.error for v in verdicts] == [None] * 4 and all(v.parsed.score == 0.75 for v in verdicts)
    # chunked and gzip replies keep the connection; "Connection: close" ends it, so HTTP/1.0 needs a new one
    assert server.connections == 2
    first = server.requests[0].decode()
    assert first.startswith("POST /v1/chat/completions HTTP/1.1\r\n") and "Authorization: Bearer not-needed" in first


def test_a_kept_alive_connection_the_server_dropped_is_sent_again_on_a_new_one():
    body = VERDICT.encode()
    server = RawServer([fixed_length(body), None, fixed_length(body)])
    try:
        verdicts = judge_all(server.url, 2, retries=0)  # no retry layer: the client itself resends once
    finally:
        server.close()
    assert [v.error for v in verdicts] == [None, None] and server.connections == 2


def test_a_garbled_status_line_is_a_retryable_connection_error_and_a_redirect_names_its_target():
    body = VERDICT.encode()
    server = RawServer([b"garbage\r\n\r\n", fixed_length(body),
                        b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:1/v2\r\nContent-Length: 0\r\n\r\n"])
    try:
        first, second = judge_all(server.url, 2, retries=1)
    finally:
        server.close()
    assert first.error is None and first.attempts == 2  # garbage, then a retry that worked
    assert second.error is not None and "redirected (HTTP 307) to http://127.0.0.1:1/v2" in second.error


def test_a_head_read_at_once_and_one_read_line_by_line_parse_alike():
    """The loopback client reads a reply head that has fully arrived in one step, else line by line:
    interim 1xx replies, bare line feeds, header names in any case and the header bounds hold either way."""
    from assay.judge._http import MAX_HEADERS

    body = VERDICT.encode()
    many = "".join(f"X-Pad-{i}: {i}\r\n" for i in range(MAX_HEADERS - 2))  # with the two below: the most allowed
    replies = [b"HTTP/1.1 100 Continue\r\n\r\n" + fixed_length(body),
               fixed_length(body).replace(b"\r\n", b"\n"),
               fixed_length(body, "X-Mixed: yes").replace(b"X-Mixed: yes\r\n", b"X-Mixed: yes\n"),
               fixed_length(body).replace(b"Content-Length", b"cOnTeNt-LeNgTh"),
               fixed_length(body, many.rstrip("\r\n")),
               fixed_length(body, many + "X-One-Too-Many: 1")]
    server = RawServer(replies)
    try:
        verdicts = judge_all(server.url, 6, retries=0)
    finally:
        server.close()
    assert [v.error for v in verdicts[:5]] == [None] * 5 and all(v.parsed.score == 0.75 for v in verdicts[:5])
    assert verdicts[5].error is not None and f"{MAX_HEADERS} lines" in verdicts[5].error


# -- hostile servers: what a reply can make assay hold, and for how long --

def test_a_gzip_bomb_an_endless_body_and_a_huge_length_are_refused_at_the_reply_cap(transport, judge_server, make):
    judge_server.push(hostile("gzip_bomb"), hostile("endless_body"), hostile("huge_length", 2 * 10**9))
    judge = make(max_reply_mb=1, retries=3, timeout=600)
    for i in range(3):
        verdict = asyncio.run(judge.judge(request(i)))  # a reader without the cap would read until the timeout
        assert verdict.error is not None and "reply over the 1 MiB limit (--max-reply-mb) refused" in verdict.error
        assert verdict.attempts == 1  # refused at the cap (not at the timeout: that error says so), not retried
    assert len(judge_server.requests) == 3


def test_a_decompressed_reply_under_the_cap_still_parses(transport, judge_server, make):
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": json.dumps(GOOD)}}],
                       "padding": "x" * 300_000}).encode()
    judge_server.push(Reply(body=gzip.compress(body), headers={"Content-Encoding": "gzip"}))
    verdict = asyncio.run(make(max_reply_mb=1).judge(request()))
    assert verdict.error is None and verdict.parsed.score == 0.75


def test_endless_headers_are_refused_and_a_trickling_body_ends_at_the_timeout(transport, judge_server, make):
    judge_server.push(hostile("endless_headers"), hostile("trickle"))
    judge = make(retries=0, timeout=1.0)
    first = asyncio.run(judge.judge(request(1)))
    assert first.error is not None and ("headers" in first.error or "h11" in first.error.lower()
                                        or "protocol" in first.error.lower())
    started = time.monotonic()
    second = asyncio.run(judge.judge(request(2)))
    assert second.error is not None and "no reply within 1 s" in second.error  # the trickle itself never ends
    assert time.monotonic() - started >= 0.9


def test_bytes_past_the_end_of_a_reply_are_never_read_as_the_next_reply(judge_server, make):
    judge_server.push(hostile("trailing"), obj({"score": 0.25, "reason": "second"}))
    judge = make(retries=0)

    async def both():
        return [await judge.judge(request(i)) for i in range(2)]
    first, second = asyncio.run(both())
    assert first.error is None and first.parsed.score == 0.75
    assert second.error is None and second.parsed.score == 0.25 and "FORGED" not in second.raw
    assert len(judge_server.requests) == 2


def test_a_huge_provider_error_message_is_kept_cut_with_its_length(transport, judge_server, make):
    judge_server.push(status(500, "boom " * 2_000_000))
    verdict = asyncio.run(make(retries=0).judge(request()))
    assert "characters in all]" in verdict.error and len(verdict.error) < 10_000
    assert "10,000,000 characters in all" in verdict.error and len(verdict.raw) < 10_000
