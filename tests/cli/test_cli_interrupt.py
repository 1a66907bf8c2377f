"""Ctrl-C / SIGTERM: one line, exit 130, the run marked interrupted, and a rerun that pays only
for the judge calls that had not finished; a second Ctrl-C exits at once."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.cli import cli_env
from tests.support.judge_server import JudgeServer, delayed, hang, obj

GOOD = {"evidence": [], "reasoning": "on topic", "score": 5}
N = 20


def traces(tmp_path: Path, n: int) -> Path:
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps({"id": f"r{i}", "turns": [{"input": f"question {i}?", "output": f"answer {i}"}]})
                         + "\n" for i in range(n)))
    return p


def start(tmp_path: Path, server: JudgeServer, *extra: str) -> subprocess.Popen:
    args = ["run", str(traces(tmp_path, N)), "-m", "answer_relevance", "--no-progress", "--concurrency", "2",
            "--cache", str(tmp_path / "judge.sqlite3"), "--judge", f"openai-compatible:scripted@{server.url}",
            "-f", "json", "-o", str(tmp_path / "r.json"), *extra]
    return subprocess.Popen([sys.executable, "-m", "assay", *args], env=cli_env(tmp_path), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for(cond, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_one_line_130_marked_interrupted_and_the_rerun_pays_only_for_the_rest(tmp_path, sig):
    (tmp_path / "r.json").write_text("previous results\n")
    # The first 5 calls answer; later ones wait until the signal has been sent, so the run is
    # interrupted mid-way however slowly the machine runs (no race with the remaining 15 calls).
    gate, lock, seen = threading.Event(), threading.Lock(), [0]

    def reply(req):
        with lock:
            seen[0] += 1
            n = seen[0]
        if n > 5:
            gate.wait(120)
        return delayed(obj(GOOD), 0.05)
    with JudgeServer(reply) as server:
        proc = start(tmp_path, server)
        wait_for(lambda: server.completed >= 5)
        proc.send_signal(sig)
        gate.set()
        out, err = proc.communicate(timeout=60)
        first = len(server.requests)
        assert proc.returncode == 130, err
        assert err.strip().splitlines() == [
            f"interrupted after {first} of {N} judge calls; rerun the same command to resume: "
            "finished judge calls are cached"], err
        assert first < N and server.completed == first  # the calls in flight finished; nothing new started
        with sqlite3.connect(tmp_path / "runs.sqlite3") as db:
            assert db.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
        assert (tmp_path / "r.json").read_text() == "previous results\n"  # an interrupted run writes no results

        server.reset()
        seen[0] = -10_000  # the rerun's calls all answer at once
        rerun = start(tmp_path, server)
        out, err = rerun.communicate(timeout=60)
        assert rerun.returncode == 0, err
        assert len(server.requests) == N - first  # only the calls that had not finished
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["run"]["judge"]["cached"] == first and result["run"]["n_traces"] == N


def test_a_second_ctrl_c_exits_at_once(tmp_path):
    """Ctrl-C until it ends: the first starts the grace period (the calls in flight hang, so it would
    wait it out and print its line), a later one exits at once - without that line, whatever the speed."""
    with JudgeServer(lambda req: hang(600)) as server:
        proc = start(tmp_path, server)
        wait_for(lambda: len(server.requests) >= 2)
        for _ in range(2000):  # one every 20 ms until it exits (a loaded machine may merge two)
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=0.02)
                break
            except subprocess.TimeoutExpired:
                pass
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted after" not in err, err


def test_an_interrupted_deterministic_run(tmp_path):
    big = tmp_path / "big.jsonl"
    row = {"id": "x", "turns": [{"input": "q", "output": "a", "latency_ms": 5}]}
    big.write_text("".join(json.dumps({**row, "id": f"t{i}"}) + "\n" for i in range(300_000)))
    proc = subprocess.Popen([sys.executable, "-m", "assay", "run", str(big), "-m", "latency_score", "--no-progress",
                             "--no-store", "-f", "jsonl", "-o", str(tmp_path / "r.jsonl")],
                            env=cli_env(tmp_path), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: any(p.name.startswith(".r.jsonl.") for p in tmp_path.iterdir()))
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("interrupted after ") and " traces" in lines[0], err
    assert not (tmp_path / "r.jsonl").exists()  # never half a results file
