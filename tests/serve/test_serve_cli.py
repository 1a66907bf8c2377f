"""`assay serve` as a real subprocess on 127.0.0.1, fed by the OpenTelemetry SDK's OTLP/HTTP exporter."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from assay.store import RunStore

from ._agent import run_agent, tracer_provider

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

SRC = str(Path(__file__).resolve().parents[2] / "src")
METRICS = ("-m", "latency_score", "-m", "mcp_compliance", "-m", "turn_efficiency")


def start(store: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.Popen([sys.executable, "-m", "assay", "serve", "--store", str(store), "--port", "0",
                             *(args or METRICS)], env=env, stderr=subprocess.PIPE, text=True, cwd=store.parent)
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:  # the URL line follows any recovery lines
        lines.append(line)
        m = re.search(r"(http://\S+/v1/traces)", line)
        if m:
            return proc, m[1]
    proc.kill()
    raise AssertionError(f"no URL printed: {lines!r}")


def health(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url.replace("/v1/traces", "/health"), timeout=30) as r:
        return json.load(r)


def wait_scored(url: str, n: int) -> dict[str, Any]:
    """Ask until ``n`` traces are scored: bounded by a count of answers, not by seconds."""
    for _ in range(3000):
        h = health(url)
        if h["scored"] + h["issues"] >= n and h["open"] == 0 and h["scoring"] == 0:
            return h
        threading_wait(0.02)
    raise AssertionError(f"not scored: {h}")


def threading_wait(seconds: float) -> None:
    import threading
    threading.Event().wait(seconds)


def exporter(url: str) -> Any:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    return OTLPSpanExporter(endpoint=url, timeout=30)


def stop(proc: subprocess.Popen[str], how: signal.Signals = signal.SIGINT) -> str:
    proc.send_signal(how)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return err


def test_sdk_exports_a_scripted_agent_and_the_store_holds_one_scored_trace_per_run(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace.export import SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
        InMemorySpanExporter,
    )

    store = tmp_path / "runs.sqlite3"
    proc, url = start(store)
    try:
        exp = exporter(url)
        memory = InMemorySpanExporter()
        provider = tracer_provider(exp)
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        provider.add_span_processor(SimpleSpanProcessor(memory))
        ids = [run_agent(provider.get_tracer("agent"), i) for i in range(5)]
        provider.force_flush()
        h = wait_scored(url, 5)
        assert h["spans"] == 20 and h["rejected_spans"] == 0 and h["bad_requests"] == 0
        # the exporter retries an export it thinks failed: journalled as duplicates, not scored again
        assert exp.export(memory.get_finished_spans()) == SpanExportResult.SUCCESS
        h = health(url)
        assert h["duplicates"] == 20 and h["scored"] == 5
        listed = subprocess.run([sys.executable, "-m", "assay", "runs", "--store", str(store), "--json"],
                                env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True, timeout=120, check=True)
        [live] = json.loads(listed.stdout)
        assert live["status"] == "running" and live["n_traces"] == 5  # a live run, listed while it grows
    finally:
        err = stop(proc)
    assert "5 traces scored this time" in err
    result = RunStore(store).load("latest")
    assert sorted(t.id for t in result.traces) == sorted(ids)
    for t in result.traces:
        assert t.source == f"otlp {t.id}: root span ended"
        assert set(t.metrics) == {"latency_score", "mcp_compliance", "turn_efficiency"}
        assert t.metrics["latency_score"].score is not None and t.metrics["turn_efficiency"].score is not None
    stored = RunStore(store).traces("latest")
    trace = stored[f"otlp {ids[0]}: root span ended"]
    assert trace.turns[0].tool_calls[0].name == "get_weather" and trace.turns[0].output == "It is 10 C in Paris."


def test_sigkill_mid_stream_loses_no_acknowledged_span_and_scores_none_twice(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
        InMemorySpanExporter,
    )

    store = tmp_path / "runs.sqlite3"
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    ids = [run_agent(provider.get_tracer("agent"), i) for i in range(40)]
    spans = memory.get_finished_spans()
    config = tmp_path / "live.toml"
    config.write_text('metrics = ["latency_score", "turn_efficiency:threshold=0.5"]\n')
    proc, url = start(store, "--config", str(config))
    exp = exporter(url)
    sent = 0
    for i in range(0, 48, 8):  # 6 exports of 8 spans (a trace's spans straddle exports), each answered 200
        assert exp.export(spans[i:i + 8]) == SpanExportResult.SUCCESS
        sent = i + 8
    proc.send_signal(signal.SIGKILL)  # mid-stream: the scorer may be anywhere
    proc.wait(timeout=60)
    proc, url = start(store, "--config", str(config))  # the same store, so the same journal
    try:
        exp = exporter(url)
        for i in range(sent, len(spans), 8):  # the rest: what was acknowledged is not sent again
            assert exp.export(spans[i:i + 8]) == SpanExportResult.SUCCESS
        h = wait_scored(url, 0)
        assert (h["spans"], h["duplicates"]) == (len(spans) - sent, 0)
        assert exp.export(spans[:8]) == SpanExportResult.SUCCESS  # a late retry of an acknowledged export
        assert health(url)["duplicates"] == 8
    finally:
        stop(proc, signal.SIGTERM)  # as a service manager stops it
    runs = RunStore(store).runs()
    assert len(runs) == 1 and runs[0].status == "interrupted"  # one live run, resumed after the kill
    result = RunStore(store).load(runs[0].id)
    scored = [t.id for t in result.traces]
    assert {m for t in result.traces for m in t.metrics} == {"latency_score", "turn_efficiency"}  # the config's
    assert {t.metrics["turn_efficiency"].threshold for t in result.traces} == {0.5}
    assert sorted(scored) == sorted(ids)  # every trace once: none lost, none twice
    for trace in RunStore(store).traces(runs[0].id).values():  # every span of every trace: 2 chats, 1 tool
        assert len(trace.turns) == 1 and trace.turns[0].output.startswith("It is")
        assert [c.name for c in trace.turns[0].tool_calls] == ["get_weather"]


def test_off_loopback_a_token_is_printed_and_required(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite3"
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.Popen([sys.executable, "-m", "assay", "serve", "--store", str(store), "--host", "0.0.0.0",
                             "--port", "0", "-m", "latency_score"], env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    try:
        port = int(re.search(r":(\d+)/v1/traces", proc.stderr.readline())[1])  # type: ignore[index]
        token = re.search(r"Bearer (\S+)'", proc.stderr.readline())[1]  # type: ignore[index]
        url = f"http://127.0.0.1:{port}/v1/traces"

        def send(**headers: str) -> int:
            req = urllib.request.Request(url, data=b'{"resourceSpans": []}', method="POST",
                                         headers={"Content-Type": "application/json", **headers})
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    return r.status
            except urllib.error.HTTPError as e:
                return e.code

        assert send() == 401 and send(Authorization="Bearer nope") == 401
        assert send(Authorization=f"Bearer {token}") == 200
    finally:
        stop(proc)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_the_moment_the_url_is_printed_is_a_clean_stop(tmp_path: Path, how: signal.Signals) -> None:
    """A stop sent as soon as the URL shows (before the server's threads have started) exits 0, the run left
    resumable; it was a KeyboardInterrupt outside the wait, "Interrupted." and exit 130 (seen in CI)."""
    store = tmp_path / "runs.sqlite3"
    proc, _ = start(store)
    err = stop(proc, how)
    assert "assay serve: stopped; 0 spans received" in err and "Interrupted" not in err
    (run,) = RunStore(store).runs()
    assert run.status == "interrupted"


def test_a_busy_port_is_an_error_and_leaves_no_run(tmp_path: Path) -> None:
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "assay", "serve", "--store", str(tmp_path / "r.sqlite3"),
                               "--port", str(port), "-m", "latency_score"], env={**os.environ, "PYTHONPATH": SRC},
                              capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert not (tmp_path / "r.sqlite3").exists() or RunStore(tmp_path / "r.sqlite3").runs() == []


def test_alert_options_are_checked_before_serving(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SRC}
    base = [sys.executable, "-m", "assay", "serve", "--store", str(tmp_path / "r.sqlite3"), "--port", "0",
            "-m", "latency_score"]
    done = subprocess.run([*base, "--alert-webhook", "http://127.0.0.1:9/x"], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2 and "--alert-webhook needs --alert-baseline" in done.stderr
    done = subprocess.run([*base, "--alert-baseline", "nope"], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 2 and "no run 'nope'" in done.stderr
    assert not (tmp_path / "r.sqlite3").exists() or RunStore(tmp_path / "r.sqlite3").runs() == []
