"""Judge-path client cost: the CPU assay itself spends per judge call, as a whole process.

Runs the real CLI (``assay run FILE -m METRIC --judge openai-compatible:...@URL --no-store
--no-cache``) against the test suite's scripted OpenAI-compatible server in a child process, which
answers every request after ``--latency`` (10 ms) with a reply that fits the request's schema
(quotes included: one found in the dialogue, one not, so the quote check does its full work).
The figure is the run's own user + sys CPU (``os.wait4``), marginal per call: the difference
between ``--conversations`` sizes (100 and 1,000) divided by the difference in calls the server
answered, so interpreter start-up and imports cancel.

Metrics: ``failure_rate`` (full and compact form), ``goal_achievement_rate`` (full; no goal given,
so 4 calls per conversation) and ``answer_relevance`` (one call per turn). ``--baseline REV``
(default: the commit before the hot-path work) also times that revision of ``src/`` (``git
archive``), alternating with this checkout, for a before/after in one run. Target: <= 1.0 ms per
call for each metric.

``--in-process`` times ``Evaluation.run`` in a child process instead (the judge built and warmed
up outside the clock, new ids for each ``--repeat`` so that no option order repeats, the least CPU
per call): steadier than the marginal figure when the machine is busy. ``--profile METRIC`` prints the top functions of an in-process run instead (cProfile; judge
cache off, server still in its own process, so only client work shows).

``--limits`` prints each figure beside its limit, in one run on one server, with the load average:
assay's client CPU per call (``Evaluation.run`` in process, as ``--in-process``) beside a minimal
asyncio client's (:func:`minimal_client`: the same conversations, system prompt and schema, one
kept-alive HTTP/1.1 connection per slot, nothing but the prompt string, ``json.dumps``, the
socket and ``json.loads``), the same ``failure_rate`` run with the judge cache on, as a default run
has it (a new file: every call looked up, missed and written; the other rows have it off), and the CPU
of a 200-turn ``failure_rate`` call beside its 2 ms limit.
Targets (issue #43): <= 0.5 ms per call, <= 2 ms for the 200-turn call.

    python benchmarks/judge_client_cost.py --limits [--conversations 100 1000] [--repeat 3] [--baseline REV]
    python benchmarks/judge_client_cost.py [--conversations 100 1000] [--baseline REV | --no-baseline]
    python benchmarks/judge_client_cost.py --profile failure_rate [--style full]
    python benchmarks/judge_client_cost.py --in-process --turns 200 --conversations 10 40   # a long conversation
"""

from __future__ import annotations

import argparse
import cProfile
import json
import multiprocessing
import os
import pstats
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.support

from tests.support.judge_server import JudgeServer, Reply, fitting  # noqa: E402

BASELINE = "9953cb2"
"""main before the hot-path work (issue #30)."""
CASES = (("failure_rate", "full"), ("failure_rate", "compact"), ("goal_achievement_rate", "full"),
         ("answer_relevance", "full"))
QUOTES = ("table for", "The Italian place near the staton")
"""What the scripted judge quotes: text in the dialogue, and a misspelt quote that the check rejects."""
_CLEARED = ("ASSAY_STORE", "ASSAY_CACHE_DIR", "ASSAY_JUDGE", "ASSAY_JUDGE_BASE_URL", "ASSAY_CONFIG",
            "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME")


TURNS = 2
"""Turns per conversation (``--turns``): 200 measures what a long conversation's prompt costs per call."""


def conversations(n: int) -> list[dict]:
    """Booking conversations in assay's trace format (``TURNS`` turns: a request, then exchanges)."""
    out = []
    for i in range(n):
        turns = [{"input": f"Book a table for {i % 6 + 2} people on day {i}.",
                  "output": f"Which restaurant would you like for day {i}?"}]
        for t in range(1, TURNS):
            turns.append({"input": "The Italian place near the station, 7 pm." if t == 1 else f"And change {t}, please.",
                          "output": f"Done: table for {i % 6 + 2} at 7 pm on day {i}, ref R{i:04d}-{t}."})
        out.append({"id": f"conv-{i}", "turns": turns})
    return out


def verdict_for(request: dict) -> Reply:
    return fitting(request, QUOTES, "The booking was confirmed with a reference.")


def serve(latency: float, conn) -> None:
    """Child process: the scripted server; on "count", report the requests answered so far."""
    with JudgeServer(verdict_for, latency=latency) as server:
        conn.send(server.url)
        while conn.recv() == "count":
            conn.send(sum(r.status == 200 for r in server.requests))


def source_of(rev: str, scratch: Path) -> Path:
    """``src/`` of git revision *rev*, unpacked under *scratch* (or *rev* itself when it is a folder)."""
    if Path(rev).is_dir():
        return Path(rev)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True, check=True).stdout
    target = scratch / f"src-{rev}"
    target.mkdir()
    archive_path = scratch / f"{rev}.tar"
    archive_path.write_bytes(archive)
    with tarfile.open(archive_path) as tar:
        tar.extractall(target, filter="data")
    return target / "src"


def run_cli(source: Path, traces: Path, metric: str, style: str, url: str) -> float:
    """User + sys CPU seconds of one ``assay run`` importing assay from *source*."""
    home = Path(tempfile.mkdtemp(prefix="assay-bench-"))
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED} | {"HOME": str(home), "PYTHONPATH": str(source)}
    command = [sys.executable, "-m", "assay", "run", str(traces), "-m", metric, "--judge",
               f"openai-compatible:bench-judge@{url}", "--prompt-style", style, "--no-store", "--no-cache"]
    with open(home / "stderr", "w+") as err:
        proc = subprocess.Popen(command, cwd=home, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            err.seek(0)
            raise SystemExit(f"assay run exited {proc.returncode}:\n{err.read()[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def start_server(latency: float) -> tuple[multiprocessing.Process, object, str]:
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(latency, child), daemon=True)
    server.start()
    if not parent.poll(30):
        raise SystemExit("the scripted judge server did not start")
    return server, parent, parent.recv()


def measure(args: argparse.Namespace) -> int:
    server, parent, url = start_server(args.latency)

    def calls() -> int:
        parent.send("count")
        return parent.recv()

    small, large = args.conversations
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; "
          f"{args.latency * 1000:.0f} ms judge; {small} and {large} conversations; cache and store off")
    results: dict[tuple[str, str, str], float] = {}
    try:
        with tempfile.TemporaryDirectory() as scratch_dir:
            scratch = Path(scratch_dir)
            versions = [("after", ROOT / "src")]
            if args.baseline:
                versions.insert(0, (f"before ({args.baseline})", source_of(args.baseline, scratch)))
            files = {}
            for n in (small, large):
                files[n] = scratch / f"conversations-{n}.jsonl"
                files[n].write_text("".join(json.dumps(t) + "\n" for t in conversations(n)))
            for metric, style in CASES:
                for label, source in versions:  # alternating, so that load changes hit both alike
                    if args.in_process:
                        results[metric, style, label] = per_call = in_process(source, metric, style, url, large,
                                                                              args.repeat)
                        print(f"  {metric:<22} {style:<8} {label:<20} {1000 * per_call:6.2f} ms CPU per call "
                              f"(in process, {large} conversations, least of {args.repeat})", flush=True)
                        continue
                    seen = []
                    for n in (small, large):
                        before = calls()
                        started = time.monotonic()
                        cpu = min(run_cli(source, files[n], metric, style, url) for _ in range(args.repeat))
                        wall = time.monotonic() - started
                        seen.append((cpu, (calls() - before) / args.repeat, wall / args.repeat))
                    (cpu_s, calls_s, _), (cpu_l, calls_l, wall_l) = seen
                    per_call = (cpu_l - cpu_s) / (calls_l - calls_s)
                    results[metric, style, label] = per_call
                    print(f"  {metric:<22} {style:<8} {label:<20} {1000 * per_call:6.2f} ms CPU per call "
                          f"({calls_s:.0f} and {calls_l:.0f} calls; CPU {cpu_s:.2f} s and {cpu_l:.2f} s; "
                          f"wall {wall_l:.2f} s at {large})", flush=True)
    finally:
        parent.send("stop")
        server.join(timeout=5)
    print(f"\nclient CPU per judge call ({'in process' if args.in_process else 'marginal'}, ms; load average after "
          f"{os.getloadavg()[0]:.2f})")
    ok = True
    for metric, style in CASES:
        after = results[metric, style, "after"]
        ok &= after <= 0.001
        line = f"  {metric + ' (' + style + ')':<34} {1000 * after:6.2f}"
        if args.baseline:
            before = results[metric, style, f"before ({args.baseline})"]
            line += f"   before {1000 * before:6.2f}   {before / after:5.1f}x less"
        print(line + ("" if after <= 0.001 else "   (target <= 1.0 ms)"))
    return 0 if ok else 1


def in_process(source: Path, metric: str, style: str, url: str, n: int, repeat: int, cache: bool = False) -> float:
    """CPU seconds per call of ``Evaluation.run`` in a child importing assay from *source* (*cache*: with
    the judge cache on, in a new file, as a default run has it)."""
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED} | {"PYTHONPATH": str(source)}
    done = subprocess.run([sys.executable, __file__, "--child", metric, style, url, str(n), str(repeat), str(TURNS),
                           "cache" if cache else "off"], env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the in-process run failed:\n{done.stderr[-2000:]}")
    return float(done.stdout.split()[-1])


def child(metric: str, style: str, url: str, n: int, repeat: int, cache: bool = False) -> None:
    """Score *n* conversations *repeat* times (new ids each time, so no option order repeats and, with
    *cache*, every call misses and is written) with the judge built and warmed up outside the clock;
    print the least CPU per call."""
    from assay import Evaluation
    from assay.judge import make_judge

    scratch = tempfile.mkdtemp(prefix="assay-bench-cache-")
    judge = make_judge(f"openai-compatible:bench-judge@{url}", prompt_style=style,
                       cache=str(Path(scratch) / "judge.sqlite3") if cache else False)
    Evaluation([metric], judge=judge).run([{**c, "id": f"warm-{c['id']}"} for c in conversations(20)])
    best = float("inf")
    for r in range(repeat):
        traces = [{**c, "id": f"{c['id']}-{r}", "turns": [{**c["turns"][0], "input": f"{c['turns'][0]['input']} ({r})"},
                                                        *c["turns"][1:]]} for c in conversations(n)]
        started = time.process_time()
        result = Evaluation([metric], judge=judge).run(traces)
        cpu = time.process_time() - started
        made = sum(t.metrics[metric].judge_calls or 0 for t in result.traces)
        if any(t.metrics[metric].score is None for t in result.traces):
            raise SystemExit(f"{metric}: a verdict errored")
        best = min(best, cpu / made)
    print(best)


LIMIT_PER_CALL, LIMIT_LONG = 0.0005, 0.002
"""Issue #43's limits: client CPU per judge call, and per call of a 200-turn failure_rate conversation."""


def captured(url: str) -> dict:
    """One failure_rate request as assay sends it (through a scripted server of its own): the minimal
    client sends the same system prompt and schema, so both pay for the same bytes."""
    from assay import Evaluation
    from assay.judge import make_judge

    with JudgeServer(verdict_for) as server:
        Evaluation(["failure_rate"], judge=make_judge(f"openai-compatible:bench-judge@{server.url}", cache=False)).run(
            conversations(1))
        return server.requests[0].json


async def minimal_client(url: str, traces: list[dict], template: dict, slots: int) -> int:
    """The least a judge client does per call, as a hand-written loop: the conversation as one prompt
    string, the chat-completions body by ``json.dumps`` (the system prompt and schema of *template*),
    a POST on a kept-alive connection, the reply read by its Content-Length and its verdict decoded
    by ``json.loads``; *slots* connections at once. Returns the calls answered with a verdict."""
    import asyncio
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    head = (f"POST {parts.path}/chat/completions HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            "Content-Type: application/json\r\nContent-Length: ").encode()
    system, schema = template["messages"][0], template["response_format"]
    todo = iter(traces)
    answered = 0

    async def slot() -> None:
        nonlocal answered
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        for trace in todo:
            prompt = "\n\n".join(f"Turn {n}, user message:\n{t['input']}\n\nTurn {n}, agent reply:\n{t['output']}"
                                   for n, t in enumerate(trace["turns"], 1))
            body = json.dumps({"model": "bench-judge", "temperature": 0.0, "response_format": schema,
                               "messages": [system, {"role": "user", "content": prompt}]}).encode()
            writer.write(head + b"%d\r\n\r\n" % len(body) + body)
            length = 0
            for line in (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            reply = json.loads(await reader.readexactly(length))
            verdict = json.loads(reply["choices"][0]["message"]["content"])
            answered += "verdict" in verdict
        writer.close()

    await asyncio.gather(*(slot() for _ in range(slots)))
    return answered


def minimal_child(url: str, n: int, repeat: int, slots: int) -> None:
    """The minimal client's least CPU per call over *repeat* runs of *n* conversations (a warm-up first)."""
    import asyncio

    template = captured(url)
    asyncio.run(minimal_client(url, conversations(20), template, slots))
    best = float("inf")
    for _ in range(repeat):
        traces = conversations(n)
        started = time.process_time()
        made = asyncio.run(minimal_client(url, traces, template, slots))
        cpu = time.process_time() - started
        if made != n:
            raise SystemExit(f"the minimal client got {made} verdicts for {n} calls")
        best = min(best, cpu / made)
    print(best)


def limits(args: argparse.Namespace) -> int:
    """Each figure beside its limit, measured in one run against one server (see the module docstring)."""
    global TURNS
    server, parent, url = start_server(args.latency)
    n = args.conversations[-1]
    slots = 64
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load} on {os.cpu_count()} CPUs; {args.latency * 1000:.0f} ms judge; {n} conversations; "
          f"least CPU of {args.repeat} runs each, in process, judge cache off unless the row says it is on")
    rows: list[tuple[str, float, float | None, str]] = []
    try:
        with tempfile.TemporaryDirectory() as scratch_dir:
            versions = [("assay", ROOT / "src")]
            if args.baseline:
                versions.append((f"assay {args.baseline}", source_of(args.baseline, Path(scratch_dir))))
            env = {k: v for k, v in os.environ.items() if k not in _CLEARED} | {"PYTHONPATH": str(ROOT / "src")}
            done = subprocess.run([sys.executable, __file__, "--minimal-child", url, str(n), str(args.repeat),
                                   str(slots)], env=env, capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"the minimal client failed:\n{done.stderr[-2000:]}")
            minimal = float(done.stdout.split()[-1])
            TURNS = 2
            for metric, style in (("failure_rate", "full"), ("answer_relevance", "full")):
                for label, source in versions:  # alternating, so that load changes hit both alike
                    rows.append((f"{label}: {metric} ({style}), 2 turns", in_process(source, metric, style, url, n,
                                                                                       args.repeat), minimal, "minimal"))
            for label, source in versions:  # the default run: every verdict looked up, then written to the cache
                rows.append((f"{label}: failure_rate (full), cache on", in_process(source, "failure_rate", "full", url, n,
                                                                                 args.repeat, cache=True), minimal,
                             "minimal"))
            rows.append(("minimal asyncio client, 2 turns", minimal, None, ""))
            TURNS = 200
            long_n = max(10, n // 25)
            for label, source in versions:
                rows.append((f"{label}: failure_rate (full), 200 turns", in_process(source, "failure_rate", "full", url,
                                                                                  long_n, args.repeat), None, ""))
            TURNS = 2
    finally:
        parent.send("stop")
        server.join(timeout=5)
    print(f"\nclient CPU per judge call, ms (load average after {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    ok = True
    for name, cpu, beside, what in rows:
        limit = LIMIT_LONG if "200 turns" in name else LIMIT_PER_CALL if name.startswith("assay") else None
        line = f"  {name:<52} {1000 * cpu:6.3f}"
        if beside is not None:
            line += f"   {what} {1000 * beside:.3f} ({cpu / beside:.2f}x)"
        if limit is not None:
            line += f"   limit {1000 * limit:.1f}" + ("" if cpu <= limit else "  OVER")
            ok &= cpu <= limit or not name.startswith("assay:")
        print(line)
    return 0 if ok else 1


def profile(args: argparse.Namespace) -> int:
    from assay import Evaluation
    from assay.judge import make_judge

    server, parent, url = start_server(args.latency)
    try:
        judge = make_judge(f"openai-compatible:bench-judge@{url}", cache=False, prompt_style=args.style)
        Evaluation([args.profile], judge=judge).run(conversations(5))  # imports, connections
        traces = conversations(args.conversations[-1])
        prof = cProfile.Profile()
        started = time.process_time()
        prof.enable()
        result = Evaluation([args.profile], judge=judge).run(traces)
        prof.disable()
        cpu = time.process_time() - started
        n = judge.stats.calls if hasattr(judge.stats, "calls") else None
    finally:
        parent.send("stop")
        server.join(timeout=5)
    errors = sum(t.metrics[args.profile].score is None for t in result.traces)
    print(f"{len(traces)} conversations, {n} calls, {cpu:.2f} s CPU under the profiler, {errors} errored")
    pstats.Stats(prof, stream=sys.stdout).sort_stats(args.sort).print_stats(args.top)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, nargs=2, default=[100, 1000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--latency", type=float, default=0.01)
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; the least CPU counts")
    parser.add_argument("--baseline", default=BASELINE, metavar="REV", help=f"also time REV's src, or a src folder (default {BASELINE})")
    parser.add_argument("--no-baseline", dest="baseline", action="store_const", const=None)
    parser.add_argument("--in-process", action="store_true",
                        help="time Evaluation.run in a child process instead (judge built and warmed up outside the "
                             "clock; the LARGE size, new ids per repeat; steadier than the marginal figure on a busy "
                             "machine)")
    parser.add_argument("--child", nargs=7, help=argparse.SUPPRESS)
    parser.add_argument("--minimal-child", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--limits", action="store_true",
                        help="each figure beside its limit in one run: assay's CPU per call beside a minimal asyncio "
                             "client's, and a 200-turn failure_rate call's beside 2 ms")
    parser.add_argument("--turns", type=int, default=2, help="turns per conversation (200: a long conversation's prompt)")
    parser.add_argument("--profile", metavar="METRIC", default=None)
    parser.add_argument("--style", default="full", choices=("full", "compact"))
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    global TURNS
    TURNS = args.turns
    if args.child:
        metric, style, url, n, repeat, turns, cache = args.child
        TURNS = int(turns)
        child(metric, style, url, int(n), int(repeat), cache == "cache")
        return 0
    if args.minimal_child:
        url, n, repeat, slots = args.minimal_child
        minimal_child(url, int(n), int(repeat), int(slots))
        return 0
    if args.limits:
        if args.baseline == BASELINE:  # that old revision has no 200-turn fast path to compare: ask for one
            args.baseline = None
        return limits(args)
    return profile(args) if args.profile else measure(args)


if __name__ == "__main__":
    sys.exit(main())
