"""``assay.collect`` from Python: agent kinds, tools, trials, the cache, resuming, faults kept apart."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import assay
from assay import ConfigError, DataError
from assay._collect import journal_path
from tests.collect import agents
from tests.support.judge_server import obj, text

WEATHER = {"id": "w", "input": "Weather in Paris?", "tools": [
    {"name": "weather", "description": "Current weather", "function": "tests.collect.agents:weather",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
    "expected": {"tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}}]}}


def test_a_python_agent_calls_a_tool_from_the_task_file(tmp_path):
    out = tmp_path / "t.jsonl"
    collected = assay.collect([WEATHER], "tests.collect.agents:weather_agent", trials=2, output=out,
                              allow_code="tests.collect")
    assert [t.id for t in collected.traces] == ["w#0", "w#1"] and collected.simulator_errors == []
    turn = collected.traces[0].turns[0]
    call = turn.tool_calls[0]
    assert (call.name, call.arguments, call.result, call.error) == ("weather", {"city": "Paris"},
                                                                     {"city": "Paris", "sky": "sunny"}, None)
    assert turn.output == "It is sunny in Paris." and turn.usage.cost_usd == pytest.approx(0.001)
    # the tool's result went back to the agent as a tool message answering its call
    asked = agents.CALLS[-1]
    assert asked[-2]["tool_calls"][0]["function"]["name"] == "weather" and asked[-1]["role"] == "tool"
    # what was written is what was returned, and assay.evaluate takes the result directly
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["w#0", "w#1"]
    result = assay.evaluate(collected, ["tool_selection_accuracy"])
    assert [r.metrics["tool_selection_accuracy"].score for r in result.traces] == [1.0, 1.0]
    assert not journal_path(out).exists()


def test_canned_results_and_tool_errors_are_recorded():
    task = {**WEATHER, "tools": [{"name": "weather", "results": [{"arguments": {"city": "Rome"}, "result": "rain"}]}]}
    trace = assay.collect([task], agents.weather_agent).traces[0]
    call = trace.turns[0].tool_calls[0]
    assert call.result is None and "no canned result of tool 'weather' for arguments" in call.error
    assert trace.status == "failed"  # the agent then read a result without 'sky' and raised
    assert "KeyError" in trace.metadata["error"]


def test_an_agent_that_raises_gives_failed_traces_and_the_others_go_on():
    tasks = [{"id": "a", "input": "x"}, {"id": "b", "input": "y"}]
    collected = assay.collect(tasks, agents.broken, trials=2, retries=0)
    assert [t.status for t in collected.traces] == ["failed"] * 4
    assert "agent crashed" in collected.traces[0].metadata["error"]
    echo = assay.collect(tasks, "tests.collect.agents:async_echo", trials=2)
    assert [t.turns[0].output for t in echo.traces] == ["echo: x", "echo: x", "echo: y", "echo: y"]
    assert all(t.status == "completed" and t.metadata["stop_reason"] == "scripted" for t in echo.traces)


def test_trials_never_share_a_cached_reply_and_a_rerun_replays_them(tmp_path, judge_server):
    count = iter(range(1000))
    judge_server.reply = lambda request: text(f"sample {next(count)}")
    agent = f"openai-compatible:agent@{judge_server.url}"
    cache = tmp_path / "cache.sqlite3"
    first = assay.collect([{"id": "t", "input": "Say something."}], agent, trials=3, cache=cache, seed=7)
    outputs = [t.turns[0].output for t in first.traces]
    assert len(set(outputs)) == 3 and len(judge_server.requests) == 3
    assert sorted(r.json["seed"] for r in judge_server.requests) == [7, 8, 9]  # trials run concurrently
    assert [t.metadata["collect"]["seed"] for t in first.traces] == [7, 8, 9]
    again = assay.collect([{"id": "t", "input": "Say something."}], agent, trials=3, cache=cache, seed=7)
    assert [t.turns[0].output for t in again.traces] == outputs and len(judge_server.requests) == 3
    fresh = assay.collect([{"id": "t", "input": "Say something."}], agent, trials=3, cache=False, seed=7)
    assert len(judge_server.requests) == 6 and {t.turns[0].output for t in fresh.traces}.isdisjoint(outputs)


def test_a_rerun_after_an_interrupt_collects_only_the_unfinished_trials(tmp_path):
    out = tmp_path / "t.jsonl"
    tasks = [{"id": f"t{i}", "input": f"q{i}"} for i in range(3)]
    cancel = threading.Event()
    agents.CALLS.clear()
    stopped = assay.collect(tasks, "tests.collect.agents:async_echo", trials=2, output=out, concurrency=1,
                            cancel=cancel, on_trial=lambda trace, fault: cancel.set())
    assert stopped.interrupted and not out.exists() and journal_path(out).exists()
    kept = len(stopped.traces)
    assert 1 <= kept < 6
    agents.CALLS.clear()
    resumed = assay.collect(tasks, "tests.collect.agents:async_echo", trials=2, output=out, concurrency=1)
    assert len(agents.CALLS) == 6 - kept and resumed.resumed == kept
    assert [(t.task_id, t.trial) for t in resumed.traces] == [(f"t{i}", k) for i in range(3) for k in range(2)]
    assert len(out.read_text().splitlines()) == 6 and not journal_path(out).exists()
    # another collection into the same file does not reuse that journal
    agents.CALLS.clear()
    assay.collect(tasks[:1], "tests.collect.agents:async_echo", trials=2, output=out)
    assert len(agents.CALLS) == 2


def test_a_fixed_list_of_user_turns_and_a_simulated_user_that_stops(judge_server):
    judge_server.reply = lambda request: obj({"message": "", "stop": "gave_up"})
    task = {"id": "m", "input": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "one"},
                                 {"role": "user", "content": "two"}], "goal": "hear 'three'", "max_turns": 5}
    scripted = assay.collect([task], agents.async_echo).traces[0]
    assert [t.output for t in scripted.turns] == ["echo: one", "echo: two"] and scripted.system == "Be brief."
    simulated = assay.collect([task], agents.async_echo, user=f"openai-compatible:user@{judge_server.url}").traces[0]
    assert len(simulated.turns) == 2 and simulated.metadata["stop_reason"] == "gave_up"
    shown = judge_server.requests[0].messages[-1]["content"]
    assert "hear 'three'" in shown and "echo: two" in shown and "Be brief." not in shown


def test_out_of_turns_and_a_user_that_fails(judge_server):
    judge_server.reply = lambda request: obj({"message": "more please", "stop": "continue"})
    task = {"id": "long", "input": "start", "goal": "never satisfied", "max_turns": 3}
    trace = assay.collect([task], agents.async_echo, user=f"openai-compatible:user@{judge_server.url}").traces[0]
    assert [t.input for t in trace.turns] == ["start", "more please", "more please"]
    assert trace.metadata["stop_reason"] == "max_turns" and len(judge_server.requests) == 2
    judge_server.reply = lambda request: text("not json at all")
    broken = assay.collect([task], agents.async_echo, user=f"openai-compatible:user@{judge_server.url}",
                           user_options={"cache": False, "reasks": 0})
    assert broken.traces == [] and "the simulated user's call failed" in broken.simulator_errors[0].metadata[
        "simulator_error"]


@pytest.mark.parametrize("message, why", [
    ("", "empty user message"),
    ("AI: Sure, I can help with that.", "answered as the assistant"),
    ("Hello! How can I help you today?", "answered as the assistant"),
    ("According to my scenario I need a refund.", "hidden instructions"),
    ("I bought a blue kettle from your shop on the second of May and it", "quoted its scenario verbatim"),
], ids=["empty", "role-label", "assistant-phrase", "mentions-scenario", "verbatim"])
def test_role_breaks(message, why):
    from assay._collect._tasks import Task
    from assay._collect._user import UserTurn, role_break

    task = Task(id="k", input="hi", scenario="I bought a blue kettle from your shop on the second of May and it "
                                              "stopped working after two days.")
    assert why in role_break(UserTurn(message=message, stop="continue"), task, "Hi there")
    assert role_break(UserTurn(message="My kettle broke, can I get a refund?", stop="continue"), task, "Hi") is None


class _AgentHandler(BaseHTTPRequestHandler):
    seen: list[dict] = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append(body)
        status, reply = (500, {"error": "down"}) if body["task_id"] == "down" else \
            (200, {"content": f"{body['task_id']}/{body['trial']}: {body['messages'][-1]['content']}",
                   "usage": {"input_tokens": 3, "output_tokens": 2}})
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_an_http_agent():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AgentHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/agent"
        collected = assay.collect([{"id": "up", "input": "hi"}, {"id": "down", "input": "hi"}], url, trials=2,
                                  retries=0)
    finally:
        server.shutdown()
    assert [(t.id, t.status) for t in collected.traces] == [("up#0", "completed"), ("up#1", "completed"),
                                                           ("down#0", "failed"), ("down#1", "failed")]
    assert collected.traces[1].turns[0].output == "up/1: hi" and collected.traces[0].turns[0].usage.input_tokens == 3
    assert _AgentHandler.seen[0]["tools"] == []


def test_a_command_agent_keeps_one_process_per_trial(tmp_path):
    script = tmp_path / "agent.py"
    script.write_text("import json, os, sys\nn = 0\nfor line in sys.stdin:\n    n += 1\n"
                      "    msg = json.loads(line)['messages'][-1]['content']\n"
                      "    print(json.dumps({'content': f'{os.getpid()} call {n}: {msg}'}), flush=True)\n")
    task = {"id": "c", "input": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    collected = assay.collect([task], f"cmd:{sys.executable} {script}", trials=2)
    outs = [[t.output for t in trace.turns] for trace in collected.traces]
    pids = [{o.split()[0] for o in out} for out in outs]
    assert [o.split(" ", 1)[1] for o in outs[0]] == ["call 1: a", "call 2: b"]
    assert len(pids[0]) == 1 and pids[0] != pids[1]  # one process per trial, kept across its turns
    dead = assay.collect([task], f"cmd:{sys.executable} -c 'import sys; sys.exit(4)'", retries=0).traces[0]
    assert dead.status == "failed" and "ended without a reply (exit 4)" in dead.metadata["error"]


@pytest.mark.parametrize("tasks, message", [
    ([{"id": 1, "input": ""}], "input: empty"),
    ([{"id": 1, "input": "x", "tool": []}], "did you mean 'tools'"),
    ([{"id": 1, "input": [{"role": "assistant", "content": "x"}]}], "the agent writes the assistant's turns"),
    ([{"id": 1, "input": "x"}, {"id": "1", "input": "y"}], "task id '1' is already used on line 1"),
    ([{"id": 1, "input": "x", "tools": [{"name": "t", "function": "m:f", "results": [{}]}]}], "not both"),
], ids=["empty-input", "typo", "assistant-input", "duplicate-id", "function-and-results"])
def test_bad_tasks_are_data_errors(tasks, message):
    with pytest.raises(DataError, match=message.replace("(", r"\(")):
        assay.collect(tasks, agents.async_echo)


def test_the_output_cannot_be_the_task_file(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": 1, "input": "x"}) + "\n")
    with pytest.raises(ConfigError, match="is a file this command already uses"):
        assay.collect(tasks, agents.async_echo, output=tasks)
    assert json.loads(tasks.read_text()) == {"id": 1, "input": "x"}


def test_a_tool_function_that_cannot_be_imported_stops_before_any_agent_call():
    agents.CALLS.clear()
    task = {"id": "x", "input": "hi", "tools": [{"name": "t", "function": "tests.collect.agents:no_such_tool"}]}
    with pytest.raises(ConfigError, match="'t': 'tests.collect.agents:no_such_tool': tests.collect.agents has no"):
        assay.collect([task], agents.async_echo, allow_code=["tests.collect"])
    assert agents.CALLS == []


def test_each_side_takes_judge_options(judge_server):
    from assay.model._options import JudgeOptions
    from tests.support.judge_server import status

    judge_server.reply = lambda request: status(500, "down")
    options = JudgeOptions(retries=1, base_delay=0.01, max_delay=0.01, cache=False)
    trace = assay.collect([{"id": "a", "input": "x"}], f"openai-compatible:agent@{judge_server.url}",
                          agent_options=options, retries=4).traces[0]
    assert trace.status == "failed" and "(after 2 attempts)" in trace.metadata["error"]
    assert len(judge_server.requests) == 2


def test_bad_agents_are_config_errors():
    with pytest.raises(ConfigError, match="cannot import 'no_such_module_x'"):
        assay.collect([{"id": 1, "input": "x"}], "no_such_module_x:reply")
    with pytest.raises(ConfigError, match="only OpenAI-compatible chat endpoints"):
        assay.collect([{"id": 1, "input": "x"}], "anthropic:claude-3-5-haiku-latest", api_key="k")


def test_a_dollar_budget_does_not_apply_to_an_agent_assay_cannot_price():
    trace = assay.collect([{"id": "t", "input": "x"}], agents.async_echo, budget_usd=0.0).traces[0]
    assert trace.status == "completed" and trace.turns[0].output == "echo: x"


def test_trials_the_budget_left_unrun_are_not_failures_and_a_rerun_collects_them(tmp_path, judge_server):
    judge_server.reply = lambda request: text("ok")
    agent = f"openai-compatible:agent@{judge_server.url}"
    out = tmp_path / "t.jsonl"
    task = [{"id": "t", "input": "hi"}]
    first = assay.collect(task, agent, trials=3, output=out, budget_tokens=1, concurrency=1, cache=False)
    assert [t.trial for t in first.traces] == [0] and first.failed == []
    assert [(t, k) for t, k, _ in first.not_collected] == [("t", 1), ("t", 2)]
    assert "budget" in first.not_collected[0][2]
    assert len(out.read_text().splitlines()) == 1 and journal_path(out).exists()
    calls = len(judge_server.requests)
    again = assay.collect(task, agent, trials=3, output=out, concurrency=1, cache=False)
    assert len(judge_server.requests) == calls + 2 and again.resumed == 1 and again.not_collected == []
    assert [t.trial for t in again.traces] == [0, 1, 2] and not journal_path(out).exists()


def test_zero_turns_is_an_error_not_the_default(tmp_path):
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps({"id": "a", "input": "hi"}) + "\n")
    with pytest.raises(ConfigError, match="max_turns: expected at least 1, got 0"):
        assay.collect(str(tasks), agent="tests.collect.agents:async_echo", max_turns=0)


def test_a_tool_file_is_loaded_afresh_for_each_trial(tmp_path):
    tool = tmp_path / "collect_tool_once.py"
    counter = tmp_path / "imports.txt"
    tool.write_text(f"open({str(counter)!r}, 'a').write('x')\n"
                    "def weather(city):\n    return {'city': city, 'sky': 'sunny'}\n")
    task = {**WEATHER, "tools": [{**WEATHER["tools"][0], "function": f"{tool}:weather"}]}
    collected = assay.collect([task], "tests.collect.agents:weather_agent", trials=3, allow_code=[str(tmp_path)])
    assert [t.turns[0].tool_calls[0].result["sky"] for t in collected.traces] == ["sunny"] * 3
    assert counter.read_text() == "xxx"  # once per trial (the copy that checked the tool served the first)
