"""Trials that start fresh: tools per trial, environment state, state_match, the user's last word,
traces that carry their task, and failed trials run again."""

from __future__ import annotations

import json
import threading

import pytest

import assay
from assay import ConfigError
from tests.collect import agents
from tests.support.judge_server import obj

SEAT_MODULE = """\
SEATS = 1

def book(seat):
    global SEATS
    if SEATS == 0:
        return "sold out"
    SEATS -= 1
    return f"booked {seat}"
"""


def _task(tool: dict, **extra) -> dict:
    return {"id": "book", "input": "Book seat A1.", "tools": [
        {"name": "book", "parameters": {"type": "object", "properties": {"seat": {"type": "string"}}}, **tool}],
        **extra}


def _results(collected) -> list:
    return [t.turns[0].tool_calls[0].result for t in collected.traces]


def test_a_one_seat_tool_books_in_every_trial(tmp_path):
    (tmp_path / "seats.py").write_text(SEAT_MODULE)
    task = _task({"function": f"{tmp_path / 'seats.py'}:book"})
    collected = assay.collect([task], agents.booking_agent, trials=3, allow_code=[str(tmp_path)])
    assert _results(collected) == ["booked A1"] * 3  # the module's seat counter starts over in each trial
    assert [t.turns[0].output for t in collected.traces] == ["Result: booked A1"] * 3


def test_a_dotted_module_is_loaded_afresh_per_trial_and_the_imported_one_is_untouched(tmp_path, monkeypatch):
    (tmp_path / "seat_pkg_hcoll").mkdir()
    (tmp_path / "seat_pkg_hcoll" / "__init__.py").write_text("")
    (tmp_path / "seat_pkg_hcoll" / "seats.py").write_text(SEAT_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import seat_pkg_hcoll.seats as imported

    collected = assay.collect([_task({"function": "seat_pkg_hcoll.seats:book"})], agents.booking_agent, trials=3,
                              allow_code="seat_pkg_hcoll")
    assert _results(collected) == ["booked A1"] * 3
    assert imported.SEATS == 1 and __import__("sys").modules["seat_pkg_hcoll.seats"] is imported


CLASS_MODULE = """\
class Booking:
    def __init__(self, task_id, trial):
        self.seats, self.who = 1, f"{task_id}/{trial}"

    def book(self, seat):
        if not self.seats:
            return "sold out"
        self.seats -= 1
        return f"{self.who} booked {seat}"

    def left(self):
        return self.seats


def make_book(trial):
    seats = [1]

    def book(seat, task_id):
        if not seats[0]:
            return "sold out"
        seats[0] -= 1
        return f"{task_id}/{trial} booked {seat}"
    return book
"""


def test_a_class_is_instantiated_per_trial_and_shared_by_its_tools(tmp_path):
    (tmp_path / "booking.py").write_text(CLASS_MODULE)
    ref = f"{tmp_path / 'booking.py'}"
    task = _task({"function": f"{ref}:Booking.book"})
    task["tools"].append({"name": "left", "function": f"{ref}:Booking.left"})

    def agent(messages, tools=None):  # books, then asks how many seats are left, then answers
        done = [m for m in messages if m["role"] == "tool"]
        if len(done) == 0:
            return {"tool_calls": [{"name": "book", "arguments": {"seat": "A1"}}]}
        if len(done) == 1:
            return {"tool_calls": [{"name": "left", "arguments": {}}]}
        return f"{done[0]['content']}; left {done[1]['content']}"

    collected = assay.collect([task], agent, trials=3, allow_code=ref)
    assert [t.turns[0].output for t in collected.traces] == [f"book/{k} booked A1; left 0" for k in range(3)]


def test_a_factory_per_trial_with_context(tmp_path):
    (tmp_path / "booking.py").write_text(CLASS_MODULE)
    task = _task({"function": f"{tmp_path / 'booking.py'}:make_book", "factory": True})
    collected = assay.collect([task], agents.booking_agent, trials=2, allow_code=str(tmp_path))
    assert _results(collected) == ["book/0 booked A1", "book/1 booked A1"]


def book_seat(seat, state):
    if state["seats"].get(seat) != "free":
        return f"seat {seat} is not free"
    state["seats"][seat] = "booked"
    return f"booked {seat}"


def test_task_state_is_fresh_per_trial_recorded_and_compared_with_the_expected_state():
    task = _task({"function": "seat"}, state={"seats": {"A1": "free", "A2": "free"}},
                 expected={"state": {"seats": {"A1": "booked", "A2": "free"}}})

    def sneaky(messages, tools=None):  # tries to hand the tool a state of its own: the trial's wins
        if messages[-1]["role"] == "tool":
            return messages[-1]["content"]
        return {"tool_calls": [{"name": "book", "arguments": {"seat": "A1", "state": {"seats": {"A1": "free"}}}}]}

    collected = assay.collect([task], sneaky, trials=3, tools={"seat": book_seat})
    assert _results(collected) == ["booked A1"] * 3
    assert [t.state for t in collected.traces] == [{"seats": {"A1": "booked", "A2": "free"}}] * 3
    result = assay.evaluate(collected, ["state_match"])
    assert [r.metrics["state_match"].score for r in result.traces] == [1.0] * 3
    assert task["state"] == {"seats": {"A1": "free", "A2": "free"}}  # the task itself is never changed


def test_state_match():
    from assay.metrics.state import state_differences

    def score(state, expected, **params):
        trace = assay.Trace.model_validate({"id": "t", "turns": [{"input": "x", "output": "y"}], "state": state,
                                            "expected": {"state": expected}})
        return assay.evaluate([trace], [assay.metrics.REGISTRY.get("state_match")(**params)]).traces[0].metrics[
            "state_match"]

    same = score({"a": 1, "b": [1, {"c": True}]}, {"a": 1.0, "b": [1, {"c": True}]})
    assert (same.score, same.passed) == (1.0, True)
    wrong = score({"a": 1, "b": [1, {"c": 1}], "z": 0}, {"a": 2, "b": [1, {"c": True}]})
    assert (wrong.score, wrong.passed) == (0.0, False)
    assert wrong.details["differences"] == ["$.a: expected 2, got 1", "$.b[1].c: expected true, got 1",
                                            "$.z: not expected (got 0)"]
    assert score({"a": 1, "z": 0}, {"a": 1}, subset=True).score == 1.0
    assert state_differences({"a": [1, 2]}, {"a": [1]}) == ["$.a: expected 2 items, got 1"]
    assert state_differences({"a": 1}, {}) == ["$.a: missing (expected 1)"]
    missing = assay.evaluate([assay.Trace.model_validate({"id": "t", "turns": [{"input": "x"}],
                                                          "expected": {"state": {}}})], ["state_match"])
    result = missing.traces[0].metrics["state_match"]
    assert result.score is None and "no final state" in result.reason


def test_tools_receive_the_task_id_and_trial():
    def where(seat, task_id, trial):
        return f"{task_id}#{trial}:{seat}"

    collected = assay.collect([_task({"function": "where"})], agents.booking_agent, trials=2, tools={"where": where})
    assert _results(collected) == ["book#0:A1", "book#1:A1"]


def test_registered_tools_need_no_opt_in_and_unknown_names_are_errors():
    assay.register_tool("hcoll_registered_book", book_seat)
    task = _task({"function": "hcoll_registered_book"}, state={"seats": {"A1": "free"}})
    assert _results(assay.collect([task], agents.booking_agent)) == ["booked A1"]
    with pytest.raises(ConfigError, match="no registered tool for task 'book', tool 'book': nope"):
        assay.collect([_task({"function": "nope"})], agents.booking_agent)


@pytest.mark.parametrize("raised", ["SystemExit(3)", "KeyboardInterrupt()", "RuntimeError('no seats')"])
def test_a_tool_that_raises_is_a_tool_error_of_that_trial(tmp_path, raised):
    (tmp_path / "raising.py").write_text(f"def book(seat):\n    raise {raised}\n\n"
                                         f"async def abook(seat):\n    raise {raised}\n")
    out = tmp_path / "t.jsonl"
    tasks = [_task({"function": f"{tmp_path / 'raising.py'}:book"}),
             {**_task({"function": f"{tmp_path / 'raising.py'}:abook"}), "id": "async"}]
    collected = assay.collect(tasks, agents.booking_agent, trials=2, output=out, allow_code=str(tmp_path))
    name = raised.partition("(")[0]
    assert [t.status for t in collected.traces] == ["completed"] * 4
    assert all(t.turns[0].tool_calls[0].error.startswith(name) for t in collected.traces)
    assert len(out.read_text().splitlines()) == 4  # the collection went on and wrote every trial


# --------------------------------------------------------------------------- code only when allowed

def _shared_task_file(tmp_path):
    marker = tmp_path / "ran.txt"
    (tmp_path / "evil_tool.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n"
                                           "def book(seat):\n    return 'booked'\n")
    tasks = tmp_path / "shared.jsonl"
    tasks.write_text(json.dumps({"id": "shell", "input": "hi", "tools": [
        {"name": "run", "function": "os:system",
         "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}]}) + "\n"
        + json.dumps({"id": "file", "input": "hi", "tools": [{"name": "book",
                                                              "function": f"{tmp_path / 'evil_tool.py'}:book"}]})
        + "\n")
    return tasks, marker


def test_a_shared_task_file_runs_nothing_without_the_opt_in(tmp_path):
    tasks, marker = _shared_task_file(tmp_path)
    agents.CALLS.clear()
    with pytest.raises(ConfigError) as info:
        assay.collect(tasks, agents.async_echo)
    message = str(info.value)
    assert "task 'shell', tool 'run': os:system" in message and f"task 'file', tool 'book': {tmp_path / 'evil_tool.py'}:book" in \
        message and "nothing of it was imported or run" in message and "--allow-code" in message
    assert not marker.exists() and agents.CALLS == []
    # '*' allows the file but never the standard library: os:system must be named
    with pytest.raises(ConfigError, match=r"os:system \(the standard library and assay are allowed only by name: "
                                          r"--allow-code os\)") as info:
        assay.collect(tasks, agents.async_echo, allow_code=True)
    assert "evil_tool.py" not in str(info.value) and not marker.exists()


def test_names_cannot_reach_code_outside_the_allow_list(tmp_path, monkeypatch):
    (tmp_path / "smuggle.py").write_text("from os import system\nfrom subprocess import run as go\n")
    for attr in ("system", "go"):
        with pytest.raises(ConfigError, match="code from outside what is allowed"):
            assay.collect([_task({"function": f"{tmp_path / 'smuggle.py'}:{attr}"})], agents.async_echo,
                          allow_code=str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))  # the same through a module prefix
    with pytest.raises(ConfigError, match=r"'smuggle:system' is posix.system, code from outside what is allowed"):
        assay.collect([_task({"function": "smuggle:system"})], agents.async_echo, allow_code="smuggle")
    assert assay.collect([_task({"function": "os:getcwd"})], agents.booking_agent, allow_code="os").traces[0] \
        .turns[0].tool_calls[0].error.startswith("TypeError")  # os named: os.getcwd runs (and rejects 'seat')
    import shutil

    with pytest.raises(ConfigError, match="the standard library's and assay's files are allowed only by their path"):
        assay.collect([_task({"function": f"{shutil.__file__}:rmtree"})], agents.async_echo, allow_code="*")
    with pytest.raises(ConfigError, match="no private dunder names"):
        assay.collect([_task({"function": f"{tmp_path / 'smuggle.py'}:__builtins__.get"})], agents.async_echo,
                      allow_code="*")
    with pytest.raises(ConfigError, match="names code that would run"):  # a prefix is a whole module name
        assay.collect([_task({"function": "tests.collect_other:book"})], agents.async_echo, allow_code="tests.coll")
    with pytest.raises(ConfigError, match="neither a module prefix"):
        assay.collect([{"id": "x", "input": "hi"}], agents.async_echo, allow_code="not a module")


def test_a_tool_module_that_exits_while_loading_is_a_config_error(tmp_path):
    (tmp_path / "exits.py").write_text("raise SystemExit(0)\n")
    with pytest.raises(ConfigError, match="cannot import .*SystemExit"):
        assay.collect([_task({"function": f"{tmp_path / 'exits.py'}:book"})], agents.async_echo,
                      allow_code=str(tmp_path))


def test_the_cli_refuses_the_shared_task_file_and_allows_what_is_named(tmp_path):
    from tests.support.cli import cli_env, run_pipe

    tasks, marker = _shared_task_file(tmp_path)
    env = cli_env(tmp_path)
    out = tmp_path / "t.jsonl"
    done = run_pipe(["collect", str(tasks), "--agent", "tests.collect.agents:async_echo", "-o", str(out)], env)
    assert done.returncode == 2 and "os:system" in done.stderr and "evil_tool.py:book" in done.stderr
    assert not marker.exists() and not out.exists()
    tasks.write_text(tasks.read_text().splitlines()[1] + "\n")  # the file tool alone, allowed by its path
    done = run_pipe(["collect", str(tasks), "--agent", "tests.collect.agents:async_echo", "-o", str(out),
                     "--allow-code", str(tmp_path / "evil_tool.py")], env)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "imported" and len(out.read_text().splitlines()) == 1


# --------------------------------------------------------------------------- task files

def test_a_task_file_with_a_byte_order_mark_is_read(tmp_path):
    tasks = tmp_path / "bom.jsonl"
    tasks.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "a", "input": "hi"}).encode() + b"\r\n")
    assert [t.id for t in assay._collect.load_tasks(tasks)] == ["a"]
    tasks.write_bytes(b'{"id": "a", "input": "hi"}\n{"id": "b", "input": "\xff"}\n')
    with pytest.raises(assay.DataError, match=r"bom.jsonl:2: not UTF-8 text \(byte 0xff\)"):
        assay._collect.load_tasks(tasks)


def test_tool_names_are_checked_for_duplicates_in_one_pass():
    from assay._collect import load_tasks

    tools = [{"name": f"t{i}"} for i in range(100_000)]
    assert len(load_tasks([{"id": "many", "input": "hi", "tools": tools}])[0].tools) == 100_000
    with pytest.raises(assay.DataError, match=r"tools\[100000\]\.name: 't5' is defined twice \(first as tools\[5\]\)"):
        load_tasks([{"id": "many", "input": "hi", "tools": [*tools, {"name": "t5"}]}])


# --------------------------------------------------------------------------- the user's last word, the task

def test_the_users_last_word_is_answered_before_the_conversation_ends(judge_server):
    judge_server.reply = lambda request: obj({"message": "Yes, go ahead.", "stop": "goal_met"})
    task = _task({"function": "seat"}, input="I'd like seat A1.", goal="seat A1 booked",
                 state={"seats": {"A1": "free"}}, expected={"state": {"seats": {"A1": "booked"}}})
    user = f"openai-compatible:user@{judge_server.url}"
    trace = assay.collect([task], agents.confirming_agent, user=user, tools={"seat": book_seat}).traces[0]
    assert [turn.input for turn in trace.turns] == ["I'd like seat A1.", "Yes, go ahead."]
    assert trace.turns[1].tool_calls[0].name == "book" and trace.turns[1].output == "Done: booked A1"
    assert trace.metadata["stop_reason"] == "goal_met" and trace.state == {"seats": {"A1": "booked"}}
    assert len(judge_server.requests) == 1  # the stop ended it: the user was not asked again
    # a user who gives up has left: its parting words are not sent
    judge_server.reply = lambda request: obj({"message": "Forget it, bye.", "stop": "gave_up"})
    gone = assay.collect([task], agents.confirming_agent, user=user, tools={"seat": book_seat}, cache=False).traces[0]
    assert [turn.input for turn in gone.turns] == ["I'd like seat A1."] and gone.metadata["stop_reason"] == "gave_up"


def test_traces_carry_their_task():
    task = {"id": "t", "input": "hi", "goal": "get a refund", "persona": "a busy parent",
            "scenario": "The kettle arrived broken.", "instructions": "Give order A1 when asked.",
            "expected": {"tool_calls": [{"name": "refund"}]}, "metadata": {"team": "x"}}
    trace = assay.collect([task], agents.async_echo).traces[0]
    assert trace.expected.goal == "get a refund" and trace.expected.tool_calls[0].name == "refund"
    assert {k: trace.metadata[k] for k in ("persona", "scenario", "user_instructions", "team")} == {
        "persona": "a busy parent", "scenario": "The kettle arrived broken.",
        "user_instructions": "Give order A1 when asked.", "team": "x"}
    assert trace.expected.instructions is None  # the user's instructions are not the agent's
    own = assay.collect([{**task, "expected": {"goal": "the expected block's goal"}}], agents.async_echo).traces[0]
    assert own.expected.goal == "the expected block's goal"
    bare = assay.collect([{"id": "b", "input": "hi", "goal": "g"}], agents.async_echo).traces[0]
    assert bare.expected.goal == "g" and "persona" not in bare.metadata


# --------------------------------------------------------------------------- failed trials run again

def test_failed_trials_run_again_afresh_and_the_attempts_are_recorded(tmp_path):
    (tmp_path / "seats.py").write_text(SEAT_MODULE)
    lock, calls = threading.Lock(), []

    def flaky(messages, tools=None):  # the first two attempts fail after booking; the third answers
        with lock:
            calls.append(messages[-1]["role"])
            n = calls.count("tool")
        if messages[-1]["role"] == "tool":
            if n <= 2:
                raise RuntimeError(f"agent crashed {n}")
            return f"Result: {messages[-1]['content']}"
        return {"tool_calls": [{"name": "book", "arguments": {"seat": "A1"}}]}

    task = _task({"function": f"{tmp_path / 'seats.py'}:book"})
    trace = assay.collect([task], flaky, retries=0, retry_failed=2, allow_code=str(tmp_path)).traces[0]
    assert trace.status == "completed" and trace.turns[0].output == "Result: booked A1"  # a fresh seat each attempt
    assert trace.metadata["collect"]["attempts"] == 3
    failed = trace.metadata["collect"]["failed_attempts"]
    assert len(failed) == 2 and failed[0].endswith("crashed 1") and failed[1].endswith("crashed 2")
    calls.clear()
    once = assay.collect([task], flaky, retries=0, retry_failed=1, allow_code=str(tmp_path)).traces[0]
    assert once.status == "failed" and once.metadata["collect"]["attempts"] == 2
    calls.clear()
    never = assay.collect([task], flaky, retries=0, allow_code=str(tmp_path)).traces[0]
    assert never.status == "failed" and "attempts" not in never.metadata["collect"]


def test_a_tool_file_never_stands_in_for_a_module_of_its_name(tmp_path):
    (tmp_path / "json.py").write_text("import json as real\n\ndef book(seat):\n    return real.dumps({'seat': seat})\n")
    collected = assay.collect([_task({"function": f"{tmp_path / 'json.py'}:book"})], agents.booking_agent,
                              allow_code=str(tmp_path))
    assert _results(collected) == ['{"seat": "A1"}'] and json.dumps({}) == "{}"


def test_a_plugin_registers_tools_that_run_without_the_opt_in(tmp_path):
    from tests.support.cli import cli_env, run_pipe

    plugin = tmp_path / "my_tools_hcoll.py"
    plugin.write_text("import assay\n\n@assay.register_tool('book')\ndef book(seat, trial):\n"
                      "    return f'booked {seat} in trial {trial}'\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(_task({"function": "book"})) + "\n")
    out = tmp_path / "t.jsonl"
    done = run_pipe(["collect", str(tasks), "--agent", "tests.collect.agents:booking_agent", "--trials", "2",
                     "--plugin", str(plugin), "-o", str(out)], cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    results = [json.loads(line)["turns"][0]["tool_calls"][0]["result"] for line in out.read_text().splitlines()]
    assert results == ["booked A1 in trial 0", "booked A1 in trial 1"]


def test_the_cli_retries_failed_trials_and_says_so(tmp_path):
    from tests.support.cli import cli_env, run_pipe
    from tests.support.judge_server import JudgeServer, status, text

    count = iter(range(1000))

    def agent(request):  # the first call of all fails; every later one answers
        return status(500, "agent down") if next(count) == 0 else text("Hello.")

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "hi", "input": "Hi"}) + "\n")
    out = tmp_path / "t.jsonl"
    with JudgeServer(agent) as server:
        done = run_pipe(["collect", str(tasks), "--agent", f"openai-compatible:agent@{server.url}", "--retries", "0",
                         "--retry-failed", "1", "--no-cache", "-o", str(out)], cli_env(tmp_path))
        assert done.returncode == 0, done.stderr
        assert len(server.requests) == 2
    assert "1 completed, 0 failed, 1 run again after a failure (--retry-failed)" in done.stderr
    trace = json.loads(out.read_text())
    assert trace["status"] == "completed" and trace["metadata"]["collect"]["attempts"] == 2
    assert "agent down" in trace["metadata"]["collect"]["failed_attempts"][0]


def test_a_tool_result_json_cannot_hold_is_kept_as_text_and_the_traces_are_written(tmp_path):
    class Thing:
        def __str__(self):
            return "a thing"

    out = tmp_path / "t.jsonl"
    collected = assay.collect([_task({"function": "thing"})], agents.booking_agent, trials=2, output=out,
                              tools={"thing": lambda seat: {"seat": seat, "what": Thing(), "tags": ("a", "b")}})
    assert _results(collected) == [{"seat": "A1", "what": "a thing", "tags": ["a", "b"]}] * 2
    assert [json.loads(line)["turns"][0]["tool_calls"][0]["result"]["what"] for line in out.read_text().splitlines()] \
        == ["a thing"] * 2


def test_harness_faults_are_marked_for_the_engine(judge_server):
    import socket

    with socket.socket() as probe:  # a port nothing listens on: the agent cannot be reached
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    down = assay.collect([{"id": "a", "input": "hi"}], f"http://127.0.0.1:{port}/agent", retries=0).traces[0]
    assert down.status == "failed" and down.metadata["harness_fault"] == "unreachable"
    assert "connection error" in down.metadata["harness_error"]
    scored = assay.evaluate([down], ["latency_score"])  # excluded by assay run, not a pass nor a failed trial
    assert (scored.traces[0].outcome, scored.traces[0].passed, scored.run["n_excluded"]) == ("excluded", None, 1)
    crashed = assay.collect([{"id": "a", "input": "hi"}], agents.broken, retries=0).traces[0]
    assert crashed.status == "failed" and "harness_fault" not in crashed.metadata  # reached, then failed: the agent's
    judge_server.reply = lambda request: obj({"message": "Assistant: how can I help you?", "stop": "continue"})
    broke = assay.collect([{"id": "s", "input": "hi", "goal": "g"}], agents.async_echo,
                          user=f"openai-compatible:user@{judge_server.url}").simulator_errors[0]
    assert broke.metadata["harness_fault"] == "simulator" and "broke its role" in broke.metadata["harness_error"]
