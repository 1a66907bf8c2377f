from __future__ import annotations

import pytest

from assay.errors import DataError
from assay.importers.uaef import evaluation_input_to_trace

from ._helpers import DATA, plain, read_all, traces_of


def test_single_agent_case() -> None:
    t = plain(traces_of(DATA / "uaef_cases.json")["weather_lookup"])
    ctx = ["Weather data comes from Météo-France.", "Paris forecast service returns Celsius."]
    assert t == {
        "id": "weather_lookup", "system": "You are a weather assistant.",
        "turns": [  # user turns only: the system and tool messages open none
            {"input": "What's the weather in Paris?", "output": "Let me check.\nIt is 18°C and cloudy in Paris.",
             "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "result": {"temp_c": 18, "sky": "cloudy"},
                             "timestamp": "2024-04-15T10:00:01Z", "duration_ms": 120.0}],
             "context": ctx},
            {"input": "And tomorrow?", "output": "Tomorrow: 21°C and sunny.",
             "tool_calls": [{"name": "get_forecast", "arguments": {"city": "Paris", "days": 1},
                             "result": {"temp_c": 21, "sky": "sunny"}, "timestamp": "2024-04-15T10:00:11Z",
                             "duration_ms": 300.0}],
             "context": ctx},
        ],
        "expected": {"output": "18°C and cloudy today; 21°C and sunny tomorrow.",
                     "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}},
                                    {"name": "get_forecast", "arguments": {"city": "Paris", "days": 1}}],
                     "role": "a concise weather assistant", "turns": 2},
        "usage": {"input_tokens": 150, "output_tokens": 75, "cost_usd": 0.0025},
        "latency_ms": 2300.0,  # UAEF latency is in seconds
        "throughput_rps": 12.5,
        "metadata": {"description": "One tool call, answer grounded in the tool result", "scenario_type": "happy_path",
                     "expected_score": 1.0, "model": "gpt-4o", "throughput_rps": 12.5, "quality_score": 0.9,
                     "uaef_trace_id": "550e8400-e29b-41d4-a716-446655440000", "session_id": "session_123",
                     "framework": "langgraph", "expected_arguments": {"expected_turns": 2, "role": "a concise weather assistant"}},
    }


def test_multi_agent_case() -> None:
    t = plain(traces_of(DATA / "uaef_cases.json")["trip_planning"])
    assert t["turns"] == [] and t["status"] == "completed"
    assert t["latency_ms"] == 4200.0 and t["usage"] == {"cost_usd": 0.011}
    assert list(t["agents"]) == ["orchestrator", "flight_agent", "hotel_agent"]
    assert t["agents"]["orchestrator"] == {"turns": [{"input": "Plan a weekend in Lisbon.",
                                                      "output": "Your weekend: flight booked, hotel reserved.",
                                                      "agent": "orchestrator"}],
                                           "usage": {"input_tokens": 300, "output_tokens": 80}}
    assert t["agents"]["hotel_agent"]["turns"][0]["tool_calls"] == [
        {"name": "reserve_hotel", "arguments": {"area": "Alfama"}, "error": "first attempt timed out", "timestamp": "2024-04-15T10:00:02Z", "agent": "hotel_agent"}]
    assert t["handoffs"] == [
        {"from": "orchestrator", "to": "flight_agent", "kind": "delegation", "message": "Book a flight to Lisbon for Friday.",
         "timestamp": "2024-04-15T10:00:01Z"},
        {"from": "orchestrator", "to": "hotel_agent", "kind": "delegation", "message": "Reserve a hotel in Alfama.",
         "timestamp": "2024-04-15T10:00:02Z"}]
    assert t["metadata"]["agent_latency_ms"] == {"flight_agent": 1100.0}
    assert t["expected"] == {"output": "Flight and hotel booked for the Lisbon weekend."}


def test_json_lines_with_malformed_cases() -> None:
    out = read_all(DATA / "uaef_inputs.jsonl")
    assert [x.id if hasattr(x, "id") else (x.line, x.field, x.message) for _, x in out] == [
        "uaef_inputs-1",
        (2, "trace.tool_calls[0].name", "required field is missing"),
        (3, "multi_agent_trace.workflow_status", "expected 'completed', 'failed' or 'partial', got 'DONE'"),
        "uaef_inputs-4",
    ]
    last = out[-1][1]
    assert last.expected is None and last.latency_ms == 400.0


def test_issues_inside_test_cases_name_the_case(in_tmp) -> None:  # type: ignore[no-untyped-def]
    (in_tmp / "cases.json").write_text('{"test_cases": [\n{"trace": {"messages": []}},\n'
                                       '{"trace": {"messages": [{"role": "user", "content": 1}]}}\n]}')
    out = read_all("cases.json")
    assert str(out[1][1]) == "cases.json:3: test_cases[1].trace.messages[0].content: expected a string, got integer"


def test_helper_and_tool_calls_placed_by_time() -> None:
    case = {"trace": {"messages": [
        {"role": "user", "content": "a", "timestamp": "2024-01-01T00:00:00Z"},
        {"role": "assistant", "content": "b", "timestamp": "2024-01-01T00:00:01Z"},
        {"role": "user", "content": "c", "timestamp": "2024-01-01T00:01:00Z"}],
        "tool_calls": [{"name": "late", "arguments": {}, "timestamp": "2024-01-01T00:01:05Z"},
                       {"name": "early", "arguments": {}, "timestamp": "2024-01-01T00:00:00.5Z"}]}}
    t = evaluation_input_to_trace(case, default_id="x")
    assert [[c.name for c in turn.tool_calls] for turn in t.turns] == [["early"], ["late"]]
    with pytest.raises(DataError) as info:
        evaluation_input_to_trace({"trace": {"messages": [{"role": "user", "content": "a", "timestamp": "soon"}]}}, default_id="x")
    assert info.value.field == "trace.messages[0].timestamp"
    with pytest.raises(DataError, match="trace: required field is missing"):
        evaluation_input_to_trace({"ground_truth": {}}, default_id="x")
