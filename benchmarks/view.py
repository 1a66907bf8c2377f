"""``assay view`` on a big store: time to serve the runs page and a trace page, and the server's memory.

Builds (once, in a temp dir, or at ``--store PATH`` when it does not exist yet) a store of ``--runs``
runs x ``--traces`` traces x 10 metrics (default 1,000 x 100 x 10 = 1,000,000 metric results)
with the store's own writer (``RunStore.start`` -> ``RunRecorder``: compact rows in blocks, the
input traces of failed traces kept, each run's summary document), ten run names with tags. Then
it starts ``assay view --no-open --port 0`` in a child process and times, over HTTP from this
process (each page ``--repeat`` times; median and worst reported, the first request apart):

- the runs page (``/``), its second page and a name filter, 
- a failing trace's page in a run in the middle of the store,
- a run's page (it reads the whole run: 100 traces here), the trend of one name (with its
  compare markers: 8 pairs of runs compared), and with ``--big-run N`` the page of one run of N
  traces (what grows with a run's size) and a failing trace near its end,

and the server's resident memory (VmRSS now, VmHWM its peak) after all of it.
Targets (issue #44): runs page < 0.3 s, trace page < 0.2 s, RSS < 200 MB.

    python benchmarks/view.py                     # 1,000 runs x 100 traces x 10 metrics
    python benchmarks/view.py --runs 100          # a quicker look
"""

from __future__ import annotations

import argparse
import http.client
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from assay.engine._aggregate import SummaryBuilder
from assay.model import MetricResult, RunResult, Trace, TraceResult
from assay.store import RunStore

N_METRICS = 10
METRICS = [{"name": f"metric_{k}", "version": "1", "dimension": "custom", "params": {"threshold": 0.7}}
           for k in range(N_METRICS)]


def templates(n: int) -> tuple[list[TraceResult], list[Trace]]:
    """n traces' results (every 7th fails one metric, with a reason) and their input traces."""
    results, traces = [], []
    for i in range(n):
        metrics = {}
        for k in range(N_METRICS):
            fail = i % 7 == 3 and k == i % N_METRICS
            score = 0.35 if fail else 0.75 + 0.2 * ((i * 31 + k * 17) % 100) / 100
            metrics[f"metric_{k}"] = MetricResult(name=f"metric_{k}", score=score, passed=score >= 0.7, threshold=0.7,
                                                  reason=f"metric_{k} scored {score:.2f} on trace {i}" if fail else "")
        results.append(TraceResult(id=f"t{i}", task_id=f"task{i // 4}", trial=i % 4, metrics=metrics,
                                   passed=all(m.passed for m in metrics.values()), source=f"in.jsonl:{i + 1}"))
        traces.append(Trace(id=f"t{i}", turns=[{"input": f"question {i} " * 20, "output": f"answer {i} " * 40,
                                                "tool_calls": [{"name": "lookup", "arguments": {"q": i},
                                                                "result": {"rows": list(range(20))}}]}]))
    return results, traces


def build(path: Path, runs: int, n: int, name: str | None = None) -> float:
    started = time.perf_counter()
    store = RunStore(path)
    results, traces = templates(n)
    builder = SummaryBuilder({m["name"]: "custom" for m in METRICS}, {m["name"]: 0.7 for m in METRICS})
    for t in results:
        builder.add(t.metrics)
    summary = builder.finish()
    for r in range(runs):
        rec = store.start(inputs=[{"path": "in.jsonl", "sha256": None, "bytes": None}], metrics=METRICS,
                          config={"name": name or f"agent-{r % 10}", "tags": {"model": f"v{r % 3}",
                                                                               "week": str(r // 70)}},
                          batch_size=1000, flush_interval_s=3600)
        for t, tr in zip(results, traces, strict=True):
            rec.add(t, tr if t.passed is False else None)
        rec.finish(RunResult([], summary, {"n_traces": n, "n_passed": sum(t.passed is True for t in results),
                                           "n_failed": sum(t.passed is False for t in results),
                                           "metrics": METRICS, "name": name or f"agent-{r % 10}"}))
        if (r + 1) % 100 == 0:
            print(f"  built {r + 1:,} runs ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return time.perf_counter() - started


def fetch(port: int, path: str) -> tuple[float, int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    t0 = time.perf_counter()
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    elapsed = time.perf_counter() - t0
    conn.close()
    if r.status != 200:
        raise SystemExit(f"GET {path}: HTTP {r.status}: {body[:300]!r}")
    return elapsed, r.status, body


def memory(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--traces", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--store", type=Path, default=None, help="build the store here (kept), or reuse it if it exists")
    ap.add_argument("--big-run", type=int, default=0, metavar="N",
                    help="also store one run of N traces (named 'big') and time its run page and a trace in it")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="assay-view-bench-"))
    path = args.store or tmp / "runs.sqlite3"
    if not path.exists():
        secs = build(path, args.runs, args.traces)
        print(f"store: {args.runs:,} runs x {args.traces} traces x {N_METRICS} metrics = "
              f"{args.runs * args.traces * N_METRICS:,} metric results, built in {secs:.1f} s, "
              f"{path.stat().st_size / 1e6:.0f} MB")
    if args.big_run:
        secs = build(path, 1, args.big_run, name="big")
        print(f"plus one run 'big' of {args.big_run:,} traces ({args.big_run * N_METRICS:,} metric results), "
              f"built in {secs:.1f} s")
    server = subprocess.Popen([sys.executable, "-m", "assay", "view", "--store", str(path), "--port", "0", "--no-open"],
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()  # type: ignore[union-attr]
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if not m:
            raise SystemExit(f"the viewer did not start: {line}")
        port = int(m[1])
        print(f"viewer pid {server.pid}, memory after start: {memory(server.pid)['VmRSS']:.0f} MB")
        _, _, body = fetch(port, "/?name=agent-5")
        mid = re.findall(rb'href="/runs/([0-9a-z]+)"', body)[len(re.findall(rb'href="/runs/([0-9a-z]+)"', body)) // 2]
        run_id = mid.decode()
        failing = next(i for i in range(args.traces) if i % 7 == 3)
        pages = [("runs page /", "/", 0.3), ("runs page 2", "/?page=2", 0.3), ("runs of a name", "/?name=agent-3", 0.3),
                 ("runs by tag", "/?tag=model%3Dv1", 0.3), ("failing trace", f"/runs/{run_id}/traces/{failing}", 0.2),
                 ("a run's page", f"/runs/{run_id}", None), ("trend + 8 compares", "/?name=agent-7&metric=metric_3", None)]
        if args.big_run:
            _, _, body = fetch(port, "/?name=big")
            big = re.findall(rb'href="/runs/([0-9a-z]+)"', body)[0].decode()
            pages += [("big run's page", f"/runs/{big}", None),
                      ("big run, filtered", f"/runs/{big}?verdict=fail&page=3", None),
                      ("big run, failing trace", f"/runs/{big}/traces/{max(i for i in range(args.big_run) if i % 7 == 3)}",
                       0.2)]
        print(f"{'page':<22}{'first':>9}{'median':>9}{'worst':>9}{'target':>9}")
        for label, url, target in pages:
            first = fetch(port, url)[0]
            times = [fetch(port, url)[0] for _ in range(args.repeat)]
            verdict = "" if target is None else ("  ok" if statistics.median(times) < target else "  MISSED")
            print(f"{label:<22}{first:>9.3f}{statistics.median(times):>9.3f}{max(times):>9.3f}"
                  f"{'' if target is None else f'{target:.1f}':>9}{verdict}")
        mem = memory(server.pid)
        print(f"server memory: {mem['VmRSS']:.0f} MB resident now, {mem['VmHWM']:.0f} MB peak (target < 200 MB)")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
