"""Per-trace cost of the tool-calling metrics on one hostile trace, from 1,000 to 1,000,000 calls.

tool_sequence_correctness scores up to 1,000,000 x 1,000,000 calls (MAX_LCS_CELLS), 64 pairs to a
machine word; a shuffled 20,000-call trace takes about a tenth of a second.

tool_sequence_correctness (LCS) and parameter_quality (argument matching) were quadratic: one
trace with 8,000 calls took 7.9 s and 1.85 s, and 1M calls would have taken hours. Now the LCS
runs bit-parallel on what differs after the common start and end (beyond MAX_LCS_CELLS it scores
invalid_data), and parameter matching finds exact matches through an index and weighs at most
MATCH_CANDIDATES calls per shared argument value otherwise: linear, never refused (it refused
beyond 300,000 comparisons before, and cost 3.8 -> 30 us per call from 100 to 5,000 calls). This prints CPU seconds per trace for each shape and size, and
the ratio to the 1,000-call time: bounded means the largest sizes stay within a few seconds.

Shapes: 'same' (calls exactly as expected), 'one-off' (one wrong call in the middle),
'reversed' (expected order reversed), 'shuffled' (20 tool names, random order, differing
arguments), 'one-name' (every call the same tool, every argument different).

    python benchmarks/metric_cost.py                 # up to 1,000,000 calls
    python benchmarks/metric_cost.py --max 100000
"""

from __future__ import annotations

import argparse
import random
import time

from assay.metrics import REGISTRY, MetricContext
from assay.model import Trace

METRICS = ("tool_sequence_correctness", "parameter_quality", "tool_selection_accuracy")


def make(shape: str, n: int, rng: random.Random) -> Trace:
    names = [f"tool_{i % 20}" for i in range(n)]
    expected = [{"name": nm, "arguments": {"i": i}} for i, nm in enumerate(names)]
    if shape == "same":
        called = [dict(e) for e in expected]
    elif shape == "one-off":
        called = [dict(e) for e in expected]
        called[n // 2] = {"name": "other", "arguments": {"i": -1}}
    elif shape == "reversed":
        called = list(reversed(expected))
    elif shape == "shuffled":
        called = [{"name": c["name"], "arguments": {"i": c["arguments"]["i"] + 1}} for c in expected]
        rng.shuffle(called)
    else:  # one-name
        expected = [{"name": "t", "arguments": {"i": i, "k": 0}} for i in range(n)]
        called = [{"name": "t", "arguments": {"i": -i - 1, "k": 0}} for i in range(n)]
    return Trace.model_validate({"id": f"{shape}-{n}", "turns": [{"input": "go", "tool_calls": called}],
                                 "expected": {"tool_calls": expected}})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max", type=int, default=1_000_000)
    args = ap.parse_args()
    sizes = [n for n in (1_000, 10_000, 20_000, 100_000, 1_000_000) if n <= args.max]
    rng = random.Random(7)
    metrics = {name: REGISTRY.create(name) for name in METRICS}
    print(f"{'shape':<10} {'calls':>9}  " + "  ".join(f"{m:>27}" for m in METRICS))
    base: dict[tuple[str, str], float] = {}
    for shape in ("same", "one-off", "reversed", "shuffled", "one-name"):
        for n in sizes:
            trace = make(shape, n, rng)
            cells = []
            for name, m in metrics.items():
                ctx = MetricContext(trace)
                t = time.process_time()
                r = m.score(ctx)
                dt = time.process_time() - t
                base.setdefault((shape, name), dt)
                outcome = "invalid" if getattr(r, "score", None) is None else f"{r.score:.3f}"
                cells.append(f"{dt:8.3f} s x{dt / max(base[(shape, name)], 1e-6):7.1f} {outcome:>7}")
            print(f"{shape:<10} {n:>9,}  " + "  ".join(f"{c:>27}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
