"""Peak RSS, wall time and trace size of ``assay collect`` against a flooding agent.

A ``cmd:`` agent answers every call with one JSON line of ``--calls`` tool calls (250,000 make
~14.5 MB), whatever it is sent, so each step of the turn asks for them all again (issue #38:
4.27 GB, 233 s and a 204 MB trace before the bounds). The real CLI runs in a fresh process
(one task, one trial, ``--retries 0 --no-cache``); a first run with a one-line answer gives the
start-up to compare with. Run it with the ``PYTHONPATH`` of the code to measure.

    python benchmarks/collect_flood.py [--calls 250000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

AGENT = """import json, sys
calls = int(sys.argv[1])
line = json.dumps({"content": "", "tool_calls": [{"id": f"c{i}", "name": "lookup", "arguments": {"q": i}}
                                                  for i in range(calls)]}) if calls else json.dumps("done")
for _ in sys.stdin:
    sys.stdout.write(line + "\\n")
    sys.stdout.flush()
"""


def run_child(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, the last line of stderr) of ``cmd``."""
    import subprocess
    import time

    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ)
    err = proc.stderr.read() if proc.stderr else b""
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    lines = err.decode(errors="replace").strip().splitlines()
    return wall, usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024), (lines or [""])[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=250_000)
    args = parser.parse_args()
    print(f"assay collect, 1 task, a cmd: agent asking {args.calls:,} tool calls per reply; load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    with tempfile.TemporaryDirectory() as tmp:
        agent, tasks = Path(tmp) / "agent.py", Path(tmp) / "tasks.jsonl"
        agent.write_text(AGENT)
        tasks.write_text(json.dumps({"id": "flood", "input": "hi", "tools": [
            {"name": "lookup", "parameters": {"type": "object"}, "default": "ok"}]}) + "\n")
        for label, calls in (("one-line answer", 0), ("flood", args.calls)):
            out = Path(tmp) / f"{calls}.jsonl"
            cmd = [sys.executable, "-m", "assay", "collect", str(tasks), "--agent",
                   f"cmd:{sys.executable} {agent} {calls}", "-o", str(out), "--retries", "0", "--no-cache",
                   "--no-progress", "--timeout", "600"]
            wall, rss, said = run_child(cmd)
            size = out.stat().st_size / 2**20 if out.exists() else 0.0
            print(f"{label:<16} peak RSS {rss:>7.0f} MB  wall {wall:>7.2f} s  trace {size:>8.2f} MB  {said[:100]}")


if __name__ == "__main__":
    main()
