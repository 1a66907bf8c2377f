"""The loopback client against httpx for ``http://`` judges on this machine: start-up and per call.

Start-up: a fresh process imports ``assay.judge._http`` and builds one client (median of 5).
Per call: sequential POSTs to the scripted judge server on 127.0.0.1 (after 20 warm-up calls),
the loopback client measured before and after httpx, the better of the two kept. Ratios from one
run are what to read; the machine's load is printed with them.

    python benchmarks/judge_clients.py [--calls 400]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.support.judge_server import JudgeServer, obj  # noqa: E402

from assay.judge import _http  # noqa: E402


def startup(kind: str) -> float:
    args = "timeout=30, " if kind == "HttpxClient" else ""
    code = ("import time; t = time.perf_counter(); from assay.judge import _http; "
            f"_http.{kind}('http://127.0.0.1:1/v1', headers={{}}, {args}backend='b', model='m'); "
            "print(time.perf_counter() - t)")
    return statistics.median(float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                  check=True).stdout) for _ in range(5))


async def per_call(client, n: int) -> float:
    for _ in range(20):
        await client.post("/chat/completions", {"model": "m", "messages": []})
    started = time.perf_counter()
    for _ in range(n):
        await client.post("/chat/completions", {"model": "m", "messages": []})
    await client.close()
    return (time.perf_counter() - started) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    n = parser.parse_args().calls
    print("load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    with JudgeServer(default=obj({"score": 1})) as server:
        loop1 = asyncio.run(per_call(_http.LoopbackClient(server.url, headers={}, backend="b", model="m"), n))
        httpx = asyncio.run(per_call(_http.HttpxClient(server.url, headers={}, timeout=30, backend="b", model="m"), n))
        loop2 = asyncio.run(per_call(_http.LoopbackClient(server.url, headers={}, backend="b", model="m"), n))
    loop = min(loop1, loop2)
    s_loop, s_httpx = startup("LoopbackClient"), startup("HttpxClient")
    print(f"start-up (import + client): loopback {s_loop * 1000:.0f} ms, httpx {s_httpx * 1000:.0f} ms "
          f"(+{(s_httpx - s_loop) * 1000:.0f} ms)")
    print(f"per call ({n} calls): loopback {loop * 1000:.2f} ms, httpx {httpx * 1000:.2f} ms, ratio {httpx / loop:.1f}x")


if __name__ == "__main__":
    main()
