"""``assay run`` tells the truth in its exit status: a pty run with a judge, a dead judge, an empty
input, --max-errors, and the same verdict from ``RunResult.status`` and the pytest plugin."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

import assay
from assay.judge import make_judge
from assay.pytest_plugin import assert_passes
from tests.support.cli import cli_env, run_pipe, run_pty
from tests.support.judge_server import JudgeServer, broken_body, delayed, obj, status

GOOD = {"evidence": [], "reasoning": "on topic", "score": 5}


def plain(text: str) -> str:
    """Terminal output without colour and cursor escapes."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def traces(tmp_path: Path, n: int) -> Path:
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps({"id": f"r{i}", "turns": [{"input": f"question {i}?", "output": f"answer {i}"}]})
                         + "\n" for i in range(n)))
    return p


def judge_args(server: JudgeServer, *extra: str) -> list[str]:
    return ["-m", "answer_relevance", "--judge", f"openai-compatible:scripted@{server.url}", "--no-cache",
            "--retries", "0", *extra]


def test_a_judge_run_on_a_terminal_completes_with_a_progress_bar(tmp_path):
    """The TTY-only crash (progress line after the first trace) cannot come back silently."""
    with JudgeServer(lambda req: delayed(obj(GOOD), 0.1)) as server:
        r = run_pty(["run", str(traces(tmp_path, 12)), *judge_args(server, "--concurrency", "2")],
                    cli_env(tmp_path))
        assert len(server.requests) == 12
    out = plain(r.output)
    assert r.returncode == 0, out
    assert "Traceback" not in out and "Error" not in out
    # the bar was drawn on the terminal, over the 12 planned judge calls, and moved
    assert re.search(r"━+ judge calls ([1-9]|1[0-2])/12 ", out), out
    assert "12 traces: 12 passed" in out


@pytest.mark.parametrize("reply", [status(500, "upstream exploded"), broken_body(), obj({"nonsense": True})],
                         ids=["http-500", "not-a-completion", "schema-mismatch"])
def test_a_dead_judge_exits_could_not_evaluate(tmp_path, reply):
    with JudgeServer(lambda req: reply) as server:
        r = run_pipe(["run", str(traces(tmp_path, 3)), "--no-store", *judge_args(server)], cli_env(tmp_path))
    assert r.returncode == 3, r.stderr
    assert "could not evaluate: nothing was scored: 3 of 3 metric results errored" in r.stderr
    summary = next(line for line in r.stderr.splitlines() if line.startswith("judge "))
    assert re.match(r"judge openai-compatible:scripted: \d+ calls made( \(6 re-asks\))?, 0 cached, 0 retried, "
                    r"errored 3: ", summary), summary
    assert summary.count("(3)") == 1  # the one reason, counted


def test_a_judge_server_that_is_down_exits_could_not_evaluate(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = run_pipe(["run", str(traces(tmp_path, 2)), "--no-store", "-m", "answer_relevance", "--no-cache",
                  "--retries", "0", "--judge", f"openai-compatible:m@http://127.0.0.1:{port}/v1"],
                 cli_env(tmp_path))
    assert r.returncode == 3, r.stderr
    assert "could not evaluate" in r.stderr


def test_an_empty_input_exits_could_not_evaluate(tmp_path):
    p = tmp_path / "empty.jsonl"
    p.write_text("")
    r = run_pipe(["run", str(p), "--no-store", "-m", "tool_selection_accuracy"], cli_env(tmp_path))
    assert r.returncode == 3 and "could not evaluate: no traces in the input" in r.stderr


def test_max_errors_as_count_and_fraction(tmp_path):
    def reply(req):
        text = json.dumps(req["messages"])
        return status(500, "boom") if "question 0?" in text else obj(GOOD)

    with JudgeServer(reply) as server:
        p = traces(tmp_path, 4)
        default = run_pipe(["run", str(p), "--no-store", *judge_args(server)], cli_env(tmp_path))
        count = run_pipe(["run", str(p), "--no-store", *judge_args(server, "--max-errors", "1")], cli_env(tmp_path))
        share = run_pipe(["run", str(p), "--no-store", *judge_args(server, "--max-errors", "25%")], cli_env(tmp_path))
        too_few = run_pipe(["run", str(p), "--no-store", *judge_args(server, "--max-errors", "0.2")],
                           cli_env(tmp_path))
        bad = run_pipe(["run", str(p), "--no-store", *judge_args(server, "--max-errors", "lots")], cli_env(tmp_path))
    assert default.returncode == 3 and "1 of 4 metric results errored" in default.stderr
    assert count.returncode == 0, count.stderr
    assert share.returncode == 0, share.stderr
    assert too_few.returncode == 3
    assert bad.returncode == 2 and bad.stderr.startswith("Error: --max-errors")


def test_internal_errors_exit_3_with_one_line(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from assay.cli import main
    from assay.engine import Evaluation

    def boom(*a, **k):
        raise TypeError("vars() argument must have __dict__ attribute")

    monkeypatch.setattr(Evaluation, "run", boom)
    r = CliRunner().invoke(main, ["run", str(traces(tmp_path, 1)), "--no-store", "-m", "tool_selection_accuracy"])
    assert r.exit_code == 3
    assert r.stderr.strip().splitlines() == [
        "Error: internal error: TypeError: vars() argument must have __dict__ attribute (--debug shows the traceback)"]


def test_run_result_status_and_the_plugin_agree_with_the_cli(tmp_path):
    with JudgeServer(lambda req: status(500, "down")) as server:
        judge = f"openai-compatible:scripted@{server.url}"
        result = assay.evaluate(traces(tmp_path, 2), ["answer_relevance"], judge=judge, cache=False, retries=0)
        assert result.status == "could_not_evaluate" and result.passed is False
        with pytest.raises(AssertionError, match="errored"):
            assert_passes(traces(tmp_path, 2), ["answer_relevance"], judge=make_judge(judge, cache=False, retries=0))
    empty = assay.evaluate([], ["tool_selection_accuracy"])
    assert empty.status == "could_not_evaluate" and not empty.passed
    with pytest.raises(AssertionError, match="could not evaluate: nothing was scored"):
        assert_passes({"id": "x", "turns": [{"input": "q", "output": "a"}]}, ["latency_score"])
    ok = assay.evaluate([{"id": "x", "turns": [{"input": "q", "output": "a", "latency_ms": 10}]}], ["latency_score"])
    assert ok.status == "passed" and ok.passed
