"""Langfuse exports: traces with observations (GENERATION, TOOL, ...) and observation pages."""

from __future__ import annotations

from ._helpers import DATA, issues_of, plain, traces_of
from .test_openai_chat import run_cli


def test_a_trace_with_generations_and_a_tool_observation() -> None:
    t = plain(traces_of(DATA / "langfuse_traces.jsonl")["lf-trace-1"])
    assert t["system"] == "You track parcels."
    (turn,) = t["turns"]
    assert turn["input"] == "Where is my parcel 7788?" and turn["output"] == "Parcel 7788 is out for delivery today."
    assert turn["tool_calls"] == [{"name": "track_parcel", "arguments": {"parcel_id": "7788"},
                                   "result": {"status": "out_for_delivery"}, "timestamp": "2026-01-01T09:00:00.950Z",
                                   "duration_ms": 400.0, "id": "call_p1"}]
    assert turn["usage"] == {"input_tokens": 200, "output_tokens": 35, "total_tokens": 235, "cost_usd": 0.0021}
    assert t["latency_ms"] == 2400.0
    meta = t["metadata"]
    assert (meta["session_id"], meta["user_id"], meta["tags"], meta["scores"]) == ("sess-9", "u-17", ["prod"],
                                                                                  {"user_feedback": 1})


def test_the_traces_own_input_and_output_stand_in_without_generations() -> None:
    t = plain(traces_of(DATA / "langfuse_traces.jsonl")["lf-trace-2"])
    assert t["turns"] == [{"input": "Opening hours?", "output": "9 to 5, Monday to Friday."}]


def test_an_observations_page_is_grouped_by_trace() -> None:
    t = traces_of(DATA / "langfuse_observations.json")
    assert [(k, v.turns[0].input, v.turns[0].output) for k, v in t.items()] == [
        ("lf-3", "Translate 'thank you' to German.", "Danke."), ("lf-4", "2+2?", "4")]
    assert t["lf-3"].turns[0].usage.total_tokens == 11  # v2 'usage'
    assert t["lf-4"].turns[0].usage.input_tokens == 5  # v3 'usageDetails'


def test_malformed_exports_are_issues() -> None:
    issues = [str(i).split("langfuse_malformed.jsonl:", 1)[1] for i in issues_of(DATA / "langfuse_malformed.jsonl")]
    assert issues == [
        "1: observations[0]: observations are ids only: export the trace with its observations "
        "(GET /api/public/traces/{id}) (trace lf-b1 not imported)",
        "2: observations[0].startTime: not an ISO 8601 time: 'yesterday' (trace lf-b2 not imported)",
        "3: observations[0].usageDetails.input: expected an integer, got string (trace lf-b3 not imported)",
        "4: trace 'lf-b4' has no turns: no user message, answer or tool call was found in it, so there is nothing "
        "to score"]


def test_assay_run_scores_the_samples_without_a_flag() -> None:
    out = run_cli(DATA / "langfuse_traces.jsonl")
    assert [t["id"] for t in out["traces"]] == ["lf-trace-1", "lf-trace-2"]
    assert out["traces"][0]["metrics"]["latency_score"]["score"] is not None
    assert len(run_cli(DATA / "langfuse_observations.json")["traces"]) == 2
    assert len(run_cli(DATA / "langfuse_malformed.jsonl")["input_issues"]) == 4
