from __future__ import annotations

import json
from pathlib import Path

from assay.model import InputIssue

from ._helpers import DATA, plain, read_all, traces_of


def test_rag_trace_in_otlp_json() -> None:
    (t,) = traces_of(DATA / "openinference_otlp.json").values()
    t = plain(t)
    q = "How many vacation days do new employees get?"
    assert t["system"] == "Answer from the HR handbook."
    assert t["turns"] == [{
        "input": q, "output": "New employees get 25 vacation days per year.",
        "tool_calls": [{"name": "lookup_policy", "arguments": {"topic": "vacation", "tenure": "new"}, "result": {"days": 25},
                        "timestamp": "2026-01-01T10:00:00.910Z", "duration_ms": 190.0, "id": "call_9"}],
        "context": ["Full-time employees accrue 25 days of paid vacation per year.",
                    "Vacation requests go through the HR portal."],
        # total_tokens was recorded by one call only, so it is not summed
        "latency_ms": 1870.0, "usage": {"input_tokens": 670, "output_tokens": 36, "cost_usd": 0.00011}}]
    assert (t["status"], t["latency_ms"]) == ("completed", 1900.0)
    assert t["metadata"] == {"session_id": "sess-7", "user_id": "u-19", "span_metadata": {"env": "staging"},
                             "service_name": "hr-bot", "provider": "openai", "models": ["gpt-4o-mini"],
                             "root_span": "RAG pipeline"}


def test_phoenix_span_records_with_a_sub_agent() -> None:
    (t,) = traces_of(DATA / "phoenix_spans.json").values()
    t = plain(t)
    assert t["turns"] == [{
        "input": "My order 1182 never arrived.",
        "output": "I've opened a claim (#C-77); a refund will follow within 3 days.",
        "tool_calls": [{"name": "track_order", "arguments": {"order_id": 1182}, "result": {"status": "lost"},
                        "timestamp": "2026-01-02T09:00:01.010Z", "duration_ms": 290.0, "agent": "support_agent", "id": "tu_1"}],
        "latency_ms": 3100.0, "usage": {"input_tokens": 460, "output_tokens": 55}, "agent": "support_agent"}]
    # no LLM span in the sub-agent: its input.value / output.value make its turn; tool.parameters its arguments
    assert t["agents"] == {"claims_agent": {"turns": [{
        "input": "Open a lost-parcel claim for order 1182.", "output": "Claim C-77 opened.",
        "tool_calls": [{"name": "open_claim", "arguments": {"order_id": 1182, "reason": "lost"},
                        "error": "claims API timed out", "timestamp": "2026-01-02T09:00:01.500Z", "duration_ms": 1000.0,
                        "agent": "claims_agent"}],
        "latency_ms": 1000.0, "agent": "claims_agent"}]}}
    assert t["handoffs"] == [{"from": "support_agent", "to": "claims_agent",
                              "message": "Open a lost-parcel claim for order 1182.", "timestamp": "2026-01-02T09:00:01.400Z"}]


def test_dataframe_records_with_malformed_rows() -> None:
    out = read_all(DATA / "phoenix_spans.jsonl")
    path = DATA / "phoenix_spans.jsonl"
    assert sorted(str(x) if isinstance(x, InputIssue) else x.id for _, x in out) == sorted([
        "7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c",
        f"{path}:2: start_time: not an ISO 8601 time: 'yesterday' (trace 8d8d8d8d8d8d8d8d8d8d8d8d8d8d8d8d not imported)",
        f"{path}:3: attributes[llm.token_count.prompt]: expected an integer, got string "
        "(trace 9e9e9e9e9e9e9e9e9e9e9e9e9e9e9e9e not imported)",
    ])
    t = next(x for _, x in out if not isinstance(x, InputIssue))
    assert plain(t)["turns"] == [{"input": "Translate 'merci' to English.", "output": "Thank you.", "latency_ms": 750.0,
                                  "usage": {"input_tokens": 12, "output_tokens": 7}}]


def test_chain_root_io_stands_in_when_llm_spans_record_no_messages(in_tmp: Path) -> None:
    spans = [
        {"name": "chain", "context": {"trace_id": "t1", "span_id": "a"}, "span_kind": "CHAIN", "parent_id": None,
         "start_time": "2026-01-01T00:00:00+00:00", "end_time": "2026-01-01T00:00:02+00:00",
         "attributes": {"input.value": json.dumps({"query": "hi"}), "input.mime_type": "application/json",
                        "output.value": "hello"}},
        {"name": "llm", "context": {"trace_id": "t1", "span_id": "b"}, "span_kind": "LLM", "parent_id": "a",
         "start_time": "2026-01-01T00:00:00.5+00:00", "end_time": "2026-01-01T00:00:01+00:00",
         "attributes": {"llm.model_name": "m"}},
        {"name": "search", "context": {"trace_id": "t1", "span_id": "c"}, "span_kind": "TOOL", "parent_id": "a",
         "start_time": "2026-01-01T00:00:01.1+00:00", "end_time": "2026-01-01T00:00:01.2+00:00",
         "attributes": {"tool.name": "search", "input.value": "plain text query", "output.value": "not json"}},
    ]
    (in_tmp / "s.jsonl").write_text("\n".join(json.dumps(s) for s in spans) + "\n")
    (t,) = [x for _, x in read_all("s.jsonl")]
    assert (t.turns[0].input, t.turns[0].output) == ("hi", "hello")
    assert plain(t)["turns"][0]["tool_calls"][0]["arguments"] == {"input": "plain text query"}
