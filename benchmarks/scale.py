"""Scaling out on Dask: speed-up over one process, and a check that the numbers do not move.

Two workloads, each timed in one process (``Evaluation.run``) and on a LocalCluster with 1, 2
(and, with ``--workers 1 2 4``, 4) single-threaded worker processes:

(a) deterministic: N small traces (``deterministic.make_small_traces``, ~800 bytes, the five
    metrics of a hand-written script) in one JSON Lines file, split into byte-range shards;
(b) judge-bound: M traces scored by ``answer_relevance`` against the scripted OpenAI-compatible
    server (tests/support/judge_server.py, in its own process, no latency: the judge stack's own
    CPU work - request building, fencing, parsing, verdict validation - is what a process
    saturates on).

Each line prints wall seconds, traces/s and the speed-up over one process, and whether the
summaries and the statistics block (intervals, pass@k) are identical to the single-process run's.
Cluster start-up is reported separately and not counted. On a 2-core machine 2 workers is the
honest maximum; the driver shares those cores.

    python benchmarks/scale.py --n 1000000 --judged 3000
    python benchmarks/scale.py --n 50000 --judged 600 --workers 1 2 4
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from deterministic import SMALL_METRICS, make_small_traces  # noqa: E402

from assay import Evaluation  # noqa: E402
from assay.engine._dask import DaskExecutor  # noqa: E402
from assay.engine._spec import JudgeSpec, RunSpec  # noqa: E402


def _digest(result) -> tuple:
    return ({k: s.to_dict() for k, s in result.summary.items()}, result.statistics,
            result.run["n_traces"], result.run["n_passed"])


def _cluster(n: int):
    import distributed

    t = time.perf_counter()
    cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                       host="127.0.0.1", silence_logs=40)
    client = distributed.Client(cluster)
    return cluster, client, time.perf_counter() - t


def deterministic(path: Path, n: int, workers: list[int]) -> bool:
    if not path.exists():
        make_small_traces(path, n)
    size = path.stat().st_size
    print(f"(a) deterministic: {n} small traces, {size / 1e6:.0f} MB, metrics {', '.join(SMALL_METRICS)}")
    t = time.perf_counter()
    single = Evaluation(list(SMALL_METRICS)).run(str(path), keep_traces=False)
    base = time.perf_counter() - t
    print(f"    1 process        {base:8.1f} s  {n / base:9.0f} traces/s  1.00x")
    ok = True
    for w in workers:
        cluster, client, startup = _cluster(w)
        try:
            t = time.perf_counter()
            dist = Evaluation(list(SMALL_METRICS)).run(str(path), keep_traces=False, executor=DaskExecutor(client))
            took = time.perf_counter() - t
        finally:
            client.close()
            cluster.close()
        same = _digest(dist) == _digest(single)
        ok &= same
        print(f"    dask {w} worker{'s' if w > 1 else ' '}   {took:8.1f} s  {n / took:9.0f} traces/s  {base / took:4.2f}x  "
              f"shards {dist.run['executor']['shards']}, cluster start {startup:.1f} s, "
              f"summaries {'identical' if same else 'DIFFER'}")
    return ok


_SERVER = """
import sys
sys.path.insert(0, sys.argv[1])
from tests.support.judge_server import JudgeServer, obj
server = JudgeServer(lambda req: obj({"evidence": ["Water vapour condenses"], "reasoning": "on topic", "score": 4}))
server.start()
print(server.url, flush=True)
for line in sys.stdin:  # 'peak': print the most requests in flight since the last 'peak', and reset
    print(server.peak, len(server.requests), flush=True)
    server.reset()
server.stop()
"""


def judged(m: int, workers: list[int], concurrency: int) -> bool:
    """The scripted server runs in its own process, so it does not share the driver's GIL."""
    import subprocess

    from assay.judge import make_judge

    data = [{"id": f"r{i}", "task_id": f"q{i % 50}",
             "turns": [{"input": f"What causes rain? (case {i})", "output": "Water vapour condenses into droplets."}]}
            for i in range(m)]
    print(f"(b) judge-bound: {m} traces x answer_relevance, scripted server (own process), concurrency "
          f"{concurrency}, no cache")
    server = subprocess.Popen([sys.executable, "-c", _SERVER, str(ROOT)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)

    def peak() -> str:
        server.stdin.write("peak\n")
        server.stdin.flush()
        top, n = server.stdout.readline().split()
        return f"server peak {top}, {n} calls"

    ok = True
    try:
        spec = f"openai-compatible:scripted@{server.stdout.readline().strip()}"
        options = {"cache": False, "concurrency": concurrency}
        t = time.perf_counter()
        single = Evaluation(["answer_relevance"], judge=make_judge(spec, **options)).run(data, keep_traces=False)
        base = time.perf_counter() - t
        print(f"    1 process        {base:8.1f} s  {m / base:9.0f} traces/s  1.00x  {peak()}")
        for w in workers:
            cluster, client, _ = _cluster(w)
            try:
                dist = Evaluation.from_spec(RunSpec(metrics=["answer_relevance"], judge=JudgeSpec.of(spec, options)))
                t = time.perf_counter()
                out = dist.run(data, keep_traces=False, executor=DaskExecutor(client))
                took = time.perf_counter() - t
            finally:
                client.close()
                cluster.close()
            same = _digest(out) == _digest(single)
            ok &= same
            print(f"    dask {w} worker{'s' if w > 1 else ' '}   {took:8.1f} s  {m / took:9.0f} traces/s  "
                  f"{base / took:4.2f}x  {peak()} (limit {concurrency}), shards {out.run['executor']['shards']}, "
                  f"summaries {'identical' if same else 'DIFFER'}")
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200_000, help="small traces for (a); 0 skips it")
    ap.add_argument("--judged", type=int, default=1000, help="judged traces for (b); 0 skips it")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--out", type=Path, default=None, help="trace file for (a) (kept; reused if it exists)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.out or Path(tmp) / "small.jsonl"
        ok = deterministic(path, args.n, args.workers) if args.n else True
        if args.judged:
            ok &= judged(args.judged, args.workers, args.concurrency)
    print("all summaries identical to the single-process runs" if ok else "SUMMARIES DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
