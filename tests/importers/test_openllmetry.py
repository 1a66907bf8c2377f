"""OpenLLMetry / Traceloop spans: llm.request.type chat spans, flattened prompts and completions, tool entities."""

from __future__ import annotations

from assay.importers import detect_format

from ._helpers import DATA, issues_of, plain, traces_of
from .test_openai_chat import run_cli

T1 = "5b8efff798038103d269b633813fc60c"


def test_chat_spans_make_turns_and_the_tool_span_pairs_with_the_requested_call() -> None:
    t = plain(traces_of(DATA / "openllmetry_spans.json")[T1])
    assert t["system"] == "You are a weather assistant."
    (turn,) = t["turns"]
    assert turn["input"] == "What's the weather in Paris?" and turn["output"] == "It is 18°C and cloudy in Paris."
    # one call, not two: the id-less tool span is the execution of the model's call_w1
    assert turn["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"},
                                   "result": {"temp_c": 18, "sky": "cloudy"}, "timestamp": "2026-01-01T10:00:00.905Z",
                                   "duration_ms": 200.0, "id": "call_w1"}]
    assert turn["usage"] == {"input_tokens": 148, "output_tokens": 30, "total_tokens": 178}
    assert t["latency_ms"] == 2400.0
    assert t["metadata"]["workflow_name"] == "weather_assistant" and t["metadata"]["provider"] == "OpenAI"


def test_older_llm_prompts_and_llm_usage_names() -> None:
    t = plain(traces_of(DATA / "openllmetry_spans.json")["7a1c0de5e0a1b2c3d4e5f60718293a4b"])
    assert t["turns"] == [{"input": "Name a prime above 10.", "output": "11", "latency_ms": 700.0,
                           "usage": {"input_tokens": 12, "output_tokens": 1, "total_tokens": 13}}]


def test_bad_attributes_and_an_embedding_only_trace_are_issues() -> None:
    issues = [str(i).split("openllmetry_malformed.jsonl:", 1)[1] for i in issues_of(DATA / "openllmetry_malformed.jsonl")]
    assert issues[0].startswith("1: resourceSpans[0].scopeSpans[0].spans[0].attributes[gen_ai.completion.0]."
                                "tool_calls[0].arguments: not valid JSON")
    assert issues[1] == ("2: resourceSpans[0].scopeSpans[0].spans[0].attributes[llm.usage.total_tokens]: expected an "
                         "integer, got string (trace 2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f not imported)")
    assert issues[2].startswith("3: trace '4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f' has no turns")  # no silent emptiness
    assert len(issues) == 3


def test_detected_as_otel_and_scored_with_more_than_latency() -> None:
    assert detect_format((DATA / "openllmetry_spans.json").read_bytes()[:65536], "x.json") == "otel"
    out = run_cli(DATA / "openllmetry_spans.json")
    by_id = {t["id"]: t["metrics"] for t in out["traces"]}
    scored = {m for m, r in by_id[T1].items() if r["score"] is not None}
    assert {"latency_score", "prompt_injection_detection"} <= scored
    assert len(run_cli(DATA / "openllmetry_malformed.jsonl")["input_issues"]) == 3


def test_an_array_entity_attribute_reads_as_json_text(tmp_path) -> None:
    """A legal OTLP array attribute as traceloop.entity.input/output is kept as its JSON text (it ended the
    whole run with NameError: json was not imported)."""
    import json

    doc = json.loads((DATA / "openllmetry_spans.json").read_text(encoding="utf-8"))
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    workflow = next(s for s in spans if s["name"] == "weather_assistant.workflow")
    kept = [s for s in spans if s["traceId"] == workflow["traceId"] and s is workflow]
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"] = kept
    for attr in workflow["attributes"]:
        if attr["key"] in ("traceloop.entity.input", "traceloop.entity.output"):
            attr["value"] = {"arrayValue": {"values": [{"stringValue": "Paris"}, {"intValue": "2"}]}}
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    t = plain(traces_of(path)[T1])
    assert t["turns"][0]["input"] == '["Paris", 2]' and t["turns"][0]["output"] == '["Paris", 2]'
