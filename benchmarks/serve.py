"""``assay serve`` under load: spans/s received, traces/s scored at steady state, and peak memory.

Starts ``assay serve --port 0`` (deterministic metrics: latency_score, mcp_compliance,
turn_efficiency, token_efficiency, agent_utilization) in a child process on 127.0.0.1 and sends it
OTLP protobuf exports as the OpenTelemetry SDK's exporter makes them: a template of 128 scripted
agent runs (4 GenAI spans each: invoke_agent > chat, execute_tool, chat; 512 spans, the SDK
batch processor's default export size) recorded with the SDK and encoded by its OTLP encoder,
sent again and again with fresh trace ids (the 16 id bytes replaced in the encoded body), from
``--clients`` threads, at ``--rate`` spans/s (0: as fast as the server answers; a 429/503 is
waited out as its Retry-After says). Every request stays on the loopback interface and the run
is bounded by ``--seconds``.

Reported, from the server's ``/health`` counters over the steady part (after ``--warmup`` s):
spans/s acknowledged (journalled, 200), traces/s scored (in the run store), and the server
process's peak resident memory (VmHWM). Target (issue #45): 2,000 spans/s scored with < 200 MB.

    python benchmarks/serve.py                  # 30 s, as fast as it goes
    python benchmarks/serve.py --rate 2000      # the target rate: does the scorer keep up?
    python benchmarks/serve.py --decode         # assay's protobuf reader vs the protobuf library

Needs the ``test`` extra (opentelemetry-sdk, opentelemetry-exporter-otlp-proto-http) to make the
template; the server itself needs neither.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.serve._agent import run_agent

METRICS = ["latency_score", "mcp_compliance", "turn_efficiency", "token_efficiency", "agent_utilization"]


def template(runs: int = 128) -> tuple[bytes, list[bytes]]:
    """One encoded export of ``runs`` agent runs and the trace ids (16 raw bytes) in it."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
        InMemorySpanExporter,
    )

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    ids = [bytes.fromhex(run_agent(provider.get_tracer("bench"), i)) for i in range(runs)]
    return encode_spans(memory.get_finished_spans()).SerializeToString(), ids


def vm(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS", "VmHWM")):
            key, value = line.split(":")
            out[key] = int(value.split()[0]) // 1024
    return out


def decoding() -> None:
    """assay's protobuf reader against the protobuf library (upb) on the template export."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from assay.serve import decode_export

    body, ids = template()

    def best(f: object, n: int = 20) -> float:
        times = []
        for _ in range(3):
            t = time.perf_counter()
            for _ in range(n):
                f()  # type: ignore[operator]
            times.append((time.perf_counter() - t) / n)
        return min(times)

    ours = best(lambda: decode_export(body))
    parse = best(lambda: ExportTraceServiceRequest.FromString(body))
    as_dict = best(lambda: MessageToDict(ExportTraceServiceRequest.FromString(body)))
    print(f"one export of {4 * len(ids)} spans, {len(body):,} bytes:")
    print(f"  assay's reader -> OTLP JSON shape:     {ours * 1e3:6.1f} ms ({4 * len(ids) / ours:,.0f} spans/s)")
    print(f"  protobuf (upb) parse only:             {parse * 1e3:6.2f} ms")
    print(f"  protobuf parse + MessageToDict:        {as_dict * 1e3:6.1f} ms ({as_dict / ours:.2f}x assay's)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--decode", action="store_true", help="only compare the protobuf readers, then stop")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--rate", type=float, default=0.0, help="spans/s to offer (0: as fast as answered)")
    ap.add_argument("--clients", type=int, default=2)
    args = ap.parse_args()
    if args.decode:
        decoding()
        return

    body, ids = template()
    n_spans = 4 * len(ids)
    tmp = Path(tempfile.mkdtemp(prefix="assay-serve-bench-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "assay", "serve", "--store", str(tmp / "runs.sqlite3"), "--port", "0"]
    for m in METRICS:
        cmd += ["-m", m]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    port = 0
    for line in proc.stderr:
        m = re.search(r"http://127\.0\.0\.1:(\d+)/v1/traces", line)
        if m:
            port = int(m[1])
            break
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep its pipe drained

    stop = threading.Event()
    sent = [0]
    refused = [0]
    lock = threading.Lock()
    interval = n_spans / args.rate * args.clients if args.rate else 0.0

    def client(k: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        i = 0
        next_at = time.monotonic()
        while not stop.is_set():
            i += 1
            data = body
            for j, old in enumerate(ids):  # fresh trace ids: k, i and j in the first bytes
                data = data.replace(old, k.to_bytes(2, "big") + i.to_bytes(6, "big") + j.to_bytes(2, "big") + old[10:])
            conn.request("POST", "/v1/traces", body=data, headers={"Content-Type": "application/x-protobuf"})
            r = conn.getresponse()
            r.read()
            if r.status == 200:
                with lock:
                    sent[0] += n_spans
            else:
                with lock:
                    refused[0] += 1
                stop.wait(float(r.headers.get("Retry-After") or 1))
                if r.headers.get("Connection") == "close":
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            if interval:
                next_at += interval
                stop.wait(max(0.0, next_at - time.monotonic()))

    def health() -> dict[str, int]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/health")
        return json.loads(conn.getresponse().read())

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(args.clients)]
    for t in threads:
        t.start()
    time.sleep(args.warmup)
    t0, h0 = time.monotonic(), health()
    time.sleep(args.seconds - args.warmup)
    t1, h1 = time.monotonic(), health()
    stop.set()
    for t in threads:
        t.join()
    mem = vm(proc.pid)
    proc.send_signal(2)
    proc.wait(timeout=300)
    dt = t1 - t0
    spans_s = (h1["spans"] - h0["spans"]) / dt
    traces_s = (h1["scored"] - h0["scored"]) / dt
    print(f"assay serve, {args.clients} clients, {'rate ' + str(args.rate) if args.rate else 'unthrottled'}, "
          f"{dt:.1f} s steady ({args.warmup:g} s warmup), {len(METRICS)} deterministic metrics")
    print(f"  acknowledged: {spans_s:,.0f} spans/s ({spans_s / 4:,.0f} traces/s offered)")
    print(f"  scored:       {traces_s:,.0f} traces/s = {traces_s * 4:,.0f} spans/s")
    print(f"  queue at end: {h1['pending_spans']:,} spans; refused (429/503): {refused[0]}")
    print(f"  server memory: peak {mem.get('VmHWM', 0)} MB, now {mem.get('VmRSS', 0)} MB")


if __name__ == "__main__":
    main()
