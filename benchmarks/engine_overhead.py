"""The engine's own CPU per trace on the async (judge) path: an async metric that answers at once.

What is left is the engine's part of every judged trace: reading the record, the trace's task,
scoring its metrics' phases, grouping and totals, and handing the result to a synchronous caller
(``Evaluation.run`` drives the event loop). Each version runs in a fresh child process (the least
CPU of ``--repeat`` runs of ``--traces`` two-turn traces, intervals on, a cancel event as the CLI
sets one); ``--baseline SRC`` times another ``src`` folder beside this checkout, alternating.

    python benchmarks/engine_overhead.py [--traces 20000] [--repeat 3] [--baseline /tmp/base/src]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

CHILD = r'''
import asyncio, sys, threading, time
from dataclasses import dataclass
from assay import Evaluation, MetricContext
from assay.metrics import Registry, metric

reg = Registry()

@metric("instant", dimension="response_quality", registry=reg)
@dataclass(frozen=True, kw_only=True)
class Instant:
    threshold: float = 0.5

    async def score(self, ctx: MetricContext):
        await asyncio.sleep(0)  # one suspension, as a judge call has
        return ctx.result(1.0)

n, repeat = int(sys.argv[1]), int(sys.argv[2])
traces = [{"id": f"t{i}", "turns": [{"input": f"q{i}", "output": f"a{i}"}, {"input": "more?", "output": "no"}]}
          for i in range(n)]
best = float("inf")
for _ in range(repeat):
    evaluation = Evaluation(["instant"], registry=reg, cancel=threading.Event())
    started = time.process_time()
    result = evaluation.run(traces)
    best = min(best, time.process_time() - started)
    assert result.run.n_traces == n
print(best / n)
'''


def per_trace(source: str | None, n: int, repeat: int) -> float:
    env = dict(os.environ)
    if source:
        env["PYTHONPATH"] = source
    done = subprocess.run([sys.executable, "-c", CHILD, str(n), str(repeat)], env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    return float(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", metavar="SRC", default=None)
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    print("load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    versions = [("this checkout", here)] + ([(f"baseline {args.baseline}", str(Path(args.baseline).resolve()))]
                                            if args.baseline else [])
    best: dict[str, float] = {}
    for _ in range(2):  # alternating, so that load changes hit both alike
        for label, source in versions:
            best[label] = min(best.get(label, float("inf")), per_trace(source, args.traces, args.repeat))
    for label, _ in versions:
        print(f"{label}: {best[label] * 1e6:.1f} us of engine CPU per trace")
    if args.baseline:
        print(f"ratio {best[versions[0][0]] / best[versions[1][0]]:.2f}")


if __name__ == "__main__":
    main()
