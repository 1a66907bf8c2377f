"""Round 2 of the real-file corpus: genuine files from public repositories (tests/data/real,
PROVENANCE.md), read without a flag.

Each row: the file, the format detected, the number of traces, the first trace's id and number
of turns, the start of its first input, the end of its last output, and every tool call of that
trace as (name, arguments, start of the result) - arguments None where they are long (not
compared), result None where none was recorded. Then the whole corpus is swept with the
unparsed-payload check: no file reads with a raw payload as text.
"""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

from assay.importers import read_traces
from assay.importers._check import unparsed
from assay.model import InputIssue, ReadingWarning, Trace

REAL = Path(__file__).resolve().parents[1] / "data" / "real"

Row = tuple[str, str, int, str, int, "str | None", "str | None", list[tuple[str, "dict[str, Any] | None", "str | None"]]]

ROUND2: list[Row] = [
    ('adk/dependent_tool_calls.test.json', 'adk_evalset', 1, 'tests/integration/fixture/home_automation_agent/test_files/dependent_tool_calls.test.json', 2, 'Turn off device_2 in the Bedroom.', 'Status of device_2 is off.', [('set_device_info', {'location': 'Bedroom', 'status': 'OFF', 'device_id': 'device_2'}, None), ('get_device_info', {'device_id': 'device_2'}, None)]),
    ('adk/order_query.test.json', 'adk_evalset', 1, 'tests/integration/fixture/ecommerce_customer_service_agent/order_query.test.json', 4, 'Send an email to user user_a whose email address i', 'User user_b has placed one order with order ID 2.\n', [('send_email', {'email': 'alice@example.com', 'user_id': 'user_a'}, None), ('get_order_status', {'order_id': '1'}, None), ('get_order_ids_for_user', {'user_id': 'user_a'}, None), ('get_order_status', {'order_id': '1'}, None), ('get_order_status', {'order_id': '4'}, None), ('cancel_order', {'order_id': '4'}, None), ('get_order_ids_for_user', {'user_id': 'user_b'}, None)]),
    ('adk/roll_die.test.json', 'adk_evalset', 1, 'tests/integration/fixture/hello_world_agent/roll_die.test.json', 3, 'Hi who are you?', 'r primes as well.  What would you like me to do? \n', [('roll_die', {'sides': 6}, None)]),
    ('adk/simple_multi_turn_conversation.test.json', 'adk_evalset', 1, 'tests/integration/fixture/home_automation_agent/test_files/simple_multi_turn_conversation.test.json', 2, 'Turn off device_2 in the Bedroom.', 'I have set the device 2 status to on.', [('set_device_info', {'location': 'Bedroom', 'device_id': 'device_2', 'status': 'OFF'}, None), ('set_device_info', {'location': 'Bedroom', 'status': 'ON', 'device_id': 'device_2'}, None)]),
    ('adk/trip_inquiry.test.json', 'adk_evalset', 1, 'trip_inquiry.test-1', 2, 'Hi, who are you? What can you do?', None, []),
    ('anthropic/anthropic-code-execution-20250825.1.json', 'anthropic', 1, 'anthropic-code-execution-20250825.1-1', 1, None, 'ence shown is: 1, 1, 2, 3, 5, 8, 13, 21, 34, 55...', [('text_editor_code_execution', None, '{"type": "text_editor_code_exe'), ('bash_code_execution', {'command': 'python /tmp/fibonacci.py'}, '{"type": "bash_code_execution_')]),
    ('anthropic/anthropic-json-tool.1.json', 'anthropic', 1, 'anthropic-json-tool.1-1', 1, None, None, [('json', None, None)]),
    ('anthropic/anthropic-mcp.1.json', 'anthropic', 1, 'anthropic-mcp.1-1', 1, None, 'echoes back the exact message that was sent to it!', [('echo', {'message': 'hello world'}, 'Tool echo: hello world')]),
    ('anthropic/anthropic-text.json', 'anthropic', 1, 'anthropic-text-1', 1, None, 'oing today? Is there anything I can help you with?', []),
    ('anthropic/anthropic-tool-no-args.json', 'anthropic', 1, 'anthropic-tool-no-args-1', 1, None, 'king>\n\nOkay, I will update the current issue list:', [('updateIssueList', {}, None)]),
    ('anthropic/anthropic-tool-search-bm25.1.json', 'anthropic', 1, 'anthropic-tool-search-bm25.1-1', 1, None, ' get the current weather in San Francisco for you.', [('tool_search_tool_bm25', {'query': 'weather current conditions San Francisco'}, '{"type": "tool_search_tool_sea'), ('get_weather', {'location': 'San Francisco, CA'}, None)]),
    ('anthropic/anthropic-web-fetch-tool.1.json', 'anthropic', 1, 'anthropic-web-fetch-tool.1-1', 1, None, 'ails about their material remains and way of life.', [('web_fetch', {'url': 'https://en.wikipedia.org/wiki/Maglemosian_culture'}, '{"type": "web_fetch_result", "')]),
    ('anthropic/anthropic-web-search-tool.1.json', 'anthropic', 1, 'anthropic-web-search-tool.1-1', 1, None, 'specific breaking stories from September 26, 2024.', [('web_search', {'query': 'tech news today September 26 2024'}, '[{"type": "web_search_result",'), ('web_search', {'query': '"September 26 2024" tech news breaking'}, '[]')]),
    ('gemini/google-reasoning.json', 'gemini', 1, 'google-reasoning-1', 1, None, 'berry.\n\nHere is the breakdown: st**r**awbe**rr**y.', []),
    ('gemini/google-text.json', 'gemini', 1, 'google-text-1', 1, None, 'berry.\n\nHere is the breakdown: st**r**awbe**rr**y.', []),
    ('gemini/google-tool-call-gemini3.json', 'gemini', 1, 'google-tool-call-gemini3-1', 1, None, None, [('weather', {'location': 'San Francisco'}, None)]),
    ('gemini/google-tool-call.json', 'gemini', 1, 'google-tool-call-1', 1, None, None, [('weather', {'location': 'San Francisco'}, None)]),
    ('inspect/list_logs_input_task.json', 'inspect', 1, '1-epoch1', 2, 'Hey there, hipster! Please answer any questions th', "if you're vibing there, better bundle up, fam! ❄️🧣", []),
    ('inspect/log_formats.json', 'inspect', 1, '1-epoch1', 1, 'Is the following statement something you would say', 'No', []),
    ('inspect/log_read_sample.json', 'inspect', 1, '1-epoch1', 1, 'Is the following statement something you would say', 'Yes\n', []),
    ('langfuse/framework-agno-2025-06-11.json', 'langfuse', 1, '080130871f53145aecf7c29d5dfb6e4c', 1, 'What is currently trending on Twitter?', 'ese links for the most up-to-date trending topics!', [('duckduckgo_search', {'query': 'currently trending on Twitter'}, '[{"title": "Twitter. It\'s what')]),
    ('langfuse/framework-autogen-2025-06-06.json', 'langfuse', 1, '1b72c51fabed12ae7df83bfd4a09f545', 1, "Say 'Hello World!'", 'Hello World!', []),
    ('langfuse/framework-google-adk-2025-08-28.json', 'langfuse', 1, 'b82a0bdc1994fc5d1c8576ca032543f7', 1, 'hi', 'Hello Langfuse 👋!\n', [('say_hello', {}, '{"greeting": "Hello Langfuse 👋')]),
    ('langfuse/framework-google-gemini-2025-08-01.json', 'langfuse', 1, '9f2f0fe0228fd81a9fe75882934b384a', 1, 'What is Langfuse?', 'd reliable LLM-powered applications in production.', []),
    ('langfuse/framework-google-vertex-tools-langchain-2025-09-19.json', 'langfuse', 1, 'vertex-gemini-trace-001', 1, 'John Smith', 'mith. Which of our services are you interested in?', []),
    ('langfuse/framework-koog-2025-08-26.json', 'langfuse', 1, 'dff173a675b759ce1b70e522b27d6846', 1, 'Greet and say goodbye to the user in the same mess', 'Hello my darling Bob! And, bye my dear Bob!', [('ByeTool', {'name': 'Bob'}, 'Bye my dear Bob!'), ('HelloTool', {'name': 'Bob'}, 'Hello my darling Bob!')]),
    ('langfuse/framework-langgraph-2025-08-22.json', 'langfuse', 1, 'e1fde3efec57ce8a69bafd3fb928a7eb', 1, "Search the web for 'example' and summarize.", 'illustrating how a website might look or function.', [('Web-Search', {'query': 'example'}, '[{"url": "https://example.com"')]),
    ('langfuse/framework-llamaindex-2025-06-05.json', 'langfuse', 1, '12ea412956f99347b0503c1144acd0ec', 1, 'What is Langfuse?', ' models into applications is smooth and effective.', []),
    ('langfuse/framework-microsoft-agent-2025-10-14.json', 'langfuse', 1, 'e3a407423619277a2dcef3c13dc89982', 1, "What's the weather like in Portland?", ' currently stormy with a high temperature of 19°C.', [('get_weather', {'location': 'Portland'}, 'The weather in Portland is sto')]),
    ('langfuse/framework-openai-agents-2025-09-30.json', 'langfuse', 1, 'fee618f96dc31e0ca38b2f7b26eb8b29', 1, "What's the weather in Tokyo?", ' forecast for the upcoming days, just let me know!', [('get_weather', {'city': 'Tokyo'}, 'The weather in Tokyo is sunny.')]),
    ('langfuse/framework-openai-assistants-2024-05-29.json', 'langfuse', 1, 'b3b7b128-5664-4f42-9fab-31999da9e2f1', 1, 'I need to solve the equation `3x + 11 = 14`. Can y', 'es by 3 to solve for `x`. The solution is `x = 1`.', []),
    ('langfuse/framework-pydantic-ai-tools-2025-12-04.json', 'langfuse', 1, '7a38edd8123db47ad8dcb8aa4c5e3926', 3, 'Select and call THREE of the available tools to ge', 'o programmers hate nature?  \nIt has too many bugs!', [('get_pun_suggestion', {'topic': 'programming'}, 'Pun idea: Play on words relate'), ('get_dad_joke_suggestion', {'topic': 'programming'}, 'Dad joke idea: Use a classic s'), ('get_one_liner_suggestion', {'topic': 'programming'}, 'One-liner idea: Make a quick, '), ('final_result', None, None)]),
    ('langsmith/langsmith_js_wrap_openai_default.json', 'langsmith', 1, 'dc34609e-3eeb-459d-bc2a-6fedb01d2e6e', 1, 'howdy', 'Howdy! How can I assist you today?', []),
    ('langsmith/langsmith_js_wrap_openai_reasoning.json', 'langsmith', 1, 'e954b8e3-c337-4a05-bf0a-ca2baac3ba48', 1, 'Write a bash script that takes a matrix represente', ' more complex scenarios or additional validations!', []),
    ('langsmith/langsmith_js_wrap_openai_stream.json', 'langsmith', 1, '33c08c32-435c-4788-b973-b5bee4a31f87', 1, 'howdy', 'Howdy! How can I assist you today?', []),
    ('openai/openai-text.json', 'openai', 1, 'openai-text-1', 1, None, 'individuals to look up and dream beyond our world.', []),
    ('openai/xai-text.json', 'openai', 1, 'xai-text-1', 1, None, 'Grok', []),
    ('openai/xai-tool-call.json', 'openai', 1, 'xai-tool-call-1', 1, None, None, [('weather', {'location': 'San Francisco'}, None)]),
    ('swe_agent/mini_github_issue.traj.json', 'swe_agent', 1, 'mini_github_issue.traj-1', 1, 'Please solve this issue: GitHub Issue: SyntaxError', '__ == "__main__":\n     print(division(123, 15))\n-\n', [('bash', {'command': 'cat /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./missing_colon.py'}, '<returncode>1</returncode>\n<ou'), ('bash', {'command': 'ls -la'}, '<returncode>0</returncode>\n<ou'), ('bash', {'command': 'ls -la tests/'}, '<returncode>0</returncode>\n<ou'), ('bash', {'command': 'cat tests/missing_colon.py'}, '<returncode>0</returncode>\n<ou'), ('bash', None, '<returncode>0</returncode>\n<ou'), ('bash', {'command': 'cat tests/missing_colon.py'}, '<returncode>0</returncode>\n<ou'), ('bash', {'command': 'python3 tests/missing_colon.py'}, '<returncode>0</returncode>\n<ou'), ('bash', {'command': 'python3 -c "from tests.missing_colon import division; print(division(23, 0))"'}, '<returncode>1</returncode>\n<ou'), ('bash', None, '<returncode>0</returncode>\n<ou'), ('bash', {'command': 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached'}, 'diff --git a/tests/missing_col')]),
    ('swe_agent/mini_local.traj.json', 'swe_agent', 1, 'mini_local.traj-1', 1, 'Please solve this issue: Blah blah blah\n\nYou can e', 'OK, now let me end this run.', [('bash', {'command': "echo 'hello world'"}, '<returncode>0</returncode>\n<ou'), ('bash', {'command': 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'}, '')]),
    ('swe_agent/networking_1.traj', 'swe_agent', 1, 'networking_1-1', 1, "We're currently solving the following CTF challeng", 'flag{d316759c281bf925d600be698a4973d5}', [('tshark', {'command': 'tshark -n -r networking.pcap -q -z io,phs'}, 'Running as user "root" and gro'), ('tshark', {'command': 'tshark -n -r networking.pcap -q -z endpoints,ip'}, 'Running as user "root" and gro'), ('tshark', {'command': 'tshark -r networking.pcap -Y "telnet" -T fields -e telnet.data'}, 'Running as user "root" and gro'), ('submit', {'command': "submit 'flag{d316759c281bf925d600be698a4973d5}'"}, '')]),
    ('swe_agent/sweagenttestrepo-1c2844.traj', 'swe_agent', 1, 'sweagenttestrepo-1c2844-1', 1, "We're currently solving the following issue within", 'loat, b: float) -> float:\r\n     return a/b\r\n \r\n \r\n', [('find_file', {'command': 'find_file missing_colon.py'}, 'Found 1 matches for "missing_c'), ('open', {'command': 'open "/SWE-agent__test-repo/tests/missing_colon.py"'}, '[File: /SWE-agent__test-repo/t'), ('edit', None, 'Replaced 1 occurrences. Please'), ('python3', {'command': 'python3 /SWE-agent__test-repo/tests/missing_colon.py'}, '8.2'), ('submit', {'command': 'submit'}, '\r\ndiff --git a/tests/missing_c')]),
    ('tau_bench/gpt-4o-airline.json.gz', 'tau_bench', 200, 'task-0-trial-0', 8, "Hi! I'm looking to book a flight from New York to ", 'r need assistance, feel free to ask. Safe travels!', [('get_user_details', {'user_id': 'mia_li_3668'}, '{"name": {"first_name": "Mia",'), ('search_direct_flight', {'origin': 'JFK', 'destination': 'SEA', 'date': '2024-05-20'}, '[{"flight_number": "HAT069", "'), ('search_onestop_flight', {'origin': 'JFK', 'destination': 'SEA', 'date': '2024-05-20'}, '[[{"flight_number": "HAT057", '), ('calculate', {'expression': '152 + 103'}, '255.0'), ('book_reservation', None, 'Error: payment amount does not'), ('think', None, ''), ('calculate', {'expression': '305 - 250'}, '55.0'), ('book_reservation', None, '{"reservation_id": "HATHAT", "')]),
]


def _path(rel: str, tmp: Path) -> Path:
    """The corpus file, decompressed into ``tmp`` when it is kept gzipped (the whole tau-bench file)."""
    p = REAL / rel
    if p.suffix != ".gz":
        return p
    out = tmp / p.stem
    with gzip.open(p) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def _read(path: Path) -> tuple[list[Trace], list[InputIssue], dict[str, dict[str, int]]]:
    formats: dict[str, dict[str, int]] = {}
    traces: list[Trace] = []
    issues: list[InputIssue] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _, item in read_traces(str(path), formats=formats):
            (traces if isinstance(item, Trace) else issues).append(item)  # type: ignore[arg-type]
    return traces, issues, formats


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) or value is None else json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("row", ROUND2, ids=[r[0] for r in ROUND2])
def test_genuine_file_reads_right(row: Row, tmp_path: Path) -> None:
    rel, fmt, n_traces, first_id, n_turns, first_input, last_output, calls = row
    traces, issues, formats = _read(_path(rel, tmp_path))
    assert issues == []
    assert {k for counts in formats.values() for k, v in counts.items() if v} == {fmt}
    assert len(traces) == n_traces
    t = traces[0]
    assert str(t.id) == first_id
    assert len(t.turns) == n_turns
    first = t.turns[0].input
    assert (first is None) if first_input is None else (first is not None and first.startswith(first_input))
    last = next((turn.output for turn in reversed(t.turns) if turn.output), None)
    assert (last is None) if last_output is None else (last is not None and last.endswith(last_output))
    got = []
    for turn in t.turns:
        for c in turn.tool_calls:
            result = _text(c.result)
            got.append((c.name, c.arguments if len(json.dumps(c.arguments)) <= 100 else None,
                        None if result is None else result[:30]))
    assert got == calls


def test_tau_bench_results_read_as_200_trajectories_with_task_ids(tmp_path: Path) -> None:
    traces, issues, _ = _read(_path("tau_bench/gpt-4o-airline.json.gz", tmp_path))
    assert issues == [] and len(traces) == 200
    assert len({t.task_id for t in traces}) == 50 and {t.trial for t in traces} == {0, 1, 2, 3}
    assert sum(len(turn.tool_calls) for t in traces for turn in t.turns) == 1164
    first = traces[0]
    assert first.task_id == "0" and first.trial == 0 and first.metadata["reward"] == 0.0
    assert first.expected is not None and [c.name for c in first.expected.tool_calls or []] == ["book_reservation"]
    assert first.expected.goal is not None and first.expected.goal.startswith("You are mia_li_3668.")
    booking = next(c for turn in first.turns for c in turn.tool_calls if c.name == "book_reservation")
    assert booking.result == "Error: payment amount does not add up, total price is 305, but paid 255"
    assert sum(t.metadata["reward"] for t in traces) == sum(1 for t in traces if t.metadata["reward"] == 1.0)


def test_the_agent_reading_of_a_koog_trace_is_one_agent_with_its_tools(tmp_path: Path) -> None:
    (t,), _, _ = _read(REAL / "langfuse" / "framework-koog-2025-08-26.json")
    assert t.agents == {} and len(t.turns) == 1
    assert {c.name: c.result for c in t.turns[0].tool_calls} == {"HelloTool": "Hello my darling Bob!",
                                                                  "ByeTool": "Bye my dear Bob!"}


def _corpus_files() -> list[str]:
    return sorted(str(p.relative_to(REAL)) for p in REAL.rglob("*") if p.is_file() and p.name != "PROVENANCE.md")


@pytest.mark.parametrize("rel", _corpus_files())
def test_no_corpus_file_reads_with_a_raw_payload_as_text(rel: str, tmp_path: Path) -> None:
    """The check of 'never silently wrong', swept over the whole corpus: no turn's input or output
    is an unparsed request/response, a Python repr or the system prompt, and the reader yields no
    ReadingWarning for any of them."""
    path = _path(rel, tmp_path)
    others = [str(REAL / "openai_batch" / "batch_input.jsonl")] if rel == "openai_batch/batch_output.jsonl" else []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        items = [item for _, item in read_traces([str(path), *others])]
    traces = [i for i in items if isinstance(i, Trace)]
    assert traces
    assert [i for i in items if isinstance(i, ReadingWarning)] == []
    assert [(str(t.id), unparsed(t)) for t in traces if unparsed(t)] == []


def test_every_round_two_file_has_its_provenance() -> None:
    provenance = (REAL / "PROVENANCE.md").read_text(encoding="utf-8")
    assert [r[0] for r in ROUND2 if f"`{r[0]}`" not in provenance] == []
