"""Files as other tools write them (tests/data/real, see PROVENANCE.md), read without a flag.

For each file: the format detected (per shape in mixed files), the exact traces, their turns and
tool calls (name, arguments, result or error, MCP or not) and no input issue.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from assay.importers import read_traces
from assay.metrics.tool_calling import is_mcp_tool
from assay.model import InputIssue, Trace

from .test_real_corpus_genuine import ROUND2

REAL = Path(__file__).resolve().parents[1] / "data" / "real"

Call = tuple[str, dict[str, Any], str]
"""(name, arguments, 'mcp' or 'tool')."""

CORPUS: list[tuple[tuple[str, ...], dict[str, int], dict[str, tuple[int, list[Call]]]]] = [
    (("anthropic/mcp_connector.json",), {"anthropic": 1},
     {"mcp_connector-1": (1, [("echo", {"param1": "value1", "param2": "value2"}, "mcp")])}),
    (("anthropic/web_search.json",), {"anthropic": 1},
     {"web_search-1": (1, [("web_search", {"query": "claude shannon birth date"}, "tool")])}),
    (("anthropic/extended_thinking.json",), {"anthropic": 1}, {"extended_thinking-1": (1, [])}),
    (("openai_responses/remote_mcp.json",), {"openai_responses": 1},
     {"remote_mcp-1": (1, [("ask_question", {"repoName": "modelcontextprotocol/modelcontextprotocol", "question":
                                             "What transport protocols does the 2025-03-26 version of the MCP spec "
                                             "support?"}, "mcp")])}),
    (("openai_responses/mcp_approval.json",), {"openai_responses": 1}, {"mcp_approval-1": (1, [])}),
    (("openai_responses/code_interpreter.json",), {"openai_responses": 1},
     {"code_interpreter-1": (1, [("code_interpreter", {"code": "x = (14 - 11) / 3\nprint(x)",
                                                       "container_id": "cntr_68a0ci"}, "tool")])}),
    (("openai_batch/batch_output.jsonl",), {"openai_batch": 2}, {"request-2": (1, []), "request-1": (1, [])}),
    (("openai_batch/batch_output.jsonl", "openai_batch/batch_input.jsonl"), {"openai_batch": 2},
     {"request-2": (1, []), "request-1": (1, [])}),
    (("openai_batch/batch_input.jsonl", "openai_batch/batch_errors.jsonl"), {"openai_batch": 2},
     {"request-2": (1, []), "request-1": (1, [])}),
    (("langfuse/download_pydantic_ai.json",), {"langfuse": 1},
     {"5a1e3b8f2c9d4e7f8a6b1c2d3e4f5a6b": (1, [("get_lat_lng", {"location_description": "London"}, "tool"),
                                                ("get_weather", {"lat": 51.5, "lng": -0.12}, "tool")])}),
    (("langfuse/observations_adk.json",), {"langfuse": 1},
     {"c0ffee00b0a7400fa1d2e3f405060708": (1, [("say_hello", {"name": "Ana"}, "tool")])}),
    (("openinference/llm_spans_spec.jsonl",), {"openinference": 1},
     {"409df945-e058-4829-b240-cfbdd2ff4488": (1, [("multiply", {"a": 23, "b": 87}, "tool")])}),
    (("inspect/log_tool_call_error.json",), {"inspect": 1}, {"1-epoch4": (1, [])}),
    (("uaef/cost_efficiency.json",), {"uaef": 6},
     {name: (1, []) for name in ("low_cost_high_quality", "high_cost", "no_cost_info", "zero_cost", "negative_cost",
                                 "heavy_penalty_2x_above")}),
    (("uaef/throughput.json",), {"uaef": 11},
     {name: (1, []) for name in ("meets_target", "at_target", "below_target", "very_low_throughput",
                                 "no_throughput_info", "exceeds_target", "moderate_throughput", "one_rps",
                                 "negative_throughput", "zero_throughput", "throughput_rps_null_explicit")}),
    (("mixed/proxy_chat_and_responses.jsonl",), {"openai": 2, "openai_responses": 1},
     {"proxy_chat_and_responses-1": (1, []), "proxy_chat_and_responses-2": (1, []),
      "proxy_chat_and_responses-3": (1, [])}),
]


def _read(names: tuple[str, ...]) -> tuple[list[Trace], list[InputIssue], dict[str, dict[str, int]]]:
    formats: dict[str, dict[str, int]] = {}
    traces: list[Trace] = []
    issues: list[InputIssue] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # orphan results and the like are warned about; counted below
        for _, item in read_traces([str(REAL / n) for n in names], formats=formats):
            (traces if isinstance(item, Trace) else issues).append(item)  # type: ignore[arg-type]
    return traces, issues, formats


@pytest.mark.parametrize(("names", "shapes", "expected"), CORPUS, ids=["+".join(c[0]) for c in CORPUS])
def test_each_real_file_reads_whole(names: tuple[str, ...], shapes: dict[str, int],
                                    expected: dict[str, tuple[int, list[Call]]]) -> None:
    traces, issues, formats = _read(names)
    assert issues == []
    assert {k: v for counts in formats.values() for k, v in counts.items() if v} == shapes
    got = {}
    for t in traces:
        declared = t.metadata.get("mcp_tools")
        calls = [(c.name, c.arguments, "mcp" if is_mcp_tool(c.name, declared) else "tool")
                 for turn in t.turns for c in turn.tool_calls]
        got[str(t.id)] = (len(t.turns), calls)
    assert got == expected


def test_every_corpus_file_is_in_the_table_and_has_its_provenance() -> None:
    provenance = (REAL / "PROVENANCE.md").read_text(encoding="utf-8")
    files = {str(p.relative_to(REAL)) for p in REAL.rglob("*") if p.is_file() and p.name != "PROVENANCE.md"}
    assert files == {n for c in CORPUS for n in c[0]} | {"openai_batch/batch_errors.jsonl"} | {r[0] for r in ROUND2}
    assert all(f"`{f}`" in provenance for f in files)


def test_results_and_errors_are_attached_to_their_calls() -> None:
    (mcp,), _, _ = _read(("anthropic/mcp_connector.json",))
    assert mcp.turns[0].tool_calls[0].result == "Hello" and mcp.metadata["mcp_servers"] == {"example-mcp": ["echo"]}
    (search,), _, _ = _read(("anthropic/web_search.json",))
    assert search.turns[0].tool_calls[0].result[0]["url"] == "https://en.wikipedia.org/wiki/Claude_Shannon"
    (thinking,), _, _ = _read(("anthropic/extended_thinking.json",))
    assert thinking.turns[0].reasoning == "Let me analyze this step by step..."
    (remote,), _, _ = _read(("openai_responses/remote_mcp.json",))
    assert remote.turns[0].tool_calls[0].result.startswith("The 2025-03-26 version of the Model Context Protocol")
    assert remote.metadata["mcp_list_tools"] == {"deepwiki": ["read_wiki_structure", "read_wiki_contents", "ask_question"]}
    (approval,), _, _ = _read(("openai_responses/mcp_approval.json",))
    assert approval.metadata["mcp_approval_request"][0]["name"] == "ask_question"
    (code,), _, _ = _read(("openai_responses/code_interpreter.json",))
    assert code.turns[0].tool_calls[0].result == "1.0\n" and code.turns[0].output == "The solution is x = 1."
    weather, = _read(("langfuse/download_pydantic_ai.json",))[0]
    assert [c.result for c in weather.turns[0].tool_calls] == [{"lat": 51.5, "lng": -0.12},
                                                               {"temperature": "21 °C", "description": "Sunny"}]
    assert [c.id for c in weather.turns[0].tool_calls] == ["call_Lat8s2", "call_Wx91k3"]
    assert weather.metadata["trace_metadata"]["scope"]["name"] == "pydantic-ai"  # decoded from a JSON string
    (spec,), _, _ = _read(("openinference/llm_spans_spec.jsonl",))
    assert spec.turns[0].tool_calls[0].result == "2001"  # the tool message names no call id, only the tool


def test_batch_error_lines_are_failed_traces_with_their_request_or_a_located_issue() -> None:
    traces, _, _ = _read(("openai_batch/batch_input.jsonl", "openai_batch/batch_errors.jsonl"))
    failed = next(t for t in traces if t.id == "request-1")
    assert failed.status == "failed" and failed.metadata["error"]["code"] == "invalid_api_key"
    assert failed.turns[0].input == "Hello world!" and failed.system == "You are a helpful assistant."
    traces, issues, _ = _read(("openai_batch/batch_errors.jsonl",))
    assert [t.id for t in traces] == ["request-2"]
    assert [(i.line, i.message.split(" (")[0]) for i in issues] == [
        (2, "batch request failed: invalid_api_key: Incorrect API key provided: sk-abc***123. You can find your "
            "API key at https://platform.openai.com/account/api-keys.")]


def test_inspect_tool_messages_without_their_calls_are_kept_as_orphans() -> None:
    with pytest.warns(UserWarning, match=r"11 tool result\(s\) answer no earlier tool call"):
        (trace,), _ = [x for _, x in read_traces(REAL / "inspect/log_tool_call_error.json")], None
    orphans = trace.metadata["orphan_tool_results"]
    assert [o["tool_call_id"] for o in orphans] == [f"bash_{i}" for i in range(1, 12)]
    assert orphans[-1]["error"] == "The tool output limit of 10 MiB was exceeded."
