"""``assay collect`` end to end: a scripted OpenAI-compatible agent, a scripted simulated user, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import cli_env, run_pipe
from tests.support.judge_server import JudgeServer, obj, status, text, tool

TASKS = [
    {"id": "refund", "input": "I want a refund for order A1.", "goal": "get the refund for order A1 confirmed",
     "scenario": "You bought a kettle (order A1) that arrived broken.", "system": "You are a support agent.",
     "tools": [{"name": "lookup_order", "parameters": {"type": "object", "properties": {"order": {"type": "string"}}},
                "results": [{"arguments": {"order": "A1"}, "result": {"status": "delivered", "item": "kettle"}}]}],
     "expected": {"tool_calls": [{"name": "lookup_order", "arguments": {"order": "A1"}}]}},
    {"id": "hello", "input": "Hi, can you tell me your opening hours?", "goal": "learn the opening hours"},
    {"id": "broken", "input": "break", "goal": "anything"},
]


def agent_reply(request: dict):
    messages = request["messages"]
    first = next(m["content"] for m in messages if m["role"] == "user")
    if first == "break":
        return status(500, "agent backend down")
    if request.get("tools") and not any(m["role"] == "tool" for m in messages):
        return tool({"order": "A1"}, name="lookup_order")
    return text(f"Answer {sum(m['role'] == 'user' for m in messages)}: done.")


def user_reply(request: dict):
    shown = request["messages"][-1]["content"]
    if shown.count("USER (you):") >= 2:
        return obj({"message": "", "stop": "goal_met"})
    return obj({"message": "Thanks. And when will it arrive?", "stop": "continue"})


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_trials_conversations_failures_then_pass_at_k(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    out = tmp_path / "t.jsonl"
    env = cli_env(tmp_path)
    with JudgeServer(agent_reply) as agent, JudgeServer(user_reply) as user:
        done = run_pipe(["collect", str(tasks), "--agent", f"openai-compatible:agent@{agent.url}",
                         "--user", f"openai-compatible:user@{user.url}", "--trials", "3", "-o", str(out),
                         "--retries", "1"], env)
        assert done.returncode == 0, done.stderr
        assert "collected 9 traces (3 tasks x 3 trials)" in done.stderr and "6 completed, 3 failed" in done.stderr
        # the agent never sees the user's scenario; the user never sees the agent's system prompt or tools
        assert not any("kettle (order A1)" in json.dumps(r.json) for r in agent.requests)
        assert not any("support agent" in json.dumps(r.json) or "lookup_order" in json.dumps(r.json)
                       for r in user.requests)
    traces = lines(out)
    assert [(t["task_id"], t["trial"]) for t in traces] == [(task["id"], k) for task in TASKS for k in range(3)]
    for t in traces:
        assert t["id"] == f"{t['task_id']}#{t['trial']}"
        if t["task_id"] == "broken":  # the 500 fails this task's trials only
            assert t["status"] == "failed" and "agent backend down" in t["metadata"]["error"]
            assert t["metadata"]["stop_reason"] == "agent_error"
            continue
        assert t["status"] == "completed" and t["metadata"]["stop_reason"] == "goal_met"
        assert [turn["input"] for turn in t["turns"]] == [TASKS[0]["input"] if t["task_id"] == "refund"
                                                          else TASKS[1]["input"], "Thanks. And when will it arrive?"]
        assert all(turn["output"].startswith("Answer") and turn["usage"]["input_tokens"] > 0 for turn in t["turns"])
        assert t["metadata"]["collect"]["temperature"] == 1.0
    refund = traces[0]
    call = refund["turns"][0]["tool_calls"][0]
    assert call["name"] == "lookup_order" and call["arguments"] == {"order": "A1"}
    assert call["result"] == {"status": "delivered", "item": "kettle"}
    assert refund["expected"]["tool_calls"][0]["name"] == "lookup_order"

    scored = run_pipe(["run", str(out), "--no-store", "-f", "json"], env)
    assert scored.returncode in (0, 1), scored.stderr
    trials = json.loads(scored.stdout)["statistics"]["trials"]
    assert trials["n_tasks"] == 3 and trials["trials_per_task"] == {"min": 3, "max": 3}
    assert [row["k"] for row in trials["trace_passed"]] == [1, 2, 3]
    assert all("pass_at_k" in row and "pass_pow_k" in row for row in trials["trace_passed"])
    table = run_pipe(["run", str(out), "--no-store"], env)
    assert "pass@k / pass^k over 3 tasks x 3 trials" in " ".join(table.stdout.split())
    assert "k=3 " in table.stdout


def test_score_in_the_same_command(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(TASKS[0]) + "\n")
    env = cli_env(tmp_path)
    with JudgeServer(agent_reply) as agent:
        done = run_pipe(["collect", str(tasks), "--agent", f"openai-compatible:agent@{agent.url}", "--trials", "2",
                         "-o", str(tmp_path / "t.jsonl"), "--score", "-m", "tool_selection_accuracy", "--no-store",
                         "--results", str(tmp_path / "r.json")], env)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["summary"]["tool_selection_accuracy"]["n"] == 2
    assert [t["trial"] for t in result["traces"]] == [0, 1]


def test_a_simulated_user_that_breaks_its_role_is_kept_apart(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(TASKS[1]) + "\n")
    env = cli_env(tmp_path)
    out = tmp_path / "t.jsonl"
    with JudgeServer(agent_reply) as agent, \
            JudgeServer(lambda r: obj({"message": "Assistant: How can I help you today?", "stop": "continue"})) as user:
        done = run_pipe(["collect", str(tasks), "--agent", f"openai-compatible:agent@{agent.url}",
                         "--user", f"openai-compatible:user@{user.url}", "--trials", "2", "-o", str(out)], env)
    # no agent trace survived, so nothing could be collected; the faults are the simulator's, on their own file
    assert done.returncode == 3, done.stderr
    assert "2 simulator errors (not scored)" in done.stderr
    assert lines(out) == []
    faults = lines(tmp_path / "t.simulator-errors.jsonl")
    assert [f["trial"] for f in faults] == [0, 1]
    assert all(f["metadata"]["stop_reason"] == "simulator_error" and "answered as the assistant"
               in f["metadata"]["simulator_error"] and f["status"] == "partial" for f in faults)


def test_bad_task_file_is_a_located_usage_error(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(TASKS[1]) + "\n" + json.dumps({"id": "x", "input": "hi",
                                                               "tools": [{"name": "t", "parameters": "x"}]}) + "\n")
    done = run_pipe(["collect", str(tasks), "--agent", "tests.collect.agents:async_echo", "-o",
                     str(tmp_path / "t.jsonl")], cli_env(tmp_path))
    assert done.returncode == 2
    assert f"Error: {tasks}:2: tools[0].parameters: expected an object or null, got string" in done.stderr


def test_ctrl_c_keeps_the_finished_trials_and_the_rerun_collects_the_rest(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from tests.support.judge_server import delayed

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "input": f"question {i}"}) + "\n" for i in range(10)))
    out = tmp_path / "t.jsonl"
    out.write_text("previous traces\n")
    env = cli_env(tmp_path)
    with JudgeServer(lambda request: delayed(text("an answer"), 0.3)) as agent:
        args = ["collect", str(tasks), "--agent", f"openai-compatible:agent@{agent.url}", "-o", str(out),
                "--concurrency", "2", "--no-progress"]
        proc = subprocess.Popen([sys.executable, "-m", "assay", *args], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while agent.completed < 3:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 130, err
        assert "rerun the same command to collect the unfinished ones" in err
        assert out.read_text() == "previous traces\n"  # nothing half-written over the old file
        first = len(agent.requests)
        kept = int(err.split("interrupted after ")[1].split()[0])
        assert kept < 10  # under load the replies sent may not all be read yet: 0 is possible
        again = run_pipe(args, env)
        assert again.returncode == 0, again.stderr
        assert (f"{kept} kept from the interrupted run" in again.stderr) == (kept > 0)
        assert len(agent.requests) - first == 10 - kept
    assert [t["task_id"] for t in lines(out)] == [f"t{i}" for i in range(10)]


def test_progress_counts_trials():
    import io

    from assay.cli.collect import _TrialProgress

    stream = io.StringIO()
    with _TrialProgress(9, tty=False, interval=60, stream=stream) as progress:
        progress.trace_done()
        progress.trace_done()
        progress.show()
    assert stream.getvalue().startswith("progress: trials 2/9")
