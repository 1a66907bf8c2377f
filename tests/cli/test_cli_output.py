"""Output files are written atomically and their paths checked before any scoring: a killed or
crashed run leaves the previous results file intact, and a bad ``-o`` costs no judge call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay._files import atomic_write, check_writable, write_atomic
from assay.errors import ConfigError
from tests.support.cli import cli_env, run_pipe
from tests.support.judge_server import JudgeServer, delayed, obj

GOOD = {"evidence": [], "reasoning": "on topic", "score": 5}


def traces(tmp_path: Path, n: int, name: str = "t.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps({"id": f"r{i}", "turns": [{"input": f"question {i}?", "output": f"answer {i}"}]})
                         + "\n" for i in range(n)))
    return p


def test_atomic_write_keeps_the_old_file_until_the_new_one_is_complete(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("previous")
    os.chmod(target, 0o640)
    with pytest.raises(RuntimeError):
        with atomic_write(target) as f:
            f.write(b"half a fi")
            assert target.read_text() == "previous"
            raise RuntimeError("writer crashed")
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary file left behind
    write_atomic(target, "new")
    assert target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o640  # permissions kept


def test_an_output_through_a_link_replaces_the_file_the_link_names_and_keeps_the_link(tmp_path):
    """``-o results.jsonl`` where results.jsonl links to a file elsewhere: the rename went over the link, which
    became a file of its own while the file it named kept the old results."""
    (tmp_path / "elsewhere").mkdir()
    real, link = tmp_path / "elsewhere" / "r.json", tmp_path / "r.json"
    real.write_text("previous")
    link.symlink_to(real)
    check_writable(link, "-o")
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == ["r.json"]


def test_an_output_that_is_a_named_pipe_is_written_through_not_renamed_over(tmp_path):
    """``-o /dev/stdout`` (a link to the process's stdout: a pipe or terminal) renamed a regular file over the
    device when run as root; a named pipe stands in for it here. The run's JSON reaches the reader and the pipe
    is still a pipe."""
    import threading

    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)  # (blocks if never written)
    reader.start()
    src = tmp_path / "timed.jsonl"
    src.write_text("".join(json.dumps({"id": f"r{i}", "turns": [{"input": "q", "output": "a", "latency_ms": 100}]})
                           + "\n" for i in range(3)))
    done = subprocess.run([sys.executable, "-m", "assay", "run", str(src), "-m", "latency_score",
                           "--no-store", "-q", "-o", str(fifo)], env=cli_env(tmp_path), capture_output=True,
                          text=True, timeout=60)
    reader.join(timeout=30)
    assert done.returncode == 0, done.stderr
    assert got and json.loads(got[0])["run"]["n_traces"] == 3, "nothing was written through the pipe"
    import stat

    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_check_writable_says_where_and_what(tmp_path):
    with pytest.raises(ConfigError, match=r"-o '.*nodir/r.json': directory '.*nodir' does not exist"):
        check_writable(tmp_path / "nodir" / "r.json", "-o")
    with pytest.raises(ConfigError, match="is a directory"):
        check_writable(tmp_path, "--html")


def test_check_writable_refuses_a_read_only_directory(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        if os.access(ro, os.W_OK):  # root ignores directory permissions
            pytest.skip("running as root: permissions are not enforced")
        with pytest.raises(ConfigError, match="cannot write in"):
            check_writable(ro / "r.json", "-o")
    finally:
        os.chmod(ro, 0o700)


@pytest.mark.parametrize("flag", ["-o", "--html"])
def test_a_bad_output_path_fails_before_any_judge_call(tmp_path, flag):
    with JudgeServer(lambda req: obj(GOOD)) as server:
        r = run_pipe(["run", str(traces(tmp_path, 3)), "-m", "answer_relevance", "--no-cache",
                      "--judge", f"openai-compatible:scripted@{server.url}", flag, str(tmp_path / "nodir" / "r.out")],
                     cli_env(tmp_path))
        assert server.requests == []
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"Error: {flag} '{tmp_path}/nodir/r.out': directory '{tmp_path}/nodir' does not exist"]
    assert not (tmp_path / "runs.sqlite3").exists()  # no run recorded either


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_a_kill_during_the_run_leaves_the_previous_results_file_intact(tmp_path, fmt):
    out = tmp_path / f"r.{fmt}"
    with JudgeServer(lambda req: delayed(obj(GOOD), 0.2)) as server:
        args = ["-m", "answer_relevance", "--no-cache", "--concurrency", "1", "-f", fmt, "-o", str(out),
                "--judge", f"openai-compatible:scripted@{server.url}"]
        first = run_pipe(["run", str(traces(tmp_path, 2, "small.jsonl")), *args], cli_env(tmp_path))
        assert first.returncode == 0, first.stderr
        previous = out.read_bytes()
        proc = subprocess.Popen([sys.executable, "-m", "assay", "run", str(traces(tmp_path, 50)), *args],
                                env=cli_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while len(server.requests) < 8 and time.monotonic() < deadline:  # well into the run (jsonl is streaming)
            time.sleep(0.05)
        if fmt == "jsonl":
            tmp = [p for p in tmp_path.iterdir() if p.name.startswith(".r.jsonl.")]
            assert tmp  # the streamed results go to a temporary file next to the target
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert out.read_bytes() == previous


def test_a_writer_crash_leaves_the_previous_results_file_intact(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import assay.report as report
    from assay.cli import main

    out = tmp_path / "r.csv"
    out.write_text("previous results\n")

    def crash(result, dims):
        raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")

    monkeypatch.setattr(report, "csv_rows", crash)  # the CLI imports the writer from the package when it writes
    r = CliRunner().invoke(main, ["run", str(traces(tmp_path, 2)), "--no-store", "-m", "tool_selection_accuracy",
                                  "-f", "csv", "-o", str(out)])
    assert r.exit_code == 3 and "internal error: UnicodeEncodeError" in r.stderr
    assert out.read_text() == "previous results\n"
    assert report  # the writer really was replaced in the module the CLI uses


def closed_stdout(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run ``assay ARGS`` with standard output a pipe whose reader has already left (``| head``, done)."""
    proc = subprocess.Popen([sys.executable, "-m", "assay", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("args", [["metrics"], ["run", "{t}", "--no-store"], ["run", "{t}", "--no-store", "-f", "json"]],
                         ids=["metrics", "run-table", "run-json"])
def test_a_reader_that_left_ends_the_command_quietly_with_the_sigpipe_status(tmp_path, args, buffered):
    """`assay run ... | head`: the table or JSON reached a closed pipe. It was "Error: internal error:
    BrokenPipeError" and exit 3, or (through rich) exit 1, a failed threshold; now nothing on stderr and
    141, the status a shell shows for a filter that SIGPIPE stopped."""
    env = cli_env(tmp_path)
    if buffered:  # as a user's shell runs it
        del env["PYTHONUNBUFFERED"]
    t = traces(tmp_path, 3)
    code, err = closed_stdout([a.format(t=t) for a in args], env)
    assert (code, err) == (141, "")


def test_a_reader_that_left_mid_stream_stops_the_run_and_stores_it_interrupted(tmp_path):
    """JSON Lines streamed to a reader that left: the run stops (no more scoring for nobody) and its record
    says interrupted, not failed with a BrokenPipeError."""
    from assay.store import RunStore

    rows = "".join(json.dumps({"id": f"r{i}", "turns": [{"input": "q", "output": "a", "latency_ms": 5}]}) + "\n"
                   for i in range(5000))
    (tmp_path / "big.jsonl").write_text(rows)
    code, err = closed_stdout(["run", str(tmp_path / "big.jsonl"), "-m", "latency_score", "-f", "jsonl"],
                              cli_env(tmp_path))
    assert (code, err) == (141, "")
    (run,) = RunStore(tmp_path / "runs.sqlite3").runs()
    assert run.status == "interrupted" and run.n_traces < 5000


def test_an_output_pipe_whose_reader_left_is_named(tmp_path):
    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    import threading

    def read_a_little() -> None:
        with open(fifo, "rb") as f:
            f.read(10)

    reader = threading.Thread(target=read_a_little, daemon=True)
    reader.start()
    rows = "".join(json.dumps({"id": f"r{i}", "turns": [{"input": "q", "output": "a", "latency_ms": 5}]}) + "\n"
                   for i in range(20000))
    (tmp_path / "big.jsonl").write_text(rows)
    done = subprocess.run([sys.executable, "-m", "assay", "run", str(tmp_path / "big.jsonl"), "-m", "latency_score",
                           "--no-store", "-q", "-o", str(fifo)], env=cli_env(tmp_path), capture_output=True,
                          text=True, timeout=120)
    reader.join(timeout=30)
    assert done.returncode == 141
    assert done.stderr.startswith("Error: an output's reader went away: [Errno 32] Broken pipe"), done.stderr


def test_a_write_the_system_refuses_names_the_output_and_the_temporary_file_goes(tmp_path):
    import errno

    out = tmp_path / "r.jsonl"
    out.write_text("old\n")
    with pytest.raises(OSError) as caught, atomic_write(out) as f:
        f.write(b"new")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as a write on a full disk raises it: no file name
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(out)  # the user's name, not the temp's
    assert out.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl"]
    with pytest.raises(BrokenPipeError), atomic_write(out):  # the errno's own class is kept
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("how", [["-o", "/dev/full"], ["-f", "jsonl", ">"]], ids=["-o", "stdout"])
def test_a_full_disk_is_said_as_such_not_as_an_internal_error(tmp_path, how):
    """Writing to a full disk (/dev/full answers every write with ENOSPC) was "Error: internal error:
    OSError: [Errno 28] ..."; it is the system's refusal, said with the output it concerns, exit 3."""
    args = [sys.executable, "-m", "assay", "run", str(traces(tmp_path, 3)), "-m", "latency_score", "--no-store"]
    if how[-1] == ">":
        with open("/dev/full", "wb") as full:
            done = subprocess.run([*args, *how[:-1]], env=cli_env(tmp_path), stdout=full, stderr=subprocess.PIPE,
                                  text=True, timeout=60)
    else:
        done = subprocess.run([*args, "-q", *how], env=cli_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert done.stderr.strip().splitlines()[-1] == "Error: No space left on device" + (": /dev/full" if how[0] == "-o"
                                                                                       else ""), done.stderr
