"""``assay run`` with a judge starts judging at once: the first request reaches the judge server
before the input's last line is written (the plan of judge calls is counted as the input is read,
not by reading it all first), input from a pipe is scored, and an interrupt before the input was
read to its end still reports the whole plan."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from assay.importers._registry import _SNIFF_BYTES
from assay.importers._stream import CHUNK
from tests.support.cli import cli_env
from tests.support.judge_server import JudgeServer, delayed, obj

GOOD = {"evidence": [], "reasoning": "on topic", "score": 5}


def line(i: int) -> str:
    return json.dumps({"id": f"r{i}", "turns": [{"input": f"question {i}?", "output": f"answer {i}"}]}) + "\n"


def assay(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "assay", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def padded(i: int) -> str:
    """A trace line of ~100 KB (metadata the metric does not read): a few make the reader's first chunks."""
    return json.dumps({"id": f"r{i}", "turns": [{"input": f"question {i}?", "output": f"answer {i}"}],
                       "metadata": {"pad": "x" * 100_000}}) + "\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_the_first_judge_request_leaves_before_the_input_is_written_to_its_end(tmp_path):
    fifo = tmp_path / "traces.jsonl"
    os.mkfifo(fifo)
    head = (_SNIFF_BYTES + CHUNK) // len(padded(0)) + 2  # padded lines that fill the reader's first reads
    n = head + 3
    first = threading.Event()

    def reply(request: dict):
        first.set()
        return obj(GOOD)

    with JudgeServer(reply) as server:
        proc = assay("run", str(fifo), "-m", "answer_relevance", "--judge", f"openai-compatible:scripted@{server.url}",
                     "--no-cache", "--no-store", "-f", "json", env=cli_env(tmp_path))
        try:
            with open(fifo, "w") as writer:  # (opens once assay opens the pipe to read it)
                # more than the reader takes in its first reads (64 KiB to detect the format, then a 1 MiB chunk)
                writer.writelines(padded(i) for i in range(head))
                writer.flush()
                # the judge is asked while the input is still open: its last lines are not written yet
                # (before, the plan read the pipe to its end first, and the run then found it empty)
                assert first.wait(timeout=120), "no judge request before the input's end"
                writer.writelines(line(i) for i in range(head, n))
            out, err = proc.communicate(timeout=120)
        finally:
            proc.kill()
        assert proc.returncode == 0, err
        assert len(server.requests) == n  # each trace once: the pipe was read once, by the run
    result = json.loads(out)
    assert [t["id"] for t in result["traces"]] == [f"r{i}" for i in range(n)]
    assert result["run"]["planned_judge_calls"] == n  # counted as it was read
    assert result["run"]["judge_plan"] == {"answer_relevance": {"traces": n, "calls": n}}


def wait_for(cond, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_an_interrupt_before_the_input_is_read_to_its_end_reports_the_whole_plan(tmp_path):
    n = 400  # more than the traces in flight at once (256): the run has not read its input's end when stopped
    traces = tmp_path / "t.jsonl"
    traces.write_text("".join(line(i) for i in range(n)))
    with JudgeServer(lambda req: delayed(obj(GOOD), 0.2)) as server:
        proc = assay("run", str(traces), "-m", "answer_relevance", "--no-progress", "--concurrency", "2",
                     "--max-concurrency", "2", "--judge", f"openai-compatible:scripted@{server.url}",
                     "--cache", str(tmp_path / "judge.sqlite3"), "-f", "json", "-o", str(tmp_path / "r.json"),
                     env=cli_env(tmp_path))
        wait_for(lambda: server.completed >= 3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        asked = len(server.requests)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == [
        f"interrupted after {asked} of {n} judge calls; rerun the same command to resume: "
        "finished judge calls are cached"], err
    assert asked < 256


# Runs `assay` as `python -m assay` would, and writes what it saw to the file named by ASSAY_TEST_SEEN:
# whether pydantic was imported when the first judge request's connection opened, and which thread
# imported it (a finder on sys.meta_path notes the thread that first asks for it).
_WATCHED = """
import atexit, json, os, runpy, sys, threading
seen = {}
def hook(event, args):
    if event == "socket.connect" and "pydantic_at_first_request" not in seen:
        seen["pydantic_at_first_request"] = "pydantic" in sys.modules
class Note:
    def find_spec(self, name, path=None, target=None):
        if name == "pydantic" and "imported_by" not in seen:
            seen["imported_by"] = threading.current_thread().name
        return None
sys.addaudithook(hook)
sys.meta_path.insert(0, Note())
atexit.register(lambda: open(os.environ["ASSAY_TEST_SEEN"], "w").write(json.dumps(seen)))
sys.argv = ["assay", *sys.argv[1:]]
runpy.run_module("assay", run_name="__main__")
"""


LABELS = ["resolved", "unresolved", "partially_resolved", "resolved"] * 5


@pytest.mark.parametrize("metric, answers, scores", [
    ("answer_relevance", [{"score": s} for s in [1, 2, 3, 4, 5] * 4], [(s - 1) / 4 for s in [1, 2, 3, 4, 5] * 4]),
    ("resolution", [{"verdict": v} for v in LABELS], [{"resolved": 1.0, "unresolved": 0.0, "partially_resolved": 0.5}[v]
                                                      for v in LABELS]),
])
def test_the_first_judge_request_leaves_before_pydantic_is_imported(tmp_path, metric, answers, scores):
    """A one-call judge metric's request needs only its verdict's JSON schema, which assay writes without
    pydantic (~50 ms to import and build the first model); the model that validates the replies is built
    after the first requests are out. The run's verdicts are the judge's, as before (a scale and a label
    metric: a plain schema and one with its options in a per-request order)."""
    traces = tmp_path / "t.jsonl"
    traces.write_text("".join(line(i) for i in range(20)))
    seen = tmp_path / "seen.json"

    def reply(request: dict):  # trace i's answer, whatever order the calls come in
        i = int(re.search(r"question (\d+)\?", request["messages"][-1]["content"]).group(1))
        return obj({"evidence": [], "reasoning": "scripted", **answers[i]})

    with JudgeServer(reply) as server:
        done = subprocess.run(
            [sys.executable, "-c", _WATCHED, "run", str(traces), "-m", metric, "--judge",
             f"openai-compatible:scripted@{server.url}", "-f", "json"],
            env=cli_env(tmp_path, ASSAY_TEST_SEEN=str(seen)), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr  # (1: some traces fail the metric's threshold)
    assert "20 calls made" in done.stderr and "errored 0" in done.stderr
    watched = json.loads(seen.read_text())
    assert watched["pydantic_at_first_request"] is False
    assert "imported_by" in watched  # the replies were validated by a pydantic model all the same
    result = json.loads(done.stdout)
    # trace i got the i-th scripted answer
    got = [t["metrics"][metric]["score"] for t in result["traces"]]
    assert got == scores, got


def test_the_command_process_tunes_its_collector_and_tests_calling_main_do_not(tmp_path):
    """``assay`` (``entry``: the console script and ``python -m assay``) raises the young generation's threshold and
    freezes what the command imported; ``main``, which tests call in their own process, changes neither."""
    from assay import cli

    probe = ("import gc, sys\nfrom assay import cli\nsys.argv = ['assay', 'metrics']\n"
             "try:\n    cli.{}()\nexcept SystemExit:\n    pass\n"
             "print(gc.get_threshold()[0], gc.get_freeze_count(), file=sys.stderr)\n")
    env = cli_env(tmp_path)
    seen = {}
    for fn in ("entry", "main"):
        done = subprocess.run([sys.executable, "-c", probe.format(fn)], env=env, capture_output=True, text=True,
                              timeout=60)
        threshold, frozen = done.stderr.split()[-2:]
        seen[fn] = int(threshold), int(frozen)
    assert seen["entry"][0] == cli.GC_YOUNG and seen["entry"][1] > 10_000  # the command's modules, classes ...
    assert seen["main"][1] == 0 and seen["main"][0] != cli.GC_YOUNG
    with open(os.path.join(os.path.dirname(cli.__file__), "..", "__main__.py"), encoding="utf-8") as f:
        assert "entry()" in f.read()
