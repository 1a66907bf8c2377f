"""Judge throughput: 200 two-turn conversations x one single-call conversation metric, 100 ms judge.

Serves replies from the test suite's scripted OpenAI-compatible server (nothing leaves the
machine) and scores the conversations with ``holistic_llm_judge`` through the engine and the full
default judge stack (cache disabled), comparing wall time with the ideal
``calls x latency / concurrency``. Target: <= 1.3x ideal at default settings.
eval_lib's sequential loop needs ~21.7 s for the same workload.

The server runs in a child process, as a real judge server would be elsewhere: in-process, its
sixteen threads would compete with the judge stack for the GIL and the figure would measure them.
Each configuration runs ``--repeat`` times; the best run is the least noisy estimate of the stack's
own overhead (as with timeit), and the median is printed too.

    python benchmarks/judge_throughput.py [--conversations 200] [--latency 0.1] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support

from assay import Evaluation  # noqa: E402
from assay.judge import make_judge  # noqa: E402
from tests.support.judge_server import JudgeServer, delayed, obj  # noqa: E402

METRIC = "holistic_llm_judge"


def conversations(n: int) -> list[dict]:
    """Two-turn booking conversations in assay's trace format."""
    return [{"id": f"conv-{i}", "turns": [
        {"input": f"Book a table for {i % 6 + 2} people on day {i}.",
         "output": f"Which restaurant would you like for day {i}?"},
        {"input": "The Italian place near the station, 7 pm.",
         "output": f"Done: table for {i % 6 + 2} at 7 pm on day {i}, ref R{i:04d}."}]} for i in range(n)]


def serve(latency: float, conn) -> None:
    """Child process: run the scripted server until told to stop, then report what it saw."""
    reply = delayed(obj({"evidence": [], "reasoning": "The booking was confirmed with a reference.", "score": 5}),
                    latency)
    with JudgeServer(default=reply) as server:
        conn.send(server.url)
        while conn.recv() == "reset":
            conn.send((len(server.requests), server.peak))
            server.reset()
            server.default = reply


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=None, help="default: the judge's default (16)")
    parser.add_argument("--max-concurrency", type=int, default=None,
                        help="let concurrency grow up to this (AIMD); the ideal then uses the mean concurrency")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(args.latency, child), daemon=True)
    server.start()
    url = parent.recv()
    options = {"cache": False} | ({"concurrency": args.concurrency} if args.concurrency else {}) \
        | ({"max_concurrency": args.max_concurrency} if args.max_concurrency else {})
    limit = args.concurrency or 16
    traces = conversations(args.conversations)
    walls = []
    try:
        for attempt in range(args.repeat):
            judge = make_judge(f"openai-compatible:bench-judge@{url}", **options)  # built outside the clock
            started = time.perf_counter()
            result = Evaluation([METRIC], judge=judge).run(traces)
            walls.append(time.perf_counter() - started)
            parent.send("reset")
            seen, server_peak = parent.recv()
            stats = judge.stats
            errors = sum(t.metrics[METRIC].score is None for t in result.traces)
            ideal = stats.calls * args.latency / limit
            print(f"run {attempt + 1}: {walls[-1]:.3f} s, {walls[-1] / ideal:.2f}x ideal, {stats.calls} calls "
                  f"({seen} at the server, {errors} errors), peak concurrency {stats.peak_concurrency} "
                  f"(server {server_peak}), final limit {stats.concurrency_limit}")
    finally:
        parent.send("stop")
        server.join(timeout=5)

    ideal = args.conversations * args.latency / limit
    best, median = min(walls), statistics.median(walls)
    print(f"conversations      {args.conversations} x {METRIC} (1 judge call), {args.latency * 1000:.0f} ms latency, "
          f"concurrency {limit}")
    print(f"ideal              {ideal:.3f} s (calls x latency / concurrency)")
    print(f"wall time          best {best:.3f} s, median {median:.3f} s")
    print(f"ratio to ideal     best {best / ideal:.2f}x, median {median / ideal:.2f}x (target <= 1.30x)")
    print(f"tokens per run     {stats.input_tokens} in, {stats.output_tokens} out")
    return 0 if errors == 0 and best / ideal <= 1.3 else 1


if __name__ == "__main__":
    sys.exit(main())
