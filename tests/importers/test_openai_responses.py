"""OpenAI Responses API: response objects, item lists, request/response logs."""

from __future__ import annotations

from pathlib import Path

from assay.importers import detect_format

from ._helpers import DATA, issues_of, plain, traces_of
from .test_openai_chat import run_cli


def test_a_response_object_with_its_input_reasoning_and_function_call() -> None:
    t = plain(traces_of(DATA / "openai_responses.jsonl")["openai_responses-1"])
    assert t["system"] == "You are a shopping assistant."
    assert t["turns"] == [{"input": "Is the blue kettle in stock?", "reasoning": "Check the inventory tool.",
                           "tool_calls": [{"name": "check_stock", "arguments": {"sku": "KETTLE-BLUE"}, "id": "call_k1"}]}]
    assert t["usage"] == {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}
    assert t["status"] == "completed" and t["metadata"]["response_id"] == "resp_01"


def test_an_item_list_is_one_conversation_with_outputs_matched_by_call_id() -> None:
    t = plain(traces_of(DATA / "openai_responses.jsonl")["openai_responses-2"])
    assert t["turns"] == [
        {"input": "Is the blue kettle in stock?", "output": "Yes, 3 blue kettles are in stock.",
         "tool_calls": [{"name": "check_stock", "arguments": {"sku": "KETTLE-BLUE"},
                         "result": {"in_stock": True, "count": 3}, "id": "call_k1"}]},
        {"input": "Search the web for reviews.", "output": "Reviewers like its quick boil.",
         "tool_calls": [{"name": "web_search", "arguments": {"query": "blue kettle reviews"}, "id": "ws_1"}]}]


def test_a_request_response_log() -> None:
    t = plain(traces_of(DATA / "openai_responses.jsonl")["openai_responses-3"])
    assert t["system"] == "Be brief." and t["turns"] == [{"input": "Say hello in French.", "output": "Bonjour !"}]
    assert t["latency_ms"] == 420 and t["metadata"]["model"] == "gpt-4.1-mini-2025-04-14"


def test_malformed_items_are_issues_in_the_items_own_names() -> None:
    issues = [str(i).split("openai_responses_malformed.jsonl:", 1)[1]
              for i in issues_of(DATA / "openai_responses_malformed.jsonl")]
    assert issues[0].startswith("1: output[0].arguments: not valid JSON")
    assert issues[1:] == ["2: [1].call_id: no earlier tool call has id 'nope'",  # line 3's unknown item is kept
                          "4: trace 'openai_responses_malformed-4' has no turns: no user message, answer or tool call "
                          "was found in it, so there is nothing to score"]


def test_an_output_that_is_a_string_is_an_issue_not_a_second_user_message(tmp_path: Path) -> None:
    """A response's ``output`` is items; a string there (a flat input/output record named as this format)
    was read as the user saying the answer, a two-question conversation with no answer."""
    f = tmp_path / "flat.jsonl"
    f.write_text('{"id": "t1", "input": "hi", "output": "hello"}\n{"input": "hi", "output": 5}\n')
    assert traces_of(f, input_format="openai_responses") == {}
    assert [str(i).split("flat.jsonl:", 1)[1] for i in issues_of(f, input_format="openai_responses")] == [
        "1: output: expected an array of output items, got string",
        "2: output: expected an array of output items, got integer"]
    g = tmp_path / "input_only.jsonl"  # a request's input may be a string: the user's message
    g.write_text('{"request": {"input": "hi"}, "response": {"output": []}}\n')
    assert [t.input for t in next(iter(traces_of(g, input_format="openai_responses").values())).turns] == ["hi"]


def test_not_mistaken_for_chat_logs() -> None:
    head = (DATA / "openai_responses.jsonl").read_bytes()
    assert detect_format(head, "x") == "openai_responses"
    easy_first = b'[{"role": "user", "content": "q"}, {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]\n'
    assert detect_format(easy_first, "x") == "openai_responses"


def test_assay_run_scores_the_samples_without_a_flag() -> None:
    out = run_cli(DATA / "openai_responses.jsonl")
    assert [t["id"] for t in out["traces"]] == ["openai_responses-1", "openai_responses-2", "openai_responses-3"]
    assert out["traces"][1]["metrics"]["prompt_injection_detection"]["score"] == 1.0
    assert len(run_cli(DATA / "openai_responses_malformed.jsonl")["input_issues"]) == 3  # an unknown item type is kept
