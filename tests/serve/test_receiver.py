"""The receiver over real HTTP on 127.0.0.1, the journal in real SQLite, the protobuf reader
against the protobuf library's own encoding of what the OpenTelemetry SDK exports."""

from __future__ import annotations

import functools
import gzip
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.engine._spec import RunSpec
from assay.errors import DataError
from assay.serve import Limits, Server, Settings, decode_export, sampled
from assay.serve._journal import SCORING
from assay.serve._receiver import journal_rows
from assay.store import RunStore

METRICS = ["latency_score", "mcp_compliance"]
TRACE = "5b8efff798038103d269b633813fc60c"


def span(span_id: str, *, parent: str | None = None, trace: str = TRACE, end: int | None = 2_000_000_000,
         **attrs: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"traceId": trace, "spanId": span_id, "name": "chat gpt-4o",
                         "startTimeUnixNano": "1000000000",
                         "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}
    if end is not None:
        s["endTimeUnixNano"] = str(end)
    if parent:
        s["parentSpanId"] = parent
    return s


def export(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "a"}}]},
                               "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}


CHAT = {"gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi?"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Hello."}]}])}


def post(url: str, body: bytes, ctype: str = "application/json", **headers: str) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": ctype, **headers})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.fixture
def make(tmp_path: Path) -> Any:
    servers: list[Server] = []
    lines: list[str] = []

    def build(**settings: Any) -> Server:
        server = Server(RunSpec(metrics=METRICS), tmp_path / "runs.sqlite3", tmp_path / "journal.sqlite3",
                        Settings(port=0, **settings), log=lines.append)
        server.start(score=False)  # the test scores, in its own thread
        server.open_run()
        servers.append(server)
        return server

    build.lines = lines  # type: ignore[attr-defined]
    yield build
    for s in servers:
        s.receiver.shutdown()
        s.receiver.server_close()
        s.close_run()
        s.close()


def stored(tmp_path: Path, run_id: str) -> list[Any]:
    return RunStore(tmp_path / "runs.sqlite3").load(run_id).traces


def test_json_gzip_export_is_journalled_then_scored_once_when_its_root_ends(make: Any, tmp_path: Path) -> None:
    server = make()
    root = span("00000000000000a1", **CHAT)
    status, _, body = post(server.url, gzip.compress(json.dumps(export(root)).encode()), **{"Content-Encoding": "gzip"})
    assert (status, json.loads(body)) == (200, {})
    assert server.journal.counts()["open"] == 1  # durable before the reply
    # the exporter retries the same export: journalled once
    status, _, _ = post(server.url, json.dumps(export(root)).encode())
    assert status == 200 and server.receiver.counters.duplicates == 1
    assert server.score_ready() == 1 and server.score_ready() == 0
    assert server.journal.counts()["scored"] == 1
    assert post(server.url, json.dumps(export(root)).encode())[0] == 200  # a late retry: still a duplicate
    assert server.receiver.counters.duplicates == 2 and server.score_ready() == 0
    server.recorder.flush()
    [result] = stored(tmp_path, server.run_id)
    assert result.id == TRACE and result.source == f"otlp {TRACE}: root span ended"
    assert set(result.metrics) == set(METRICS) and result.metrics["latency_score"].score is not None


def test_a_trace_whose_root_never_comes_is_scored_after_the_quiet_period(make: Any, tmp_path: Path) -> None:
    server = make(quiet_s=0.01)
    child = span("00000000000000b2", parent="00000000000000b1", **CHAT)
    assert post(server.url, json.dumps(export(child)).encode())[0] == 200
    while server.score_ready() == 0:  # ends once 10 ms have passed since the span came
        server.wake.wait(0.01)
    server.recorder.flush()
    [result] = stored(tmp_path, server.run_id)
    assert result.source == f"otlp {TRACE}: no root span, 0.01s quiet"


def test_malformed_spans_are_refused_located_and_counted_the_rest_kept(make: Any) -> None:
    server = make()
    bad = span("00000000000000c2", parent="00000000000000c1")
    bad["startTimeUnixNano"] = "soon"
    status, _, body = post(server.url, json.dumps(export(span("00000000000000c1", **CHAT), bad)).encode())
    reply = json.loads(body)
    assert status == 200 and reply["partialSuccess"]["rejectedSpans"] == 1
    assert "resourceSpans[0].scopeSpans[0].spans[1].startTimeUnixNano" in reply["partialSuccess"]["errorMessage"]
    assert server.receiver.counters.rejected_spans == 1 and server.journal.counts()["pending_spans"] == 1
    assert any("spans[1].startTimeUnixNano" in line and "request 1" in line for line in make.lines)


@pytest.mark.parametrize(("body", "ctype", "headers", "status", "says"), [
    (b"{not json", "application/json", {}, 400, "cannot read the body"),
    (b"\x0a\x05\x12", "application/x-protobuf", {}, 400, "malformed OTLP protobuf"),
    (b"{}", "text/plain", {}, 415, "application/x-protobuf or application/json"),
    (b"x" * 2000, "application/json", {}, 413, "limit is 1024"),
    (gzip.compress(b"{" * 5000), "application/json", {"Content-Encoding": "gzip"}, 413, "decompresses to more"),
    (b"{}", "application/json", {"Content-Encoding": "br"}, 400, "not supported"),
], ids=["bad-json", "truncated-protobuf", "content-type", "too-large", "gzip-bomb", "encoding"])
def test_bad_requests_are_answered_not_crashed_on(make: Any, body: bytes, ctype: str, headers: dict[str, str],
                                                  status: int, says: str) -> None:
    server = make(limits=Limits(max_body=1024))
    got, _, reply = post(server.url, body, ctype, **headers)
    assert got == status and says in json.loads(reply)["message"]
    assert server.receiver.counters.bad_requests == 1
    assert post(server.url, json.dumps(export(span("00000000000000d1"))).encode())[0] == 200  # still serving


def test_too_many_spans_in_one_request_is_413(make: Any) -> None:
    server = make(limits=Limits(max_spans=2))
    spans = [span(f"00000000000000e{i}", parent="00000000000000ff") for i in range(3)]
    status, _, reply = post(server.url, json.dumps(export(*spans)).encode())
    assert status == 413 and "limit is 2" in json.loads(reply)["message"]
    assert server.journal.counts()["pending_spans"] == 0


def test_back_pressure_503_when_the_queue_is_full_and_429_when_busy(make: Any) -> None:
    server = make(limits=Limits(max_pending=1, concurrency=1), quiet_s=3600)
    assert post(server.url, json.dumps(export(span("00000000000000f2", parent="00000000000000f1"))).encode())[0] == 200
    status, headers, _ = post(server.url, json.dumps(export(span("00000000000000f3", parent="00000000000000f1"))).encode())
    assert status == 503 and headers["Retry-After"] == "2"
    server.settings.limits = None
    server.receiver.limits.max_pending = 10
    assert server.receiver.slots.acquire(blocking=False)  # the one reading slot is taken
    try:
        status, headers, _ = post(server.url, json.dumps(export(span("00000000000000f4"))).encode())
    finally:
        server.receiver.slots.release()
    assert status == 429 and headers["Retry-After"] == "2"
    assert server.receiver.counters.refused_busy == 2 and server.journal.counts()["pending_spans"] == 1


def test_an_exporters_next_request_is_not_refused_while_the_last_reply_is_still_going_out(make: Any,
                                                                                          monkeypatch: Any) -> None:
    """The reading slot is given back before the reply is written: with one slot, an exporter that sends its
    next request as soon as it has the reply is not refused as busy (429), however slowly the server's
    thread finishes (held here after each reply)."""
    from assay.serve import _receiver

    written = _receiver._Handler._reply

    def slow_reply(self: Any, *args: Any, **kwargs: Any) -> None:
        written(self, *args, **kwargs)
        self.wfile.flush()
        time.sleep(0.3)  # the server's thread still busy after the client has its reply

    monkeypatch.setattr(_receiver._Handler, "_reply", slow_reply)
    server = make(limits=Limits(concurrency=1))
    for i in range(3):
        status, _, _ = post(server.url, json.dumps(export(span(f"00000000000000a{i}"))).encode())
        assert status == 200
    assert server.receiver.counters.refused_busy == 0


def test_a_token_is_required_when_one_is_set(make: Any) -> None:
    server = make(token="s3cret")
    body = json.dumps(export(span("0000000000000011"))).encode()
    assert post(server.url, body)[0] == 401
    assert post(server.url, body, Authorization="Bearer wrong")[0] == 401
    assert post(server.url, body, Authorization="Bearer s3cret")[0] == 200


def test_on_loopback_the_host_header_must_name_it(make: Any) -> None:
    server = make()
    status, _, reply = post(server.url, json.dumps(export(span("0000000000000012"))).encode(), Host="evil.example:80")
    assert status == 421 and "Host" in json.loads(reply)["message"]
    assert server.journal.counts()["pending_spans"] == 0


def test_a_non_loopback_address_gets_a_token(tmp_path: Path) -> None:
    server = Server(RunSpec(metrics=METRICS), tmp_path / "r.sqlite3", tmp_path / "j.sqlite3",
                    Settings(host="0.0.0.0", port=0), log=lambda line: None)
    try:
        assert server.settings.token and server.receiver.token == server.settings.token
    finally:
        server.receiver.server_close()
        server.journal.close()


def test_restart_recovers_traces_taken_but_not_marked(make: Any, tmp_path: Path) -> None:
    """A stop after the results were written but before the journal said so: not scored again;
    a trace taken but not written: scored on restart."""
    server = make()
    for i in (1, 2):
        trace = f"{i:032x}"
        assert post(server.url, json.dumps(export(span(f"{i:016x}", trace=trace, **CHAT))).encode())[0] == 200
    assert server.score_ready() == 2
    server.journal.mark([f"{1:032x}"], SCORING)  # as if stopped between the store's commit and the mark
    assert post(server.url, json.dumps(export(span("0000000000000003", trace=f"{3:032x}", **CHAT))).encode())[0] == 200
    server.journal.mark([f"{3:032x}"], SCORING)  # taken by the scorer, never written
    run_id = server.run_id
    server.receiver.shutdown()
    server.receiver.server_close()
    server.close_run()
    server.close()
    again = make()
    assert again.run_id == run_id
    counts = again.journal.counts()
    assert (counts["scored"], counts["open"], counts["scoring"]) == (2, 1, 0)
    assert again.score_ready() == 1
    again.recorder.flush()
    assert sorted(r.id for r in stored(tmp_path, run_id)) == [f"{i:032x}" for i in (1, 2, 3)]


def test_sample_is_decided_by_trace_id() -> None:
    ids = [f"{i:032x}" for i in range(2000)]
    picked = [t for t in ids if sampled(t, 0.1)]
    assert 120 <= len(picked) <= 280  # ~200: a share, not all or nothing
    assert picked == [t for t in ids if sampled(t, 0.1)]
    assert all(sampled(t, 1.0) for t in ids[:10]) and not any(sampled(t, 0.0) for t in ids[:10])


# ---------------------------------------------------------------- protobuf

def _sdk_request() -> tuple[bytes, dict[str, Any]]:
    """What the SDK's OTLP exporter sends (its encoder, the protobuf library's serialisation) and the
    protobuf library's own JSON reading of it."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.common")
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
        InMemorySpanExporter,
    )
    from opentelemetry.trace import StatusCode

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t", "1.0")
    with tracer.start_as_current_span("invoke_agent a") as root:
        root.set_attributes({"s": "é", "i": -7, "f": 0.5, "b": True, "l": ["x", "y"], "n": [1, 2]})
        with tracer.start_as_current_span("chat") as child:
            child.add_event("gen_ai.user.message", {"content": "hi"})
            child.set_status(StatusCode.ERROR, "boom")
    request = encode_spans(memory.get_finished_spans())
    return request.SerializeToString(), MessageToDict(request)


def _normal(value: Any, key: str = "", b64: bool = True) -> Any:
    """MessageToDict's shape made comparable: ids base64 -> hex, 64-bit integers as int, enums as numbers."""
    import base64
    if isinstance(value, dict):
        return {k: _normal(v, k, b64) for k, v in value.items() if k not in ("scope", "schemaUrl", "flags", "kind")}
    if isinstance(value, list):
        return [_normal(v, key, b64) for v in value]
    if key in ("traceId", "spanId", "parentSpanId") and b64:
        return base64.b64decode(value).hex()
    if key in ("startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "intValue"):
        return int(value)
    if key == "code":
        return {"STATUS_CODE_ERROR": 2, "STATUS_CODE_OK": 1}.get(value, value)
    return value


def test_protobuf_reader_agrees_with_the_protobuf_library() -> None:
    raw, expected = _sdk_request()
    got = _normal(decode_export(raw), b64=False)
    assert _drop_empty(got) == _drop_empty(_normal(expected))
    chat, root = got["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert root["attributes"][1] == {"key": "i", "value": {"intValue": -7}}
    assert chat["status"] == {"code": 2, "message": "boom"} and chat["parentSpanId"] == root["spanId"]


def _drop_empty(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_empty(v) for k, v in value.items() if v not in ([], {}, None)}
    if isinstance(value, list):
        return [_drop_empty(v) for v in value]
    return value


@pytest.mark.parametrize("cut", [1, 7, 40, -3])
def test_a_truncated_protobuf_is_a_located_error(cut: int) -> None:
    raw, _ = _sdk_request()
    with pytest.raises(DataError, match="malformed OTLP protobuf") as err:
        decode_export(raw[:cut])
    assert err.value.field and err.value.field.startswith("resourceSpans")


def test_judge_metrics_score_the_sample_deterministic_metrics_every_trace(tmp_path: Path, judge_server: Any) -> None:
    from assay.engine._spec import JudgeSpec
    from tests.support.judge_server import obj

    judge_server.default = obj({"evidence": [], "reasoning": "warm and clear", "score": 5})
    spec = RunSpec(metrics=["latency_score", "agent_tone"],
                   judge=JudgeSpec.of(f"openai-compatible:m@{judge_server.url}", {"cache": False}))
    server = Server(spec, tmp_path / "runs.sqlite3", tmp_path / "j.sqlite3", Settings(port=0, sample=0.5),
                    log=lambda line: None)
    server.start(score=False)
    server.open_run()
    try:
        ids = [f"{i:032x}" for i in range(1, 13)]
        for i, trace in enumerate(ids):
            assert post(server.url, json.dumps(export(span(f"{i + 1:016x}", trace=trace, **CHAT))).encode())[0] == 200
        assert server.score_ready() == 12
    finally:
        server.receiver.shutdown()
        server.receiver.server_close()
        server.close_run()
        server.close()
    results = {r.id: r for r in stored(tmp_path, server.run_id)}
    judged = {t for t in ids if sampled(t, 0.5)}
    assert 0 < len(judged) < 12 and set(results) == set(ids)
    for trace_id, r in results.items():
        assert r.metrics["latency_score"].score is not None
        if trace_id in judged:
            assert r.metrics["agent_tone"].score == 1.0 and r.metrics["agent_tone"].judge_calls == 1
        else:
            assert "agent_tone" not in r.metrics
    assert len(judge_server.requests) == len(judged)


def test_a_failed_write_is_recovered_as_after_a_crash(make: Any, tmp_path: Path) -> None:
    """The store refuses a batch (disk full, locked): nothing buffered is written later on top of the
    rescored traces, and nothing is lost."""
    server = make()
    for i in (1, 2, 3):
        assert post(server.url, json.dumps(export(span(f"{i:016x}", trace=f"{i:032x}", **CHAT))).encode())[0] == 200
    server.settings.batch = 2
    assert server.score_ready() == 2  # written
    def refuse(**columns: Any) -> None:
        raise OSError("disk full")

    server.recorder.flush = refuse
    with pytest.raises(OSError):
        server.score_ready()  # the third trace: scored, buffered, not written
    assert server.journal.counts()["scoring"] == 1
    server._reset()  # what the scorer thread does after a failed pass
    assert server.journal.counts()["open"] == 1
    assert server.score_ready() == 1
    server.recorder.flush()
    assert sorted(r.id for r in stored(tmp_path, server.run_id)) == [f"{i:032x}" for i in (1, 2, 3)]


def test_openinference_spans_are_assembled_by_their_convention(make: Any, tmp_path: Path) -> None:
    server = make()
    llm = span("00000000000000a9", **{"openinference.span.kind": "LLM",
                                      "llm.input_messages.0.message.role": "user",
                                      "llm.input_messages.0.message.content": "Capital of France?",
                                      "llm.output_messages.0.message.role": "assistant",
                                      "llm.output_messages.0.message.content": "Paris."})
    assert post(server.url, json.dumps(export(llm)).encode())[0] == 200
    assert server.score_ready() == 1
    server.recorder.flush()
    [trace] = RunStore(tmp_path / "runs.sqlite3").traces(server.run_id).values()
    assert [(t.input, t.output) for t in trace.turns] == [("Capital of France?", "Paris.")]


@functools.cache
def _base() -> bytes:
    return _sdk_request()[0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_bytes_are_read_or_refused_with_a_located_error(data: Any) -> None:
    """Random bytes, and valid exports with bytes flipped, cut or inserted: a DataError or spans, nothing else."""
    base = _base()
    if data.draw(st.booleans()):
        buf = bytearray(base)
        for _ in range(data.draw(st.integers(1, 8))):
            i = data.draw(st.integers(0, len(buf) - 1))
            buf[i] = data.draw(st.integers(0, 255))
        raw = bytes(buf[:data.draw(st.integers(0, len(buf)))])
    else:
        raw = data.draw(st.binary(max_size=300))
    try:
        export_ = decode_export(raw)
    except DataError as exc:
        assert exc.field and exc.field.startswith("resourceSpans")
        return
    journal_rows(export_, "request 1")  # readable or refused span by span: never raises


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                         st.sampled_from(["resourceSpans", "scopeSpans", "spans", "traceId", "spanId", "resource",
                                          "attributes", "key", "value", "stringValue", "events", "status", "x"]),
                         inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(value=_JSON)
def test_any_json_is_read_or_refused_span_by_span(value: Any) -> None:
    rows, problems = journal_rows(value, "request 1")
    assert all(p.startswith("request 1: ") for p in problems)
    assert all(len(r[0]) == 32 and len(r[1]) == 16 for r in rows)


def test_one_journal_serves_one_running_receiver(make: Any, tmp_path: Path) -> None:
    from assay.errors import ConfigError

    first = make()
    with pytest.raises(ConfigError, match=f"in use by a running assay serve \\(run {first.run_id}\\)"):
        make()


class _Hook:
    """A webhook receiver on 127.0.0.1 that records each POST."""

    def __init__(self) -> None:
        import http.server
        import threading

        hook = self
        self.bodies: list[dict[str, Any]] = []
        self.got = threading.Event()

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                hook.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(204)
                self.end_headers()
                hook.got.set()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


def _baseline(tmp_path: Path) -> str:
    """A finished run in the store with 8 of 10 traces passing latency_score."""
    import assay
    traces = [{"id": f"b{i}", "turns": [{"input": "q", "output": "a"}], "latency_ms": 100 if i < 8 else 20_000}
              for i in range(10)]
    result = assay.evaluate(traces, ["latency_score"], store=tmp_path / "runs.sqlite3", name="baseline")
    assert (result.run.n_passed, result.run.n_failed) == (8, 2)
    return result.run.run_id


def _send(server: Server, first: int, n: int, latency_ns: int) -> None:
    for i in range(first, first + n):
        sp = span(f"{i:016x}", trace=f"{i:032x}", end=1_000_000_000 + latency_ns, **CHAT)
        assert post(server.url, json.dumps(export(sp)).encode())[0] == 200


def test_an_alert_fires_once_when_the_live_pass_rate_falls_below_the_baseline(make: Any, tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    hook = _Hook()
    try:
        server = make(alert_baseline=baseline, alert_webhook=hook.url)
        _send(server, 1, 3, 10**8)  # passing: no alert
        server.score_ready()
        assert server.alert is not None and server.alert.fired is None
        fired_at = None
        for k in range(40):  # then every trace fails (10 s against a 2 s budget)
            _send(server, 100 + k, 1, 10 * 10**9)
            server.score_ready()
            if server.alert.fired is not None and fired_at is None:
                fired_at = server.alert.seq.n
        assert fired_at is not None and fired_at < 43
        assert hook.got.wait(60) and len(hook.bodies) == 1  # once, not on every later batch
        body = hook.bodies[0]
        assert body["baseline_run_id"] == baseline and body["baseline_pass_rate"] == 0.8
        assert body["n_traces"] == fired_at and body["interval"][1] < 0.8
        assert any("ALERT" in line for line in make.lines)
        server.receiver.shutdown()
        server.receiver.server_close()
        server.close_run()
        server.close()
        again = make(alert_baseline=baseline, alert_webhook=hook.url)  # a restart: remembered, not repeated
        assert again.alert is not None and again.alert.fired == body
        _send(again, 500, 3, 10 * 10**9)
        again.score_ready()
        assert len(hook.bodies) == 1 and again.alert.seq.n == 46
    finally:
        hook.server.shutdown()
        hook.server.server_close()


def test_no_alert_while_the_pass_rate_holds(make: Any, tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    server = make(alert_baseline=baseline)
    for k in range(60):  # 4 of 5 passing, as the baseline, checked after every trace
        _send(server, k + 1, 1, 10**8 if k % 5 else 10 * 10**9)
        server.score_ready()
    assert server.alert is not None and server.alert.fired is None and server.alert.seq.n == 60
    assert server.status()["alert"]["fired"] is None
