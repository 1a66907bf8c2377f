"""Reading a task file whose task has many tools: time per tool as the count grows (#38 item 8).

A duplicate tool-name check that compares each name with the ones before it is quadratic: the
time per tool grows with the count. The check done in one pass keeps it flat. Prints, for each
count, the least of three reads, the time per tool, and the ratio of that time to the smallest
count's (about 1 when linear; ~N/N0 when quadratic).

    python benchmarks/task_tools.py                       # 1,000 / 10,000 / 100,000 tools
    python benchmarks/task_tools.py --counts 1000,20000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from assay._collect import load_tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1000,10000,100000")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for n in counts:
            path = Path(tmp) / f"tools-{n}.jsonl"
            path.write_text(json.dumps({"id": "t", "input": "hi", "tools": [{"name": f"t{i}"} for i in range(n)]})
                            + "\n")
            best = float("inf")
            for _ in range(3):
                started = time.perf_counter()
                assert len(load_tasks(path)[0].tools) == n
                best = min(best, time.perf_counter() - started)
            per_tool = best / n
            base = base or per_tool
            print(f"{n:>8} tools: {best:8.3f} s  {per_tool * 1e6:6.2f} us/tool  ratio to the first {per_tool / base:5.2f}")


if __name__ == "__main__":
    main()
