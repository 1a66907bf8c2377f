from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import DataError
from assay.importers.langchain import messages_to_trace

from ._helpers import DATA, plain, read_all, traces_of


def test_model_dump_messages_with_a_tool_round_trip() -> None:
    t = plain(traces_of(DATA / "langchain_conversations.jsonl")["langchain_conversations-1"])
    assert t == {"id": "langchain_conversations-1", "system": "You are a weather bot.", "turns": [{
        "input": "Weather in Paris?", "output": "18°C in Paris.",
        "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "result": {"temp_c": 18}, "id": "call_1"}],
        "usage": {"input_tokens": 135, "output_tokens": 20, "total_tokens": 155}}],
        "metadata": {"models": ["gpt-4o-2024-08-06"]}}


def test_dumpd_constructor_form_with_reasoning_and_provider_tool_calls() -> None:
    t = plain(traces_of(DATA / "langchain_conversations.jsonl")["langchain_conversations-2"])
    assert t["turns"] == [
        {"input": "Book a table for two.", "output": "For what time?", "reasoning": "Need time first."},
        {"input": "8pm", "output": "Sorry, nothing is free at 8pm.",
         "tool_calls": [{"name": "book", "arguments": {"party": 2, "time": "20:00"}, "error": "no tables left", "id": "call_b"}]},
    ]


def test_messages_to_dict_form_inside_a_state_object() -> None:
    t = plain(traces_of(DATA / "langchain_conversations.jsonl")["thread-7"])
    assert t == {"id": "thread-7", "turns": [{"input": "Translate 'merci'", "output": "Thank you."}], "metadata": {"user": "u-3"}}


def test_bad_conversations_are_located_issues() -> None:
    out = read_all(DATA / "langchain_conversations.jsonl")
    issues = [(x.line, x.field, x.message) for _, x in out if not hasattr(x, "id")]
    assert issues == [
        (4, "[2].tool_call_id", "no earlier AI tool call has id 'call_zzz'"),
        (5, "[1].type", "expected one of 'human', 'ai', 'system', 'tool', 'function', 'chat', got 'robot'"),
    ]


def test_a_file_that_is_one_array_of_messages_is_one_conversation() -> None:
    (t,) = traces_of(DATA / "langchain_single.json").values()
    assert [(x.input, x.output) for x in t.turns] == [
        ("What is LangGraph?", "A library for building stateful agents."), ("Is it open source?", "Yes, MIT licensed.")]


def test_an_array_of_conversations(in_tmp: Path) -> None:
    conv = [{"type": "human", "content": "a"}, {"type": "ai", "content": "b"}]
    (in_tmp / "convs.json").write_text(json.dumps([conv, conv, {"id": "c3", "messages": conv}], indent=1))
    assert [t.id for _, t in read_all("convs.json")] == ["convs-1", "convs-2", "c3"]


def test_a_broken_single_conversation_file_is_not_half_imported(in_tmp: Path) -> None:
    (in_tmp / "one.json").write_text('[\n{"type": "human", "content": "a"},\n{"type": "ai", "content": "b"}\n{"type": "ai"}]')
    out = [str(x) for _, x in read_all("one.json")]
    assert out == ["one.json:4: not valid JSON: expected ',' or ']', got '{' at column 1; reading stopped here",
                   "one.json:2: the conversation starting here was not read to its end"]


def test_helper_takes_message_objects() -> None:
    class Msg:
        def __init__(self, **kw: object) -> None:
            self.kw = kw

        def model_dump(self) -> dict:
            return self.kw

    t = messages_to_trace([Msg(type="human", content="hi"), Msg(type="ai", content="hello")], default_id="x")
    assert (t.id, t.turns[0].output) == ("x", "hello")
    with pytest.raises(DataError) as info:
        messages_to_trace([{"type": "ai", "content": "", "tool_calls": [{"name": "f", "args": "[1]"}]}], default_id="x")
    assert (info.value.field, info.value.detail) == ("[0].tool_calls[0].args", "expected an object, got array")
