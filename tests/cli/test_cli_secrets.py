"""Secrets never persist, and the judge cache never answers for another endpoint.

A scripted server echoes the request's Authorization header (and the bare key) in 401, 429, 500,
malformed and non-completion replies; every file and stream assay wrote is then searched for
the key. Two servers serving the same model name with different verdicts share one cache file.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

from assay._secrets import REDACTED, redact, register_secret
from tests.support.cli import cli_env, run_pipe
from tests.support.judge_server import ENCODINGS, JudgeServer, broken_body, echo, malformed, obj, status

KEY = "k3y-Pr0d-0123456789abcdefXYZ"  # not shaped like any known key: only exact-value redaction catches it
GOOD = {"evidence": [], "reasoning": "on topic", "score": 5}


def traces(tmp_path: Path, n: int) -> Path:
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps({"id": f"r{i}", "turns": [{"input": f"question {i}?", "output": f"answer {i}"}]})
                         + "\n" for i in range(n)))
    return p


def test_redact_exact_values_and_key_shapes(monkeypatch):
    monkeypatch.setenv("MY_PROXY_API_KEY", "proxy-value-0000111122223333")
    register_secret("registered-secret-value-42")
    text = ("Authorization: Bearer abc.DEF-123_456 | sk-ant-api03-abcdefghijklmnop | proxy-value-0000111122223333 | "
            "registered-secret-value-42 | {'x-api-key': 'zzzzzzzz99999999'} | AIzaSyA1234567890123456789012345678901")
    out = redact(text)
    assert out.count(REDACTED) == 6, out
    for leaked in ("abc.DEF-123_456", "sk-ant", "proxy-value", "registered-secret", "zzzzzzzz9", "AIzaSy"):
        assert leaked not in out
    assert redact("the bearer of good news and basic facts") == "the bearer of good news and basic facts"



def test_a_known_key_is_redacted_hex_encoded_too():
    key = "hexed-secret-key-0123456789"
    register_secret(key)
    dump = f"sent: {key.encode().hex()} / {key.encode().hex().upper()} / 00ff{key.encode().hex()}ff00"
    out = redact(dump)
    assert out == f"sent: {REDACTED} / {REDACTED} / 00ff{REDACTED}ff00" and key.encode().hex()[:16] not in out


def test_redact_sees_environment_and_registry_changes_after_a_first_call(monkeypatch):
    """The secret list is remembered between calls (it is on every reply's path), never stale."""
    assert redact("nothing secret here") == "nothing secret here"
    monkeypatch.setenv("LATE_SERVICE_TOKEN", "late-token-value-98765")
    assert redact("echo late-token-value-98765") == f"echo {REDACTED}"
    register_secret("late-registered-value-123")
    assert redact("echo late-registered-value-123") == f"echo {REDACTED}"
    monkeypatch.setenv("LATE_SERVICE_TOKEN", "other-token-value-55555")
    assert redact("echo other-token-value-55555 and late-token-value-98765") == \
        f"echo {REDACTED} and late-token-value-98765"
    assert redact("SK-abcdefgh12345678 in capitals") == f"{REDACTED} in capitals"

def authorization(recorded) -> str:
    return next((v for k, v in recorded.headers.items() if k.lower() == "authorization"), "")


def echo_server(tmp_path: Path) -> JudgeServer:
    """Replies chosen by the trace in the request, each echoing the Authorization header it got."""
    server = JudgeServer()

    def reply(req):
        auth = authorization(server.requests[-1])  # --concurrency 1: the last request is this one
        echo = f"invalid credentials: got header {auth!r} (key {auth.removeprefix('Bearer ')})"
        text = json.dumps(req.get("messages"))
        if "question 0?" in text:
            return status(500, echo)
        if "question 1?" in text:
            return status(429, echo)
        if "question 2?" in text:
            return malformed('{"score": 5, "reasoning": "' + echo)
        if "question 3?" in text:
            return broken_body(f"<html>proxy error: {echo}</html>")
        return obj({**GOOD, "reasoning": f"fine; {echo}"})

    server.reply = reply
    return server


def test_no_key_in_any_output_file_store_or_stream(tmp_path):
    env = cli_env(tmp_path, ASSAY_JUDGE_API_KEY=KEY)
    p = traces(tmp_path, 5)
    streams: list[str] = []
    with echo_server(tmp_path) as server:
        judge = ["-m", "answer_relevance", "--judge", f"openai-compatible:scripted@{server.url}",
                 "--concurrency", "1", "--retries", "0", "--max-errors", "10"]
        for fmt in ("json", "jsonl", "csv", "junit"):
            out = tmp_path / f"results.{fmt}"
            r = run_pipe(["run", str(p), *judge, "-f", fmt, "-o", str(out), "--html", str(tmp_path / f"{fmt}.html"),
                          "--cache", str(tmp_path / "judge.sqlite3"), "--debug"], env)
            assert r.returncode in (0, 1), r.stderr
            streams += [r.stdout, r.stderr]
        r = run_pipe(["run", str(p), *judge, "--no-cache", "-f", "json"], env)  # results on stdout
        streams += [r.stdout, r.stderr]
        assert KEY in json.dumps([authorization(q) for q in server.requests])  # the key was sent
        server.reply = lambda req: status(401, f"bad key {authorization(server.requests[-1])}")
        fatal = run_pipe(["run", str(p), *judge, "--no-cache", "--debug"], env)
        streams += [fatal.stdout, fatal.stderr]
        assert fatal.returncode == 3 and "HTTP 401" in fatal.stderr and "Traceback" in fatal.stderr
    for cmd in (["runs"], ["runs", "show", "latest"], ["report", "latest", "-o", str(tmp_path / "stored.html")]):
        r = run_pipe(cmd, env)
        streams += [r.stdout, r.stderr]
    # the echoes really were recorded (redacted), so the search below is not vacuous
    results = json.loads((tmp_path / "results.json").read_text())
    m = results["traces"][0]["metrics"]["answer_relevance"]
    assert m["warning"] == "judge_error" and REDACTED in json.dumps(m)
    assert REDACTED in json.dumps(results["traces"][4]["metrics"]["answer_relevance"])  # a passing verdict's reason
    written = [f for f in tmp_path.rglob("*") if f.is_file() and f.name != "t.jsonl"]
    assert len(written) >= 10  # results in 4 formats, 4 reports, the store, the cache, ...
    hits = [str(f) for f in written if KEY.encode() in f.read_bytes()]
    hits += [f"stream {i}" for i, s in enumerate(streams) if KEY in s]
    assert hits == []


def test_the_cache_keys_on_the_endpoint_not_only_the_model_name(tmp_path):
    cache = str(tmp_path / "judge.sqlite3")
    p = traces(tmp_path, 2)

    def run(url: str):
        return run_pipe(["run", str(p), "--no-store", "-m", "answer_relevance", "-f", "json", "--retries", "0",
                         "--cache", cache, "--judge", f"openai-compatible:same-model@{url}"], cli_env(tmp_path))

    with JudgeServer(lambda req: obj(GOOD)) as a, JudgeServer(lambda req: obj({**GOOD, "score": 1})) as b:
        first = run(a.url)
        second = run(b.url)
        again = run(a.url)
        assert (len(a.requests), len(b.requests)) == (2, 2)  # b was asked although a's verdicts were cached
    scores = [[t["metrics"]["answer_relevance"]["score"] for t in json.loads(r.stdout)["traces"]]
              for r in (first, second, again)]
    assert scores == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    assert json.loads(again.stdout)["run"]["judge"]["cached"] == 2
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    r = run(dead)  # a dead server with the same model name gets no cached verdicts from a or b
    assert r.returncode == 3 and json.loads(r.stdout)["run"]["judge"]["cached"] == 0


ENCODED_KEY = "zQ9/kEy+Pr0d=0123456789abc"  # "/", "+" and "=" make every encoding differ from the key


def test_every_encoding_of_the_key_and_every_reply_field_is_redacted_everywhere(tmp_path):
    """The scripted server echoes the key in each encoding, in the model field, the reasoning and errors."""
    names = sorted(ENCODINGS)
    forms = {name: ENCODINGS[name](ENCODED_KEY) for name in names}
    env = cli_env(tmp_path, ASSAY_JUDGE_API_KEY=ENCODED_KEY)
    p = traces(tmp_path, 2 * len(names))

    def reply(req):
        i = int(re.search(r"question (\d+)\?", json.dumps(req.get("messages"))).group(1))
        return echo(names[i // 2], code=500 if i % 2 else 200)

    with JudgeServer(reply) as server:
        outputs = [str(tmp_path / f"r.{x}") for x in ("json", "csv", "xml", "jsonl")]
        r = run_pipe(["run", str(p), "-m", "answer_relevance", "--judge", f"openai-compatible:scripted@{server.url}",
                      "--retries", "0", "--max-errors", "20", *sum((["-o", o] for o in outputs), []),
                      "--html", str(tmp_path / "r.html"), "--cache", str(tmp_path / "judge.sqlite3")], env)
        assert r.returncode in (0, 1), r.stderr
    shown = run_pipe(["runs", "show", "latest"], env)
    results = json.loads((tmp_path / "r.json").read_text())
    reasons = json.dumps([t["metrics"]["answer_relevance"] for t in results["traces"]])
    assert reasons.count(REDACTED) >= 2 * len(forms)  # every echo arrived, redacted
    assert results["run"]["judge"]["model"] == "openai-compatible:scripted"
    leaks = {name: [str(f.name) for f in tmp_path.rglob("*") if f.is_file() and form.encode() in f.read_bytes()]
             + [s for s in ("stdout", "stderr", "runs show") if form in {"stdout": r.stdout, "stderr": r.stderr,
                                                                          "runs show": shown.stdout}[s]]
             for name, form in forms.items()}
    assert {k: v for k, v in leaks.items() if v} == {}


def test_a_password_in_the_judge_url_splits_right_and_is_never_shown_or_kept(tmp_path):
    env = cli_env(tmp_path)
    p = traces(tmp_path, 2)
    password = "Hunter2Passw0rd"
    with JudgeServer(lambda req: obj(GOOD)) as server:
        judge = f"openai-compatible:gpt-4o-mini@http://admin:{password}@127.0.0.1:{server.port}/v1"
        r = run_pipe(["run", str(p), "-m", "answer_relevance", "--judge", judge, "-o", str(tmp_path / "r.json"),
                      "--html", str(tmp_path / "r.html"), "--cache", str(tmp_path / "judge.sqlite3")], env)
        assert r.returncode == 0, r.stderr
        assert server.requests[0].json["model"] == "gpt-4o-mini"  # split at "@http://", not at the last "@"
        bad = run_pipe(["run", str(p), "-m", "answer_relevance", "--judge", judge.replace(f":{server.port}", ":1:2"),
                        "--no-cache", "--retries", "0"], env)  # an error message that names the URL
    assert bad.returncode == 2 and "bad judge base URL 'http://127.0.0.1:1:2/v1'" in bad.stderr, bad.stderr
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["traces"][0]["metrics"]["answer_relevance"]["score"] == 1.0
    streams = [r.stdout, r.stderr, bad.stdout, bad.stderr]
    for cmd in (["runs"], ["runs", "show", "latest~1"], ["report", "latest~1", "-o", str(tmp_path / "s.html")]):
        streams.append(run_pipe(cmd, env).stdout)
    hits = [f.name for f in tmp_path.rglob("*") if f.is_file() and password.encode() in f.read_bytes()]
    assert hits + [i for i, s in enumerate(streams) if password in s] == []
