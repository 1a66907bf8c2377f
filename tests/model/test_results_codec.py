"""One codec for every results format: files (json, jsonl), store rows, and what reads them back."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.errors import DataError
from assay.model import (
    DimensionScore, MetricResult, TraceResult, Warning, decode_trace, encode_trace, read_results,
)
from assay.store import load_run


def rows(tmp_path: Path) -> Path:
    def trace(i: int, called: str) -> dict:
        return {"id": f"t{i}", "task_id": f"task{i % 2}", "turns": [{"input": "q", "output": "a", "latency_ms": 900.0 + i,
                "tool_calls": [{"name": called, "arguments": {"q": "x"}}]}],
                "expected": {"tool_calls": [{"name": "search", "arguments": {"q": "x"}}]}}
    p = tmp_path / "in.jsonl"
    p.write_text("\n".join(json.dumps(trace(i, "search" if i % 3 else "weather")) for i in range(6)) + "\n")
    return p


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture()
def outputs(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store.sqlite3"))
    src = rows(tmp_path)
    out = {}
    for fmt in ("json", "jsonl"):
        out[fmt] = tmp_path / f"r.{fmt}"
        r = invoke("run", str(src), "-m", "tool_selection_accuracy", "-m", "latency_score", "-o", str(out[fmt]),
                   "-f", fmt)
        assert r.exit_code == 1, r.output  # t0 and t3 call the wrong tool
    return out


def test_every_results_format_reads_back_the_same(outputs):
    by_file = {fmt: load_run(str(p)) for fmt, p in outputs.items()}
    stored = load_run("latest")
    for result in (*by_file.values(), stored):
        assert [t.id for t in result.traces] == [f"t{i}" for i in range(6)]
        t0 = result.traces[0]
        m = t0.metrics["tool_selection_accuracy"]
        assert (m.name, m.score, m.passed, m.threshold) == ("tool_selection_accuracy", 0.0, False, 0.7)
        assert t0.passed is False and t0.dimensions["tool_calling"] == DimensionScore(0.0, False, 0.7, 0.25, 1)
        assert result.summary["tool_selection_accuracy"].n_passed == 4
    assert by_file["json"].traces == by_file["jsonl"].traces == stored.traces
    assert by_file["json"].summary == by_file["jsonl"].summary == stored.summary


def test_the_file_format_is_the_documented_one(outputs):
    doc = json.loads(outputs["json"].read_text())
    assert list(doc) == ["run", "summary", "statistics", "input_issues", "traces"]
    m = doc["traces"][0]["metrics"]["tool_selection_accuracy"]
    assert list(m)[:5] == ["score", "passed", "threshold", "warning", "reason"]  # always there, null or not
    assert "name" not in m and "judge_calls" not in m  # the key is the name; no judge, no judge fields
    lines = outputs["jsonl"].read_text().splitlines()
    assert len(lines) == 7 and json.loads(lines[-1])["summary_record"] is True
    assert json.loads(lines[0]) == doc["traces"][0]


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_compare_report_and_plan_accept_both_formats(outputs, fmt, tmp_path):
    p = str(outputs[fmt])
    r = invoke("compare", p, p, "-f", "json")
    assert r.exit_code == 3, r.output  # two tasks: no metric can reach significance, inconclusive (not a pass)
    assert json.loads(r.stdout)["regressions"] == [] and json.loads(r.stdout)["inconclusive"] is True
    html = tmp_path / "r.html"
    assert invoke("report", p, "-o", str(html)).exit_code == 0 and html.stat().st_size > 0
    assert invoke("runs", "show", "latest", "--json").exit_code == 0


def test_a_file_written_by_the_old_hand_written_codec_still_reads(tmp_path):
    old = {"run": {"n_traces": 1}, "summary": {"m": {"name": "m", "dimension": "custom", "threshold": 0.7, "n": 1,
                                                      "n_null": 0, "n_errored": 0, "n_passed": 1, "mean": 0.9,
                                                      "pass_rate": 1.0, "mean_ci": [0.8, 1.0], "pass_rate_ci": None,
                                                      "warnings": {}, "judge_calls": 0, "tokens": 0, "cost_usd": None}},
           "statistics": {}, "input_issues": [{"source": "a.jsonl", "line": 3, "field": None, "message": "bad"}],
           "traces": [{"id": "t", "task_id": "t", "trial": None, "source": "a.jsonl:1", "overall": 0.9, "passed": True,
                       "dimensions": {"custom": {"score": 0.9, "passed": True, "threshold": 0.6, "weight": 0.1, "n": 1}},
                       "metrics": {"m": {"score": 0.9, "passed": True, "threshold": 0.7, "warning": None, "reason": "",
                                         "judge_calls": 2, "tokens": 10, "cost_usd": None}}}]}
    result = read_results(json.dumps(old, indent=2).encode(), "old.json")
    assert result.summary["m"].mean_ci == (0.8, 1.0) and str(result.input_issues[0]) == "a.jsonl:3: bad"
    m = result.traces[0].metrics["m"]
    assert (m.name, m.judge_calls, m.tokens, m.warning) == ("m", 2, 10, None)


@pytest.mark.parametrize("command", [["report", "{t}", "-o", "{d}/r.html"], ["compare", "{t}", "{t}"]])
def test_a_trace_file_given_as_results_says_to_score_it_first(tmp_path, command):
    """`assay report traces.jsonl` said "not an assay results record: Object missing required field `metrics`"."""
    t = tmp_path / "t.jsonl"
    t.write_text(json.dumps({"id": "t1", "turns": [{"input": "q", "output": "a"}]}) + "\n")
    r = CliRunner().invoke(main, [a.format(t=t, d=tmp_path) for a in command])
    assert r.exit_code == 2
    assert r.stderr.strip() == (f"Error: {t}: this file holds traces, not results: score it first (assay run {t} "
                                "--html report.html does both), or give a run id")


def test_bad_results_files_say_where(tmp_path):
    with pytest.raises(DataError, match=r"r.jsonl:2: not an assay results record"):
        read_results(b'{"id": "t", "task_id": "t", "trial": null, "metrics": {}}\n{"id": 3}\n', "r.jsonl")
    with pytest.raises(DataError, match="no summary record"):
        read_results(b'{"id": "t", "task_id": "t", "trial": null, "metrics": {}}\n', "r.jsonl")
    with pytest.raises(DataError, match="not an assay results file"):
        read_results(b'{"hello": 1}', "x.json")


def test_results_are_immutable_and_round_trip():
    r = MetricResult("m", 0.5, False, 0.7, "half", ["q"], Warning.INVALID_DATA, {"k": (1, 2), "s": {3}})
    with pytest.raises(AttributeError):
        r.score = 1.0  # type: ignore[misc]
    t = TraceResult("t", "task", 2, {"m": r}, {}, None, None, "f:1")
    back = decode_trace(encode_trace(t))
    assert back.metrics["m"] == r.replace(details={"k": [1, 2], "s": [3]})  # tuples and sets become lists
    assert back.replace(metrics=t.metrics) == t
    assert msgspec.json.decode(encode_trace(t))["metrics"]["m"]["warning"] == "invalid_data"


def test_judge_accounting_is_written_for_judged_results_only():
    judged = MetricResult("j", 1.0, True, 0.7, "ok", judge_calls=2, tokens=0, cost_usd=None)
    plain = MetricResult("p", 1.0, True, 0.7, "ok")
    d = msgspec.json.decode(encode_trace(TraceResult("t", "t", None, {"j": judged, "p": plain})))["metrics"]
    assert d["j"] == {"score": 1.0, "passed": True, "threshold": 0.7, "warning": None, "reason": "ok",
                      "judge_calls": 2, "tokens": 0, "cost_usd": None}
    assert d["p"] == {"score": 1.0, "passed": True, "threshold": 0.7, "warning": None, "reason": "ok"}


def test_the_default_set_version_survives_a_round_trip():
    """RunRecord.default_set holds DEFAULT_SET_VERSION (an int); typed str it read back as None."""
    from assay.metrics._defaults import DEFAULT_SET_VERSION
    from assay.model import RunResult

    import assay

    result = assay.evaluate([{"id": "a", "turns": [{"input": "hi", "output": "hello"}]}])
    assert result.run.default_set == DEFAULT_SET_VERSION
    back = RunResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back.run.default_set == DEFAULT_SET_VERSION and "default_set" not in back.run.other
