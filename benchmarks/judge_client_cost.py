"""Judge-path client cost: what assay itself spends per judge call, with a judge that answers at once.

An in-process judge function returns a fixed verdict with no latency, so the wall time is the
client's own work per call: building the prompt, fencing, the judge stack (cache lookup and
store in SQLite, retry, limits, metering), parsing, redaction, quote checks and the engine.
``--profile`` prints the top functions by cumulative time (cProfile) instead.

    python benchmarks/judge_client_cost.py [--calls 1000] [--no-cache] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path

from assay import evaluate
from assay.judge import make_judge

REPLY = json.dumps({"evidence": ["the Italian place near the station"],  # found: the quote check passes
                    "reasoning": "The booking was confirmed with a reference.", "score": 5})


async def instant(messages: list[dict]) -> str:
    return REPLY


def conversations(n: int, offset: int = 0) -> list[dict]:
    return [{"id": f"conv-{i}", "turns": [
        {"input": f"Book a table for {i % 6 + 2} people on day {i}.",
         "output": f"Which restaurant would you like for day {i}?"},
        {"input": "The Italian place near the station, 7 pm.",
         "output": f"Done: table for {i % 6 + 2} at 7 pm on day {i}, ref R{i:04d}."}]}
            for i in range(offset, offset + n)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        judge = make_judge(instant, cache=False if args.no_cache else Path(tmp) / "judge.sqlite3")
        evaluate(conversations(5, 10**6), ["holistic_llm_judge"], judge=judge)  # imports, SQLite set-up
        traces = conversations(args.calls)
        profile = cProfile.Profile() if args.profile else None
        started = time.perf_counter()
        if profile is not None:
            profile.enable()
        result = evaluate(traces, ["holistic_llm_judge"], judge=judge)
        if profile is not None:
            profile.disable()
        seconds = time.perf_counter() - started
    errors = sum(t.metrics["holistic_llm_judge"].score is None for t in result.traces)
    print(f"{args.calls} calls in {seconds:.3f} s: {1000 * seconds / args.calls:.2f} ms per call "
          f"({'no cache' if args.no_cache else 'SQLite cache'}, {errors} errors)")
    if profile is not None:
        pstats.Stats(profile, stream=sys.stdout).sort_stats("cumulative").print_stats(30)
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
