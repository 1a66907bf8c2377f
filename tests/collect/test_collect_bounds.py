"""``assay collect`` against a hostile or careless agent (issue #38): bounded child processes, bounded
replies, journals keyed by identity and locked, secrets kept home, escaped terminal output.

Commands are real subprocesses; endpoints real HTTP servers on 127.0.0.1. No assertion depends on
timing: a collection that could hang runs in a thread whose end is the assertion ("it finished").
"""

from __future__ import annotations

import json
import os
import select
import sys
import threading

import pytest

import assay
from assay import ConfigError, DataError
from assay._collect import journal_path, lock_path
from assay._collect._agents import MAX_ARGUMENTS, MAX_CALLS, MAX_CONTENT, STDERR_TAIL
from assay._collect._runner import MAX_TRIAL_CALLS
from tests.support.cli import cli_env, run_pipe
from tests.support.judge_server import JudgeServer, Reply, text

FINISH = 300  # seconds a collection that must end is given before the test calls it hung: a guard, not a timing


def finished(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a thread: its result, or a failure if it has not ended within FINISH s."""
    box: list = []

    def work():
        try:
            box.append((True, fn(*args, **kwargs)))
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box.append((False, exc))

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(FINISH)
    assert not thread.is_alive(), "the collection did not end"
    ok, value = box[0]
    if not ok:
        raise value
    return value


def agent_script(tmp_path, body: str, name: str = "agent.py") -> str:
    script = tmp_path / name
    script.write_text("import json, os, subprocess, sys, time\n" + body)
    return f"cmd:{sys.executable} {script}"


def dead(pid: int) -> bool:
    """Whether process ``pid`` (not our child) has ended, waiting on its exit as an event (pidfd)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], FINISH)
        return bool(readable)
    finally:
        os.close(fd)


needs_pidfd = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="waits on a process with pidfd_open (Linux)")


# -- child processes ------------------------------------------------------------------------------

def test_a_command_writing_40_mib_to_stderr_completes_with_its_stderr_capped(tmp_path):
    agent = agent_script(tmp_path, "chunk = b'e' * 2**20 + b'\\n'\n"
                                   "for _ in range(40):\n    sys.stderr.buffer.write(chunk)\n"
                                   "sys.stderr.buffer.write(b'the last words')\nsys.stderr.flush()\n"
                                   "for line in sys.stdin:\n    print(json.dumps('ok'), flush=True)\n")
    collected = finished(assay.collect, [{"id": "t", "input": "hi"}], agent, retries=0, timeout=120)
    trace = collected.traces[0]
    assert trace.status == "completed" and trace.turns[0].output == "ok"
    stderr = trace.metadata["collect"]["stderr"]
    assert stderr["bytes"] == 40 * (2**20 + 1) + len("the last words")
    assert len(stderr["tail"]) <= STDERR_TAIL and stderr["tail"].endswith("the last words")
    assert trace.metadata["truncated"]["stderr_bytes"] == stderr["bytes"] - STDERR_TAIL


def test_a_command_that_closes_stdout_and_floods_stderr_is_ended(tmp_path):
    agent = agent_script(tmp_path, "chunk = b'x' * 2**20\nsys.stderr.buffer.write(chunk)\nsys.stderr.flush()\n"
                                   "os.close(1)\nwhile True:\n    sys.stderr.buffer.write(chunk)\n")
    trace = finished(assay.collect, [{"id": "t", "input": "hi"}], agent, retries=0).traces[0]
    assert trace.status == "failed" and "the command ended without a reply" in trace.metadata["error"]
    assert len(trace.metadata["collect"]["stderr"]["tail"]) <= STDERR_TAIL  # what is kept is bounded


@needs_pidfd
def test_what_a_command_spawns_is_dead_after_its_trial(tmp_path):
    pids = tmp_path / "pids"
    agent = agent_script(tmp_path, f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
                                   f"open({str(pids)!r}, 'a').write(f'{{child.pid}}\\n')\n"
                                   "for line in sys.stdin:\n    print(json.dumps('ok'), flush=True)\n")
    trace = finished(assay.collect, [{"id": "t", "input": "hi"}], agent, retries=0).traces[0]
    assert trace.status == "completed"
    [pid] = [int(p) for p in pids.read_text().split()]
    assert dead(pid)


@needs_pidfd
def test_the_timeout_kills_the_command_and_what_it_spawned(tmp_path):
    pids = tmp_path / "pids"
    # the first call is answered; the second never is (the process and its child sleep on)
    agent = agent_script(tmp_path, f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
                                   f"open({str(pids)!r}, 'a').write(f'{{os.getpid()}} {{child.pid}}\\n')\n"
                                   "sys.stdin.readline()\nprint(json.dumps('first'), flush=True)\n"
                                   "sys.stdin.readline()\ntime.sleep(600)\n")
    task = {"id": "t", "input": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    # 15 s: the first call (a Python start-up and another) must be answered in time on a loaded machine too
    trace = finished(assay.collect, [task], agent, retries=0, timeout=15).traces[0]
    assert trace.status == "failed" and "no reply within 15 s" in trace.metadata["error"]
    assert trace.turns[0].output == "first"
    assert all(dead(int(pid)) for pid in pids.read_text().split())


def test_a_reply_line_over_the_limit_is_refused(tmp_path):
    from assay._collect._agents import CommandAgent

    agent = agent_script(tmp_path, "for line in sys.stdin:\n    print(json.dumps('x' * 5000), flush=True)\n")
    backend = CommandAgent(agent[4:], max_reply=1000)
    trace = finished(assay.collect, [{"id": "t", "input": "hi"}], backend, retries=0).traces[0]
    assert trace.status == "failed" and "reply over" in trace.metadata["error"]


def test_a_command_that_echoes_its_request_is_a_failed_trial_not_an_empty_answer(tmp_path):
    """`cmd:cat` answers each request with the request itself: an object with no 'content' or 'tool_calls'.
    It was read as an empty answer and the trial counted completed."""
    trace = finished(assay.collect, [{"id": "t", "input": "hi"}], "cmd:cat", retries=0).traces[0]
    assert trace.status == "failed"
    assert ("expected a string or an object with 'content' and/or 'tool_calls', got an object with 'messages', "
            "'tools', 'task_id', 'trial'") in trace.metadata["error"]


@pytest.mark.parametrize("reply, said", [({"content": 42}, "'content' must be a string (the answer), got integer"),
                                         ({"answer": "yes"}, "got an object with 'answer'"),
                                         ({}, "got an object with no fields")])
def test_a_reply_that_is_not_an_answer_fails_its_trial(reply, said):
    trace = assay.collect([{"id": "t", "input": "hi"}], lambda messages: reply, retries=0).traces[0]
    assert trace.status == "failed" and said in trace.metadata["error"], trace.metadata
    ok = assay.collect([{"id": "t", "input": "hi"}], lambda messages: {"content": None, "tool_calls": []},
                       retries=0).traces[0]
    assert ok.status == "completed"  # an empty answer said as such is an answer


# -- replies --------------------------------------------------------------------------------------

def flood(messages, tools=None):
    """An agent that asks for 100 tool calls at every step, whatever it is told."""
    return {"content": "", "tool_calls": [{"id": f"c{i}", "name": "lookup", "arguments": {"q": i}} for i in range(100)]}


def test_tool_calls_per_reply_and_per_trial_are_capped_and_counted():
    task = {"id": "t", "input": "hi", "tools": [{"name": "lookup", "parameters": {"type": "object"},
                                                 "default": "ok"}]}
    trace = assay.collect([task], flood, retries=0).traces[0]
    calls = trace.turns[0].tool_calls
    assert len(calls) == MAX_TRIAL_CALLS == 4 * MAX_CALLS  # four replies' kept calls, then the trial ends
    assert trace.status == "failed" and f"over {MAX_TRIAL_CALLS} tool calls" in trace.metadata["error"]
    # four replies of 100 lose 36 each to the per-reply cap; the fifth loses all 100 to the per-trial cap
    assert trace.metadata["truncated"] == {"tool_calls": 4 * (100 - MAX_CALLS) + 100}


def big(messages, tools=None):
    if messages[-1]["role"] == "tool":
        return "y" * (MAX_CONTENT + 10)
    return {"tool_calls": [{"name": "lookup", "arguments": {"q": "z" * MAX_ARGUMENTS}},
                           {"name": "lookup", "arguments": {"q": "small"}}]}


def test_oversized_arguments_and_text_are_dropped_and_counted():
    task = {"id": "t", "input": "hi", "tools": [{"name": "lookup", "parameters": {"type": "object"},
                                                 "default": "ok"}]}
    trace = assay.collect([task], big, retries=0).traces[0]
    first, second = trace.turns[0].tool_calls
    assert first.error is not None and "over the 64 KiB limit" in first.error and first.result is None
    assert second.error is None and second.result == "ok"
    assert len(trace.turns[0].output) == MAX_CONTENT
    assert trace.metadata["truncated"] == {"arguments": 1, "content": 10}


def test_a_chat_agent_flood_is_bounded_too(judge_server):
    many = [{"id": f"c{i}", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"q": i})}}
            for i in range(1000)]
    judge_server.reply = lambda request: text("done") if request["messages"][-1]["role"] == "tool" else \
        Reply(body={"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": many}}]})
    task = {"id": "t", "input": "hi", "tools": [{"name": "lookup", "parameters": {"type": "object"},
                                                 "default": "ok"}]}
    trace = assay.collect([task], f"openai-compatible:agent@{judge_server.url}", retries=0, cache=False).traces[0]
    assert len(trace.turns[0].tool_calls) == MAX_CALLS and trace.turns[0].output == "done"
    assert trace.metadata["truncated"] == {"tool_calls": 1000 - MAX_CALLS}
    assert len(judge_server.requests[-1].messages[-MAX_CALLS - 1]["tool_calls"]) == MAX_CALLS


# -- journals -------------------------------------------------------------------------------------

def test_a_resume_against_another_endpoint_with_the_same_model_name_starts_afresh(tmp_path):
    out = tmp_path / "t.jsonl"
    tasks = [{"id": f"t{i}", "input": f"q{i}"} for i in range(3)]
    cancel = threading.Event()
    with JudgeServer(lambda r: text("from A")) as a, JudgeServer(lambda r: text("from B")) as b:
        stopped = assay.collect(tasks, f"openai-compatible:agent@{a.url}", output=out, concurrency=1, cache=False,
                                cancel=cancel, on_trial=lambda trace, fault: cancel.set())
        assert stopped.interrupted and journal_path(out).exists() and len(stopped.traces) >= 1
        other = assay.collect(tasks, f"openai-compatible:agent@{b.url}", output=out, cache=False)
    assert other.resumed == 0 and [t.turns[0].output for t in other.traces] == ["from B"] * 3
    assert len(b.requests) == 3


def test_a_second_collection_into_the_same_output_is_refused_while_the_first_runs(tmp_path):
    out = tmp_path / "t.jsonl"
    started, release = threading.Event(), threading.Event()

    def slow(messages):
        started.set()
        release.wait(FINISH)
        return "done"

    first = threading.Thread(target=assay.collect, args=([{"id": "t", "input": "hi"}], slow), kwargs={"output": out})
    first.start()
    try:
        assert started.wait(FINISH)
        with pytest.raises(ConfigError) as error:
            assay.collect([{"id": "t", "input": "hi"}], agent="tests.collect.agents:async_echo", output=out)
        message = str(error.value)
        assert str(lock_path(out)) in message and f"pid {os.getpid()}" in message
    finally:
        release.set()
        first.join(FINISH)
    assert json.loads(out.read_text())["turns"][0]["output"] == "done" and not lock_path(out).exists()
    again = assay.collect([{"id": "t", "input": "hi"}], agent="tests.collect.agents:async_echo", output=out)
    assert again.traces[0].turns[0].output == "echo: hi"  # the lock went with the first collection


@pytest.mark.parametrize("damage", ["binary", "not-a-header", "damaged-middle"])
def test_a_damaged_journal_is_named_with_the_way_out(tmp_path, damage):
    out = tmp_path / "t.jsonl"
    tasks = [{"id": "t", "input": "hi"}, {"id": "u", "input": "hi"}]
    cancel = threading.Event()
    assay.collect(tasks, "tests.collect.agents:async_echo", output=out, concurrency=1, cancel=cancel,
                  on_trial=lambda trace, fault: cancel.set())
    header, *trials = journal_path(out).read_bytes().splitlines(keepends=True)
    journal_path(out).write_bytes({"binary": b"\x00\xff garbage\n", "not-a-header": b"[1, 2]\n",
                                   "damaged-middle": header + b"not json\n" + b"".join(trials)}[damage])
    with pytest.raises(DataError, match=r"\.t\.jsonl\.collect-journal.*is damaged.*Delete it, or rerun with --fresh"):
        assay.collect(tasks, "tests.collect.agents:async_echo", output=out)
    fresh = assay.collect(tasks, "tests.collect.agents:async_echo", output=out, fresh=True)
    assert fresh.resumed == 0 and len(fresh.traces) == 2 and not journal_path(out).exists()


def test_a_damaged_journal_from_the_cli_is_not_an_internal_error(tmp_path):
    tasks, out = tmp_path / "tasks.jsonl", tmp_path / "t.jsonl"
    tasks.write_text(json.dumps({"id": "t", "input": "hi"}) + "\n")
    journal_path(out).write_bytes(b"\x00garbage\n")
    args = ["collect", str(tasks), "--agent", "tests.collect.agents:async_echo", "-o", str(out), "--no-progress"]
    env = cli_env(tmp_path, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    done = run_pipe(args, env)
    assert done.returncode == 2 and "internal error" not in done.stderr
    assert str(journal_path(out)) in done.stderr and "--fresh" in done.stderr
    again = run_pipe([*args, "--fresh"], env)
    assert again.returncode == 0, again.stderr


# -- secrets --------------------------------------------------------------------------------------

def test_a_command_gets_a_minimal_environment_and_what_the_user_passes(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-assay-test-secret-0123456789")
    monkeypatch.setenv("MY_AGENT_SETTING", "blue")
    monkeypatch.setenv("OTHER_SETTING", "red")
    agent = agent_script(tmp_path, "for line in sys.stdin:\n    print(json.dumps(json.dumps(dict(os.environ))), "
                                   "flush=True)\n")
    seen = json.loads(assay.collect([{"id": "t", "input": "hi"}], agent, retries=0).traces[0].turns[0].output)
    assert "OPENAI_API_KEY" not in seen and "OTHER_SETTING" not in seen and seen["PATH"] == os.environ["PATH"]
    passed = assay.collect([{"id": "t", "input": "hi"}], agent, retries=0, agent_env=["MY_AGENT_SETTING"])
    assert json.loads(passed.traces[0].turns[0].output)["MY_AGENT_SETTING"] == "blue"
    with pytest.raises(ConfigError, match="--agent-env NOT_SET_ANYWHERE: no such environment variable"):
        assay.collect([{"id": "t", "input": "hi"}], agent, agent_env=["NOT_SET_ANYWHERE"])


def test_openai_s_key_is_sent_only_to_openai(judge_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-assay-test-secret-0123456789")
    judge_server.reply = lambda request: text("ok")
    task = [{"id": "t", "input": "hi"}]
    assay.collect(task, f"openai-compatible:agent@{judge_server.url}", retries=0, cache=False)
    assert "sk-assay-test-secret" not in json.dumps(judge_server.requests[-1].headers)
    assay.collect(task, f"openai-compatible:agent@{judge_server.url}", retries=0, cache=False,
                  agent_options={"api_key": "explicit-key-for-this-endpoint"})
    assert judge_server.requests[-1].headers["Authorization"] == "Bearer explicit-key-for-this-endpoint"


def test_the_cli_passes_a_key_and_an_environment_by_name(tmp_path):
    tasks, out = tmp_path / "tasks.jsonl", tmp_path / "t.jsonl"
    tasks.write_text(json.dumps({"id": "t", "input": "hi"}) + "\n")
    with JudgeServer(lambda r: text("ok")) as server:
        env = cli_env(tmp_path, OPENAI_API_KEY="sk-assay-test-secret-0123456789", MY_KEY="my-endpoint-key-42")
        done = run_pipe(["collect", str(tasks), "--agent", f"openai-compatible:agent@{server.url}", "-o", str(out),
                         "--no-progress", "--no-cache", "--agent-key-env", "MY_KEY"], env)
        assert done.returncode == 0, done.stderr
        assert [r.headers.get("Authorization") for r in server.requests] == ["Bearer my-endpoint-key-42"]
    agent = agent_script(tmp_path, "for line in sys.stdin:\n    print(json.dumps(os.environ.get('MY_KEY', 'none')), "
                                   "flush=True)\n")
    for extra, seen in (([], "none"), (["--agent-env", "MY_KEY"], "my-endpoint-key-42")):
        done = run_pipe(["collect", str(tasks), "--agent", agent, "-o", str(out), "--no-progress", *extra], env)
        assert done.returncode == 0, done.stderr
        assert json.loads(out.read_text())["turns"][0]["output"] == seen


# -- the terminal ---------------------------------------------------------------------------------

def test_collect_prints_task_ids_and_agent_errors_escaped(tmp_path):
    tasks, out = tmp_path / "tasks.jsonl", tmp_path / "t.jsonl"
    hostile = "\x1b]0;pwned\x07\x1b[2J\u202e"
    tasks.write_text(json.dumps({"id": f"t{hostile}", "input": "hi"}) + "\n")
    agent = agent_script(tmp_path, f"sys.stderr.write({hostile!r})\nsys.exit(3)\n")
    done = run_pipe(["collect", str(tasks), "--agent", agent, "-o", str(out), "--no-progress", "--retries", "0"],
                    cli_env(tmp_path))
    assert done.returncode == 3
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr and "\u202e" not in done.stderr
    line = next(line for line in done.stderr.splitlines() if line.startswith("  failed"))
    assert line.startswith("  failed t\\x1b]0;pwned\\x07\\x1b[2J\\u202e#0: agent: ")
    assert line.endswith("the command ended without a reply (exit 3): \\x1b]0;pwned\\x07\\x1b[2J\\u202e")
