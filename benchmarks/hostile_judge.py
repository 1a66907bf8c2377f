"""Peak RSS and wall time of ``assay run`` against a hostile judge server.

A broken or malicious OpenAI-compatible server can send a gzip bomb (2 GiB of JSON in ~2 MB on
the wire), a chunked body without end, a ``Content-Length`` of 2 GB, header lines without end, or
a body that trickles in forever. Each case runs the real CLI in a fresh process (one trace, one
judge metric, ``--timeout 10 --retries 0 --no-cache --no-store``) against the scripted server in
this process, through the loopback client (``127.0.0.1``) and through httpx (the same server
reached as ``[::ffff:127.0.0.1]``, which assay does not treat as loopback), and prints the
child's peak RSS and wall time; a first run with a good reply gives the start-up to subtract. The
bounds (issue #28): under 300 MB, and the call over within the timeout plus 2 s, whatever the
server sends.

    python benchmarks/hostile_judge.py [--timeout 10]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))
from deterministic import _load  # noqa: E402
from tests.support.judge_server import JudgeServer, hostile, obj  # noqa: E402

CASES = ("baseline", "gzip_bomb", "endless_body", "huge_length", "endless_headers", "trickle")


def run_child(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, the last line of stderr) of ``cmd``; exit 3 (nothing scored) expected."""
    import subprocess
    import time

    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    lines = (proc.stderr.read().decode(errors="replace") if proc.stderr else "").strip().splitlines()
    why = next((line for line in lines if line.startswith("judge ")), lines[-1] if lines else "")
    return wall, usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024), why


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args()
    traces = ROOT / "examples" / "calibration" / "traces.jsonl"
    print(f"assay run, 1 trace, --timeout {args.timeout:g}; {_load()}")
    print(f"{'case':<16} {'client':<9} {'peak RSS':>9} {'wall':>7}  bound")
    worst_rss, worst_over, start = 0.0, -1e9, {}
    with tempfile.TemporaryDirectory() as tmp, JudgeServer() as server:
        first = next(iter(open(traces)))
        one = Path(tmp) / "one.jsonl"
        one.write_text(first)
        os.environ.update(ASSAY_CACHE_DIR=str(Path(tmp) / "cache"), ASSAY_STORE=str(Path(tmp) / "runs.sqlite3"))
        for case in CASES:
            for client, host in (("loopback", "127.0.0.1"), ("httpx", "[::ffff:127.0.0.1]")):
                server.push(obj({"score": 1, "reason": "ok"}) if case == "baseline" else
                            hostile(case, 2 * 2**30 if case != "huge_length" else 2 * 10**9))
                url = f"http://{host}:{server.port}/v1"
                cmd = [sys.executable, "-m", "assay", "run", str(one), "-m", "resolution", "--judge",
                       f"openai-compatible:m@{url}", "--timeout", f"{args.timeout:g}", "--retries", "0",
                       "--no-cache", "--no-store", "-q", "--no-progress"]
                wall, rss, why = run_child(cmd)
                if case == "baseline":
                    start[client] = wall
                    print(f"{case:<16} {client:<9} {rss:>6.0f} MB {wall:>6.2f}s  (start-up, a good reply)")
                    continue
                after = wall - start[client]  # the call's own time: the process less a good run's
                ok = rss < 300 and after < args.timeout + 2
                worst_rss, worst_over = max(worst_rss, rss), max(worst_over, after - args.timeout)
                print(f"{case:<16} {client:<9} {rss:>6.0f} MB {wall:>6.2f}s  {'ok' if ok else 'OVER'}  "
                      f"{why.partition('errored 1: ')[2][:90]}")
    print(f"worst: {worst_rss:.0f} MB peak; the call {worst_over:+.2f} s against the timeout (after start-up)")


if __name__ == "__main__":
    main()
