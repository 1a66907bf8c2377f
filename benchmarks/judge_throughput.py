"""Judge throughput: N two-turn conversations x one single-call judge metric, 100 ms judge.

Serves replies from the test suite's scripted OpenAI-compatible server (nothing leaves the
machine) and scores the conversations with ``holistic_llm_judge``. The server runs in a child
process, as a real judge server would be elsewhere, and records when each request arrived and
when its reply left, so the figures come from what the provider saw:

- calls, the peak concurrency (the most requests in flight at once) and the mean concurrency (the
  sum of the requests' durations over the span from the first arrival to the last reply);
- the ideal ``calls x latency / peak concurrency`` and the wall time's ratio to it (target <= 1.3x
  for 1,000 calls), and the ratio to ``calls x latency / mean concurrency`` as before;
- start-up (spawn to first request) and tail (last reply to exit) in the whole-process mode;
- beside assay, a minimal client on the same server (``--minimal``, default on in the
  whole-process mode): a process that reads the same file, sends each conversation as one chat
  completion over raw asyncio HTTP/1.1 keep-alive connections, a fixed window of ``64`` (assay's
  default peak: 4 x the starting concurrency of 16) from the first request on, parses each reply's
  verdict and writes one JSON line per conversation: what the machine and the server allow;
- the speed-up over eval_lib's sequential loop, which needs 21.7 s for 200 such calls (target
  >= 15x, i.e. 200 conversations in <= 1.45 s, start-up included); for other sizes its time is
  scaled linearly (it makes one call after another).

``--whole-process`` (the default) times the real CLI as a user runs it, from spawn to exit:
``assay run FILE -m holistic_llm_judge --judge openai-compatible:...@URL`` with the default flags
(run store and judge cache on), each run in a fresh temporary HOME and data/cache dirs so nothing
is reused. ``--in-process`` times ``Evaluation(...).run`` with the judge built outside the clock
(cache off), i.e. the judge stack's own overhead without start-up.

Each size runs ``--repeat`` times, the versions alternating (this checkout, ``--baseline``, the
minimal client) so that load changes hit them alike; the best run is the least noisy estimate (as
with timeit), and the median is printed too. The load average is printed before and after.

``--slow EVERY:SECONDS`` gives the judge a latency tail, as hosted APIs have: every EVERY-th request the
server receives takes SECONDS instead of ``--latency``. The ideal is then calls x the mean latency / peak
concurrency; since results are written in input order, a slow call near the end bounds the run too (the
last arrival plus SECONDS is printed beside the wall time).

    python benchmarks/judge_throughput.py [--conversations 200 1000] [--latency 0.1] [--slow 100:2]
        [--whole-process | --in-process] [--concurrency N] [--max-concurrency N] [--repeat 3]
        [--baseline SRC] [--no-minimal]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support (imported where the server starts,
# so that the minimal client, this file run with --as-minimal-client, imports nothing but the standard library)

METRIC = "holistic_llm_judge"
MINIMAL_WINDOW = 64
"""The minimal client's fixed window: assay's default peak (GROWTH 4 x CONCURRENCY 16)."""
EVAL_LIB_200 = 21.7
"""Seconds eval_lib's sequential loop needs for 200 such conversations at 100 ms."""
# What the default run must not inherit from the caller's environment: it would point the store,
# the cache or the judge somewhere else than the fresh directories.
_CLEARED = ("ASSAY_STORE", "ASSAY_CACHE_DIR", "ASSAY_JUDGE", "ASSAY_JUDGE_BASE_URL", "ASSAY_CONFIG",
            "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME")


def conversations(n: int) -> list[dict]:
    """Two-turn booking conversations in assay's trace format."""
    return [{"id": f"conv-{i}", "turns": [
        {"input": f"Book a table for {i % 6 + 2} people on day {i}.",
         "output": f"Which restaurant would you like for day {i}?"},
        {"input": "The Italian place near the station, 7 pm.",
         "output": f"Done: table for {i % 6 + 2} at 7 pm on day {i}, ref R{i:04d}."}]} for i in range(n)]


def serve(latency: float, conn, slow: tuple[int, float] | None = None) -> None:
    """Child process: run the scripted server; on "reset", report what it saw and forget it. *slow*:
    (every, seconds): every every-th request (in the order they arrive) takes that long instead."""
    import threading

    from tests.support.judge_server import JudgeServer, delayed, obj

    verdict = obj({"evidence": [], "reasoning": "The booking was confirmed with a reference.", "score": 5})
    reply, late = delayed(verdict, latency), delayed(verdict, slow[1]) if slow else None
    lock, count = threading.Lock(), [0]

    def answer(request: dict):
        with lock:
            count[0] += 1
            nth = count[0]
        return late if slow and nth % slow[0] == 0 else reply
    with JudgeServer(answer) as server:
        conn.send(server.url)
        while conn.recv() == "reset":
            conn.send([(r.started, r.ended, r.status) for r in server.requests])
            server.reset()
            with lock:
                count[0] = 0


@dataclass(frozen=True)
class Run:
    wall: float
    calls: int            # requests the server answered
    peak: int             # the most requests in flight at once at the server
    failed: int           # ... with a status other than 200
    busy: float           # sum of the requests' durations at the server
    span: float           # first arrival to last reply
    startup: float | None = None   # spawn to first arrival (whole process)
    tail: float | None = None      # last reply to exit (whole process)
    final_limit: int | None = None  # the judge's concurrency limit at the end (in-process)
    errors: int = 0
    steady: float = float("nan")  # mean requests in flight from the peak's first reach to the last arrival
    last_arrival: float = float("nan")  # spawn to the last request's arrival (whole process)

    @property
    def mean_concurrency(self) -> float:
        return self.busy / self.span if self.span > 0 else 0.0

    def ideal(self, latency: float) -> float:
        """calls x latency / peak concurrency: what the most calls in flight at once allow."""
        return self.calls * latency / self.peak if self.peak else float("nan")

    def ideal_mean(self, latency: float) -> float:
        """calls x latency / mean concurrency (the figure before the peak was measured)."""
        return self.calls * latency / self.mean_concurrency if self.mean_concurrency else float("nan")


def server_view(seen: list[tuple[float, float | None, int | None]]) -> tuple[int, int, float, float, float, float, int, float]:
    """calls, failed, busy, span, first arrival, last reply, peak concurrency and the mean requests in flight
    from the first time the peak is reached to the last arrival (how fully the window is kept refilled)."""
    done = [(s, e, st) for s, e, st in seen if e is not None]
    if not done:
        return 0, 0, 0.0, 0.0, float("nan"), float("nan"), 0, float("nan")
    first, last = min(s for s, _, _ in done), max(e for _, e, _ in done)
    failed = sum(st != 200 for _, _, st in done)
    events = sorted([(s, 1) for s, _, _ in done] + [(e, -1) for _, e, _ in done])  # a reply before an arrival at a tie
    in_flight = peak = 0
    for _, step in events:
        in_flight += step
        peak = max(peak, in_flight)
    last_arrival = max(s for s, _, _ in done)
    in_flight, reached, area, before = 0, None, 0.0, 0.0
    for t, step in events:
        if reached is not None and t <= last_arrival:
            area += in_flight * (t - before)
        in_flight += step
        before = t
        if reached is None and in_flight == peak:
            reached = t
    steady = area / (last_arrival - reached) if reached is not None and last_arrival > reached else float("nan")
    return len(done), failed, sum(e - s for s, e, _ in done), last - first, first, last, peak, steady


def cli_command() -> list[str]:
    """The installed ``assay`` script next to this interpreter (what a user runs), else ``-m assay``."""
    script = Path(sys.executable).with_name("assay")
    return [str(script)] if script.exists() else [sys.executable, "-m", "assay"]


def whole_process(traces: Path, url: str, conn, flags: list[str], source: str | None = None) -> Run:
    """One CLI run in fresh HOME, data and cache dirs, timed from spawn to exit.

    *source*: a ``src`` folder that the run imports assay from instead (``PYTHONPATH``), to time
    another version of assay with the same interpreter and dependencies.
    """
    home = Path(tempfile.mkdtemp(prefix="assay-bench-"))
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED} | {"HOME": str(home)}
    if source:
        env["PYTHONPATH"] = source
    command = cli_command() + ["run", str(traces), "-m", METRIC, "--judge", f"openai-compatible:bench-judge@{url}",
                               *flags]
    try:
        started = time.monotonic()
        done = subprocess.run(command, cwd=home, env=env, capture_output=True, text=True)
        ended = time.monotonic()
        if done.returncode not in (0, 1):
            raise SystemExit(f"assay run exited {done.returncode}:\n{done.stderr[-2000:]}")
        stored = list(home.rglob("runs.sqlite3")), list(home.rglob("judge.sqlite3"))
        if "--no-store" not in flags and not stored[0] or "--no-cache" not in flags and not stored[1]:
            raise SystemExit(f"the run did not write its store and cache under {home}: {stored}")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    conn.send("reset")
    seen = conn.recv()
    calls, failed, busy, span, first, last, peak, steady = server_view(seen)
    counted = re.search(r"errored ([\d,]+)", done.stderr)  # the judge's one-line summary
    errors = int(counted.group(1).replace(",", "")) if counted else -1
    return Run(ended - started, calls, peak, failed, busy, span, first - started, ended - last, errors=errors,
               steady=steady, last_arrival=max((s for s, _, _ in seen), default=started) - started)


def minimal_client(traces: Path, url: str, conn, window: int = MINIMAL_WINDOW) -> Run:
    """The minimal client (``--as-minimal-client``) in a fresh process, timed from spawn to exit."""
    with tempfile.TemporaryDirectory(prefix="assay-bench-minimal-") as scratch:
        out = Path(scratch) / "verdicts.jsonl"
        started = time.monotonic()
        done = subprocess.run([sys.executable, __file__, "--as-minimal-client", url, str(traces), str(out),
                               str(window)], capture_output=True, text=True)
        ended = time.monotonic()
        if done.returncode != 0:
            raise SystemExit(f"the minimal client exited {done.returncode}:\n{done.stderr[-2000:]}")
        scored = sum(1 for line in out.read_text().splitlines() if json.loads(line)["score"] is not None)
    conn.send("reset")
    seen = conn.recv()
    calls, failed, busy, span, first, last, peak, steady = server_view(seen)
    return Run(ended - started, calls, peak, failed, busy, span, first - started, ended - last, errors=calls - scored,
               steady=steady, last_arrival=max((s for s, _, _ in seen), default=started) - started)


_MINIMAL_SYSTEM = ("Rate how well the assistant served the user over the whole conversation, 1 to 5. Reply with "
                   'a JSON object {"evidence": [...], "reasoning": "...", "score": 1-5}.')


def as_minimal_client(url: str, traces: str, out: str, window: int) -> None:
    """What a hand-written judge loop does, and nothing more: read, ask, parse, write (stdlib only)."""
    import asyncio
    import urllib.parse

    parsed = urllib.parse.urlsplit(url)
    path = parsed.path.rstrip("/") + "/chat/completions"

    async def main() -> None:
        todo: asyncio.Queue = asyncio.Queue()
        results: dict[int, dict] = {}
        with open(traces, "rb") as f:
            for i, line in enumerate(f):
                todo.put_nowait((i, json.loads(line)))
        n = todo.qsize()

        async def worker() -> None:
            reader, writer = await asyncio.open_connection(parsed.hostname, parsed.port)
            try:
                while not todo.empty():
                    i, trace = todo.get_nowait()
                    dialogue = "\n".join(f"user: {t['input']}\nassistant: {t['output']}" for t in trace["turns"])
                    body = json.dumps({"model": "bench-judge", "temperature": 0, "messages": [
                        {"role": "system", "content": _MINIMAL_SYSTEM},
                        {"role": "user", "content": dialogue}]}).encode()
                    writer.write(f"POST {path} HTTP/1.1\r\nHost: {parsed.netloc}\r\nContent-Type: application/json\r\n"
                                 f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = int(next(line.split(b":", 1)[1] for line in head.split(b"\r\n")
                                      if line.lower().startswith(b"content-length:")))
                    reply = json.loads(await reader.readexactly(length))
                    try:
                        verdict = json.loads(reply["choices"][0]["message"]["content"])
                        score = (verdict["score"] - 1) / 4 if 1 <= verdict["score"] <= 5 else None
                    except (KeyError, TypeError, ValueError):
                        score = None
                    results[i] = {"id": trace["id"], "score": score}
            finally:
                writer.close()

        await asyncio.gather(*(worker() for _ in range(min(window, n))))
        with open(out, "w") as f:
            f.writelines(json.dumps(results[i]) + "\n" for i in range(n))

    asyncio.run(main())


def in_process(traces: list[dict], url: str, conn, options: dict) -> Run:
    from assay import Evaluation
    from assay.judge import make_judge

    judge = make_judge(f"openai-compatible:bench-judge@{url}", cache=False, **options)  # outside the clock
    started = time.perf_counter()
    result = Evaluation([METRIC], judge=judge).run(traces)
    wall = time.perf_counter() - started
    conn.send("reset")
    calls, failed, busy, span, _, _, peak, steady = server_view(conn.recv())
    errors = sum(t.metrics[METRIC].score is None for t in result.traces)
    return Run(wall, calls, peak, failed, busy, span, final_limit=judge.stats.concurrency_limit, errors=errors,
               steady=steady)


def report(n: int, runs: list[Run], latency: float, whole: bool, minimal: bool = False,
           slow: tuple[int, float] | None = None) -> tuple[float, float]:
    """Print one size's figures (*latency*: the mean one); return (best ratio to ideal, best wall)."""
    best = min(runs, key=lambda r: r.wall / r.ideal(latency))
    fastest = min(runs, key=lambda r: r.wall)
    ratios = [r.wall / r.ideal(latency) for r in runs]
    eval_lib = EVAL_LIB_200 * n / 200
    what = "the minimal client" if minimal else \
        "whole process (assay run)" if whole else "in process (Evaluation.run)"
    tail = f" (every {slow[0]}th call {slow[1]:g} s)" if slow else ""
    print(f"\n{n} conversations x {METRIC} (1 judge call each), {latency * 1000:.0f} ms mean latency{tail}, {what}, "
          f"{len(runs)} runs")
    print(f"calls              {best.calls} at the server ({best.failed} not 200, {best.errors} errored)")
    print(f"concurrency        peak {best.peak}, mean {best.mean_concurrency:.1f} (sum of request durations / "
          "first arrival to last reply)" + (f", final limit {best.final_limit}" if best.final_limit is not None else ""))
    print(f"window kept full   {best.steady:.1f} of {best.peak} in flight on average from the peak's first reach to "
          f"the last request (median over runs {statistics.median(r.steady / r.peak for r in runs if r.peak):.0%})")
    print(f"ideal              {best.ideal(latency):.3f} s (calls x latency / peak concurrency)")
    print(f"wall time          {best.wall:.3f} s (fastest {fastest.wall:.3f} s, median "
          f"{statistics.median(r.wall for r in runs):.3f} s)"
          + (f"; the last request arrived {best.last_arrival:.3f} s after spawn" if slow and whole else ""))
    print(f"ratio to ideal     best {min(ratios):.2f}x, median {statistics.median(ratios):.2f}x"
          + (" (target <= 1.30x)" if n >= 1000 and not minimal and not slow else "")
          + f"; to calls x latency / mean concurrency: best {min(r.wall / r.ideal_mean(latency) for r in runs):.2f}x")
    if whole:
        print(f"start-up, tail     {best.startup:.3f} s spawn to first request (best {min(r.startup for r in runs):.3f} s, "
              f"median {statistics.median(r.startup for r in runs):.3f} s), {best.tail:.3f} s last reply to exit "
              f"(best {min(r.tail for r in runs):.3f} s)")
    if not minimal:
        print(f"vs eval_lib        {eval_lib / fastest.wall:.1f}x faster ({eval_lib:.1f} s"
              + (" for 200" if n == 200 else f", its 21.7 s for 200 scaled to {n}") + ")"
              + (" (target >= 15x)" if n == 200 else ""))
    return min(ratios), fastest.wall


def main() -> int:
    if len(sys.argv) == 6 and sys.argv[1] == "--as-minimal-client":
        as_minimal_client(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--slow", metavar="EVERY:SECONDS", default=None,
                        help="every EVERY-th request takes SECONDS (a latency tail), e.g. 100:2")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--whole-process", dest="whole", action="store_true", default=True,
                      help="time the real CLI from spawn to exit (default)")
    mode.add_argument("--in-process", dest="whole", action="store_false",
                      help="time Evaluation.run with the judge built outside the clock, cache off")
    parser.add_argument("--concurrency", type=int, default=None, help="default: the judge's default")
    parser.add_argument("--max-concurrency", type=int, default=None, help="default: the judge's default")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", metavar="SRC", default=None,
                        help="also time assay imported from SRC (e.g. a checkout of main: git worktree add /tmp/base "
                             "main, then --baseline /tmp/base/src), alternating runs with this one, for a "
                             "before/after in one run (whole process only)")
    parser.add_argument("--no-minimal", dest="minimal", action="store_false",
                        help="do not time the minimal client beside assay")
    args = parser.parse_args()
    if args.baseline and not args.whole:
        parser.error("--baseline times the CLI: it needs --whole-process")
    versions = [(None, "this checkout")] + ([(str(Path(args.baseline).resolve()), f"baseline {args.baseline}")]
                                            if args.baseline else [])
    if args.minimal and args.whole:
        versions.append(("minimal", f"the minimal client (window {MINIMAL_WINDOW})"))

    slow = None
    if args.slow:
        every, _, seconds = args.slow.partition(":")
        slow = (int(every), float(seconds))
    latency = args.latency if slow is None else args.latency + (slow[1] - args.latency) / slow[0]  # the mean
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(args.latency, child, slow), daemon=True)
    server.start()
    url = parent.recv()
    options = ({"concurrency": args.concurrency} if args.concurrency else {}) \
        | ({"max_concurrency": args.max_concurrency} if args.max_concurrency else {})
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{'command: ' + ' '.join(cli_command()) + ' run FILE -m ' + METRIC if args.whole else 'in process'}"
          f"{' ' + ' '.join(flags) if flags else ''}")
    ok = True
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for n in args.conversations:
                traces = conversations(n)
                path = Path(scratch) / f"conversations-{n}.jsonl"
                path.write_text("".join(json.dumps(t) + "\n" for t in traces))
                runs: dict[str | None, list[Run]] = {source: [] for source, _ in versions}
                for attempt in range(args.repeat):
                    for source, label in versions:  # alternating, so that load changes hit them alike
                        run = minimal_client(path, url, parent) if source == "minimal" else \
                            whole_process(path, url, parent, flags, source) if args.whole else \
                            in_process(traces, url, parent, options)
                        runs[source].append(run)
                        print(f"  run {attempt + 1}{' (' + label + ')' if len(versions) > 1 else ''}: {run.wall:.3f} s, "
                              f"{run.calls} calls, peak {run.peak}, mean concurrency {run.mean_concurrency:.1f}, "
                              f"{run.wall / run.ideal(latency):.2f}x ideal"
                              + (f", start-up {run.startup:.3f} s, tail {run.tail:.3f} s" if args.whole else ""),
                              flush=True)
                for source, label in reversed(versions):
                    if len(versions) > 1:
                        print(f"\n== {label}", end="")
                    ratio, fastest = report(n, runs[source], latency, args.whole, source == "minimal", slow)
                    if source is None:
                        ok &= all(r.calls == n and r.failed == 0 and r.errors == 0 for r in runs[source])
                        if n >= 1000 and slow is None:
                            ok &= ratio <= 1.3
                        if n == 200 and args.whole:
                            ok &= EVAL_LIB_200 / fastest >= 15
    finally:
        parent.send("stop")
        server.join(timeout=5)
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (at the end)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
