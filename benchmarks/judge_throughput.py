"""Judge throughput: 200 two-turn conversations, one judge call each, at 100 ms judge latency.

Serves replies from the test suite's scripted OpenAI-compatible server (nothing leaves the
machine), sends every request through the full default stack (cache disabled) and compares wall
time with the ideal ``calls x latency / concurrency``. Target: <= 1.3x ideal at default settings.
eval_lib's sequential loop needs ~21.7 s for the same workload.

The server runs in a child process, as a real judge server would be elsewhere: in-process, its
sixteen threads would compete with the judge stack for the GIL and the figure would measure them.
Each configuration runs ``--repeat`` times; the best run is the least noisy estimate of the stack's
own overhead (as with timeit), and the median is printed too.

    python benchmarks/judge_throughput.py [--conversations 200] [--latency 0.1] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

import pydantic

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support

from assay.judge import Fence, JudgeRequest, make_judge  # noqa: E402
from tests.support.judge_server import JudgeServer, delayed, obj  # noqa: E402

RUBRIC = ("You grade whether the assistant achieved the user's goal over the conversation. Score 1 if fully "
          "achieved, 0 if not, in between for partial success, and give a one-sentence reason.")


class GoalVerdict(pydantic.BaseModel):
    score: float = pydantic.Field(ge=0, le=1)
    reason: str


def conversations(n: int) -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": f"Book a table for {i % 6 + 2} people on day {i}."},
             {"role": "assistant", "content": f"Which restaurant would you like for day {i}?"},
             {"role": "user", "content": "The Italian place near the station, 7 pm."},
             {"role": "assistant", "content": f"Done: table for {i % 6 + 2} at 7 pm on day {i}, ref R{i:04d}."}]
            for i in range(n)]


def judge_request(i: int, conversation: list[dict[str, str]]) -> JudgeRequest:
    """What a goal-achievement metric sends: the rubric, then the fenced transcript."""
    fence = Fence.for_seed("goal_achievement@1", f"conv-{i}", 0)
    transcript = "\n".join(f"{turn['role']}: {turn['content']}" for turn in conversation)
    return JudgeRequest(
        messages=({"role": "system", "content": f"{RUBRIC}\n{fence.notice()}"},
                  {"role": "user", "content": fence.wrap(transcript, "conversation")}),
        schema=GoalVerdict, key="goal_achievement@1")


async def run(judge, requests: list[JudgeRequest]) -> list:
    # Once the engine lands: await assay.aevaluate(traces, ["goal_achievement"], judge=judge)
    return await asyncio.gather(*(judge.judge(r) for r in requests))


def serve(latency: float, conn) -> None:
    """Child process: run the scripted server until told to stop, then report what it saw."""
    reply = delayed(obj({"score": 1.0, "reason": "The booking was confirmed with a reference."}), latency)
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
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(args.latency, child), daemon=True)
    server.start()
    url = parent.recv()
    options = {"cache": False} | ({"concurrency": args.concurrency} if args.concurrency else {})
    limit = args.concurrency or 16
    requests = [judge_request(i, c) for i, c in enumerate(conversations(args.conversations))]
    walls = []
    try:
        for attempt in range(args.repeat):
            judge = make_judge(f"openai-compatible:bench-judge@{url}", **options)  # built outside the clock
            started = time.perf_counter()
            verdicts = asyncio.run(run(judge, requests))
            walls.append(time.perf_counter() - started)
            parent.send("reset")
            seen, server_peak = parent.recv()
            stats, errors = judge.stats, sum(v.error is not None for v in verdicts)
            ideal = stats.calls * args.latency / limit
            print(f"run {attempt + 1}: {walls[-1]:.3f} s, {walls[-1] / ideal:.2f}x ideal, {stats.calls} calls "
                  f"({seen} at the server, {errors} errors), peak concurrency {stats.peak_concurrency} "
                  f"(server {server_peak})")
    finally:
        parent.send("stop")
        server.join(timeout=5)

    ideal = args.conversations * args.latency / limit
    best, median = min(walls), statistics.median(walls)
    print(f"conversations      {args.conversations} x 1 judge call, {args.latency * 1000:.0f} ms latency, "
          f"concurrency {limit}")
    print(f"ideal              {ideal:.3f} s (calls x latency / concurrency)")
    print(f"wall time          best {best:.3f} s, median {median:.3f} s")
    print(f"ratio to ideal     best {best / ideal:.2f}x, median {median / ideal:.2f}x (target <= 1.30x)")
    print(f"tokens per run     {stats.input_tokens} in, {stats.output_tokens} out")
    return 0 if errors == 0 and best / ideal <= 1.3 else 1


if __name__ == "__main__":
    sys.exit(main())
