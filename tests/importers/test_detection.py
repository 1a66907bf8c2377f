"""Every sample file is claimed by exactly its own importer; unclear files are ConfigErrors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import ConfigError, DataError
from assay.importers import Importer, detect_format, importers, read_traces, register_importer
from assay.importers._registry import _IMPORTERS, _SNIFF_BYTES

from ._helpers import DATA, read_all

SAMPLES = {
    "native_traces.jsonl": "assay", "native_pretty.json": "assay",
    "otel_agent.json": "otel", "otel_lines.jsonl": "otel", "otel_malformed.jsonl": "otel",
    "openinference_otlp.json": "openinference", "phoenix_spans.json": "openinference",
    "phoenix_spans.jsonl": "openinference",
    "uaef_cases.json": "uaef", "uaef_inputs.jsonl": "uaef",
    "fair_forge_datasets.json": "fair_forge", "fair_forge_malformed.jsonl": "fair_forge",
    "eval_lib_cases.jsonl": "eval_lib", "eval_lib_conversation.json": "eval_lib",
    "deepeval_cases.json": "deepeval", "deepeval_malformed.jsonl": "deepeval",
    "langchain_conversations.jsonl": "langchain", "langchain_single.json": "langchain",
    "openai_finetune.jsonl": "openai", "openai_request_response.jsonl": "openai",
    "openai_message_lists.jsonl": "openai", "openai_conversation.json": "openai", "openai_malformed.jsonl": "openai",
    "anthropic_messages.jsonl": "anthropic", "anthropic_malformed.jsonl": "anthropic",
    "openllmetry_spans.json": "otel", "openllmetry_malformed.jsonl": "otel",
    "uaef_metadata_cost.json": "uaef",
    "inspect_eval_log.json": "inspect", "inspect_malformed.json": "inspect",
    "openai_responses.jsonl": "openai_responses", "openai_responses_malformed.jsonl": "openai_responses",
    "langfuse_traces.jsonl": "langfuse", "langfuse_observations.json": "langfuse", "langfuse_malformed.jsonl": "langfuse",
}


def test_every_sample_file_is_listed() -> None:
    assert sorted(p.name for p in DATA.iterdir()) == sorted(SAMPLES)


def test_all_importers_are_registered() -> None:
    assert set(importers()) == {"assay", "otel", "openinference", "uaef", "fair_forge", "eval_lib", "deepeval",
                                "langchain", "openai", "anthropic", "openai_responses", "openai_batch", "inspect", "langfuse", "gemini", "tau_bench",
                                    "adk_evalset", "swe_agent", "langsmith"}


@pytest.mark.parametrize(("name", "fmt"), sorted(SAMPLES.items()), ids=sorted(SAMPLES))
def test_each_sample_is_claimed_by_its_importer_only(name: str, fmt: str) -> None:
    head = (DATA / name).read_bytes()[:_SNIFF_BYTES]
    claims = sorted(n for n, imp in importers().items() if imp.sniff(head, name))
    assert claims == [fmt]
    assert detect_format(head, name) == fmt


@pytest.mark.parametrize(("name", "fmt"), sorted(SAMPLES.items()), ids=sorted(SAMPLES))
def test_detected_reads_like_named(name: str, fmt: str) -> None:
    def key(out: list) -> list:
        return [(loc, json.loads(x.model_dump_json()) if hasattr(x, "model_dump_json") else str(x)) for loc, x in out]

    assert key(read_all(DATA / name)) == key(read_all(DATA / name, input_format=fmt))


def test_first_record_beyond_the_sniff_head_is_still_detected(in_tmp: Path) -> None:
    """Keys are scanned from a first record that does not fit in 64 KiB."""
    big = {"session_id": "s", "assistant_id": "a", "context": "x" * 70_000, "conversation": []}
    (in_tmp / "ff.json").write_text(json.dumps(big, indent=2))
    head = (in_tmp / "ff.json").read_bytes()[:_SNIFF_BYTES]
    assert detect_format(head, "ff.json") == "fair_forge"
    big_trace = {"id": "t", "metadata": {"blob": "y" * 70_000}, "turns": []}
    (in_tmp / "t.jsonl").write_text(json.dumps(big_trace) + "\n")
    head = (in_tmp / "t.jsonl").read_bytes()[:_SNIFF_BYTES]
    assert detect_format(head, "t.jsonl") == "assay"


def test_unknown_content_is_a_config_error_listing_the_formats(in_tmp: Path) -> None:
    (in_tmp / "x.json").write_text('{"foo": 1}\n')
    with pytest.raises(ConfigError, match=r"x.json: cannot tell the input format; .* one of: adk_evalset, anthropic, assay, deepeval"):
        read_all("x.json")


def test_a_flat_input_output_record_is_shown_the_turns_it_belongs_in(in_tmp: Path) -> None:
    """The commonest shape a stranger writes first: its near-miss was 'the closest is openai_responses'."""
    (in_tmp / "flat.jsonl").write_text('{"id": "t1", "input": "hi", "output": "hello"}\n')
    with pytest.raises(ConfigError, match=r"flat.jsonl: cannot tell the input format; its first record has 'input' "
                                          r"and 'output' at the top, .* \{\"id\": \"...\", \"turns\": \[\{\"input\""):
        read_all("flat.jsonl")


@pytest.mark.parametrize(("text", "kind"), [
    ("id,input,output\nt1,hello,hi there\nt2,\"what, time\",noon\n", r"CSV \(its first line reads as a header: id,input"),
    ("id;input\nt1;hi\n", "CSV"),
    ("id\tinput\nt1\thi\n", r"TSV \(its first line reads as a header: id\\tinput\)"),
    ("- id: t1\n  input: hello\n", "YAML"),
    ("---\nid: t1\n", "YAML"),
    ("traces:\n  - id: t1\n", "YAML"),
    ("<?xml version='1.0'?>\n<testsuite/>\n", "an XML or HTML document"),
    ("\ufeff<!DOCTYPE html><html></html>", "an XML or HTML document"),
])
def test_a_file_that_is_not_json_is_named_for_what_it_is(in_tmp: Path, text: str, kind: str) -> None:
    """Not one 'not valid JSON' per line: the file is refused once, for what it is, before anything is read."""
    (in_tmp / "x.txt").write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=rf"x.txt: this looks like {kind}.*, not JSON; assay reads JSON Lines"):
        read_all("x.txt")


@pytest.mark.parametrize("text", [
    '"a": 1, "b": 2}\n"c": 3, "d": 4}\n{"id": "x", "turns": [{"input": "q", "output": "a"}]}\n',  # broken first lines
    "garbage\nmore garbage\n",
    "oops, a comma\n",  # one line: no second line to confirm a CSV header
])
def test_jsonl_whose_head_is_broken_is_still_read_line_by_line(in_tmp: Path, text: str) -> None:
    (in_tmp / "x.jsonl").write_text(text)
    items = read_all("x.jsonl")
    assert items and all(loc.startswith("x.jsonl:") for loc, _ in items)


def test_assay_s_own_results_given_as_traces_are_named_with_what_reads_them(in_tmp: Path) -> None:
    """`assay run results.json` (the results of an earlier run) was "cannot tell the input format" ("the closest is
    tau_bench" for the JSON Lines form); it is named, with the commands that read it."""
    import assay

    traces = in_tmp / "t.jsonl"
    traces.write_text(json.dumps({"id": "t1", "turns": [{"input": "q", "output": "a", "latency_ms": 5}]}) + "\n")
    assay.evaluate(str(traces), ["latency_score"], outputs=[str(in_tmp / "r.json"), str(in_tmp / "r.jsonl")])
    for name in ("r.json", "r.jsonl"):
        with pytest.raises(DataError, match=rf"{name}: this is assay results \(what `assay run -o results\.json"
                                            rf"l?` writes\), not traces: `assay report`, `assay compare` and "):
            read_all(str(in_tmp / name))
    (in_tmp / "c.json").write_text(json.dumps({"metrics": {}, "regressions": []}))
    with pytest.raises(DataError, match=r"c.json: this is the output of `assay compare`, not traces$"):
        read_all(str(in_tmp / "c.json"))


def test_unknown_format_name_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match=r"unknown input format 'open_inference'. Did you mean 'openinference'"):
        list(read_traces(str(DATA / "native_traces.jsonl"), input_format="open_inference"))


def test_two_claims_are_an_ambiguity_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_IMPORTERS, "greedy", Importer("greedy", "claims everything", _IMPORTERS["assay"].read,
                                                       lambda head, name: True))
    head = (DATA / "native_traces.jsonl").read_bytes()
    with pytest.raises(ConfigError, match=r"ambiguous input format \(could be assay, greedy\)"):
        detect_format(head, "native_traces.jsonl")


def test_a_broken_sniffer_does_not_stop_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(head: bytes, name: str) -> bool:
        raise RuntimeError("bug")

    monkeypatch.setitem(_IMPORTERS, "broken", Importer("broken", "raises", _IMPORTERS["assay"].read, boom))
    assert detect_format((DATA / "native_traces.jsonl").read_bytes(), "n") == "assay"


def test_a_registered_importer_is_used_by_name(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.model import Trace, Turn

    def read(stream, source):  # type: ignore[no-untyped-def]
        for n, raw in enumerate(stream, 1):
            yield f"{source}:{n}", Trace(id=raw.decode().strip(), turns=[Turn(input="hi")])

    monkeypatch.setitem(_IMPORTERS, "ids", _IMPORTERS["assay"])  # keep the dict restorable
    with pytest.raises(ConfigError, match="importer 'ids' from module .* clashes"):
        register_importer(Importer("ids", "one id a line", read, lambda head, name: False))
    register_importer(Importer("ids", "one id a line", read, lambda head, name: False), replace=True)
    (in_tmp / "ids.txt").write_text("a\nb\n")
    assert [t.id for _, t in read_traces("ids.txt", input_format="ids")] == ["a", "b"]


def test_sniffers_see_64_kib_even_through_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Detection gets the full head although a pipe returns short reads."""
    import io

    class Trickle(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self.data = data

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
            n = min(len(b), 1000, len(self.data))
            b[:n] = self.data[:n]
            self.data = self.data[n:]
            return n

    big = {"session_id": "s", "assistant_id": "a", "context": "x" * 30_000,
           "conversation": [{"qa_id": "q", "query": "hi", "assistant": "hello"}]}
    data = json.dumps(big, indent=2).encode()
    seen: list[int] = []

    def spy(head: bytes, name: str) -> bool:
        seen.append(len(head))
        return False

    monkeypatch.setitem(_IMPORTERS, "spy", Importer("spy", "", _IMPORTERS["assay"].read, spy))

    class Stdin:
        buffer = io.BufferedReader(Trickle(data), 512)

    monkeypatch.setattr("sys.stdin", Stdin)
    out = list(read_traces("-"))
    assert seen == [len(data)] and [t.id for _, t in out] == ["s"]


@pytest.mark.parametrize("text", [
    '{not json\n"just a string"\n',
    '{"id": "a" "turns": []}\n42\n',
    '{"id": "a", "turns": [}\n"text"\nnull\n',
])
def test_lines_broken_before_their_end_are_reported_line_by_line(in_tmp: Path, text: str) -> None:
    """A first line that is invalid before it ends cannot open a pretty-printed document, so the
    file is read as JSON Lines and each line says what is wrong (not 'cannot tell the format')."""
    (in_tmp / "bad.jsonl").write_text(text)
    out = read_all("bad.jsonl")
    lines = text.strip().split("\n")
    assert [loc for loc, _ in out] == [f"bad.jsonl:{i}" for i in range(1, len(lines) + 1)]
    assert "not valid JSON" in str(out[0][1])


@pytest.mark.parametrize("first", ['{"resourceSpans": [', '{"id": "t",', '[{"id": "t",'])
def test_a_valid_prefix_first_line_still_opens_a_document(first: str) -> None:
    """The counterpart: a first line that is a valid prefix keeps its keys for the sniffers."""
    from assay.importers._sniff import broken_line
    assert not broken_line(first)
    assert broken_line('{not json') and broken_line('{"id" 1}') and broken_line('[1,, 2]')
