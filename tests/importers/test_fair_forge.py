from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import DataError
from assay.importers.fair_forge import dataset_to_trace

from ._helpers import DATA, plain, read_all


def test_datasets_map_to_traces_turn_by_turn() -> None:
    out = read_all(DATA / "fair_forge_datasets.json")
    assert [loc for loc, _ in out] == [f"{DATA / 'fair_forge_datasets.json'}:2", f"{DATA / 'fair_forge_datasets.json'}:32"]
    first, second = (plain(t) for _, t in out)
    assert first == {
        "id": "conversation_001",
        "turns": [
            {"input": "What is 5 + 3?", "output": "The result is 8.",
             "tool_calls": [{"name": "calculator", "arguments": {"a": 5, "b": 3}, "result": 8, "step": 1}],
             "context": ["Math calculator conversation"],
             "expected": {"output": "8", "tool_calls": [{"name": "calculator", "arguments": {"a": 5, "b": 3}, "step": 1}],
                          "tool_order": "any"},
             "uses_tool_results": True},
            {"input": "What is 100 / 4?", "output": "100 divided by 4 is 25.", "context": ["Math calculator conversation"],
             "expected": {"output": "25"}},
        ],
        "metadata": {"assistant_id": "agent_v1", "language": "english", "qa_ids": ["q1_interaction1", "q1_interaction2"],
                     "observations": {"q1_interaction2": "answered without the calculator"},
                     "weights": {"q1_interaction2": 0.5}},
    }
    turn = second["turns"][0]
    # no tool_sequence_matters: Fair Forge's default is that order matters
    assert turn["expected"]["tool_order"] == "strict"
    # an expected tool without parameters accepts any arguments
    assert turn["expected"]["tool_calls"][1] == {"name": "round", "step": 2}
    # no final_answer_uses_tools: unknown, not False
    assert "uses_tool_results" not in turn
    assert [c["step"] for c in turn["tool_calls"]] == [1, 2]


def test_malformed_datasets_are_located_issues() -> None:
    path = DATA / "fair_forge_malformed.jsonl"
    out = [(loc.rsplit(":", 1)[1], str(x).split(":", 2)[-1].strip() if not hasattr(x, "id") else x.id) for loc, x in read_all(path)]
    assert out == [
        ("1", "s-ok"),
        ("2", "conversation[1].query: expected a string, got integer"),
        ("3", "conversation: required field is missing"),
        ("4", "conversation[0].agentic.tools_used[0].tool_name: required field is missing"),
    ]


def test_dataset_to_trace_takes_dicts_and_models() -> None:
    d = json.loads((DATA / "fair_forge_datasets.json").read_text())[0]

    class Model:  # stands in for fair_forge.schemas.common.Dataset
        def model_dump(self) -> dict:
            return d

    assert dataset_to_trace(d) == dataset_to_trace(Model())
    no_session = {k: v for k, v in d.items() if k != "session_id"}
    assert dataset_to_trace(no_session, default_id="x").id == "x"
    with pytest.raises(DataError, match="session_id: required field is missing"):
        dataset_to_trace(no_session)
    with pytest.raises(DataError) as info:
        dataset_to_trace({**d, "conversation": [{"qa_id": "q", "agentic": {"tools_used": "calc"}}]})
    assert info.value.field == "conversation[0].agentic.tools_used"


def test_a_line_holding_a_list_of_datasets(in_tmp: Path) -> None:
    d = {"session_id": "s", "assistant_id": "a", "context": "",
         "conversation": [{"qa_id": "q", "query": "hi", "assistant": "hello"}]}
    (in_tmp / "ff.jsonl").write_text(json.dumps([d, {**d, "session_id": "s2"}]) + "\n" + json.dumps({**d, "session_id": "s3"}) + "\n")
    assert [(loc, t.id) for loc, t in read_all("ff.jsonl")] == [("ff.jsonl:1", "s"), ("ff.jsonl:1", "s2"), ("ff.jsonl:2", "s3")]
