"""``--format junit`` and ``--format csv``: one case (row) per trace x metric; exit statuses unchanged."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner
from report_data import AlwaysRaises, QuotesOutput, hostile_run, run_with_traces, write_jsonl

from assay.cli import main
from assay.report import to_csv, to_junit
from assay.report._ci import CSV_COLUMNS


@pytest.fixture(autouse=True)
def _no_store(monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", "off")


def good(i: int, ok: bool = True) -> dict:
    return {"id": f"t{i}", "turns": [{"input": "q", "output": "a", "tool_calls": [{"name": "search" if ok else "x"}]}],
            "expected": {"tool_calls": [{"name": "search"}]}}


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def cases(xml: str) -> dict[tuple[str, str], ET.Element]:
    root = ET.fromstring(xml)
    return {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}


def test_junit_failure_error_skipped_and_counts(tmp_path):
    rows = [good(1), good(2, ok=False), {"id": "t3", "turns": [{"input": "q", "output": "a"}]}]
    result, _ = run_with_traces(write_jsonl(tmp_path / "in.jsonl", rows), ["tool_selection_accuracy", AlwaysRaises()])
    xml = to_junit(result)
    root = ET.fromstring(xml)
    # 6 trace x metric cases plus 2 trace x dimension cases (t3 has no scored dimension)
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("8", "2", "3", "1")
    c = cases(xml)
    assert len(c) == 8 and list(c[("assay.tool_selection_accuracy", "t1")]) == []
    assert list(c[("assay.dimension.tool_calling", "t1")]) == []
    dim_failure = c[("assay.dimension.tool_calling", "t2")].find("failure")
    assert dim_failure.get("message") == "dimension tool_calling scored 0.000 < threshold 0.70 (mean of 1 metric)"
    failure = c[("assay.tool_selection_accuracy", "t2")].find("failure")
    assert failure.get("message").startswith("tool_selection_accuracy scored 0.000 < threshold 0.70: 0 matched")
    assert c[("assay.tool_selection_accuracy", "t3")].find("skipped").get("message").startswith("no score (missing_data)")
    error = c[("assay.always_raises", "t1")].find("error")
    assert error.get("type") == "metric_error" and "ValueError: boom" in error.get("message")
    assert c[("assay.tool_selection_accuracy", "t2")].get("file").endswith("in.jsonl:2")


def test_junit_is_well_formed_with_hostile_text_and_control_characters(tmp_path):
    result, _ = hostile_run(tmp_path)
    metrics = result.traces[0].metrics  # results are frozen: file a changed copy
    metrics["quotes_output"] = metrics["quotes_output"].replace(reason=metrics["quotes_output"].reason + " \x00\x07\x1b end")
    xml = to_junit(result)
    root = ET.fromstring(xml)  # parses: markup escaped, control characters dropped
    names = {c.get("name") for c in root.iter("testcase")}
    assert 'xss-img"><img src=x onerror=window.__pwned=1>' in names  # escaped in the XML, exact when parsed
    msg = next(f.get("message") for f in root.iter("failure") if "quotes_output" in f.get("message"))
    assert msg.endswith(" end") and "\x00" not in msg


def test_csv_has_one_row_per_trace_and_metric(tmp_path):
    result, _ = run_with_traces(write_jsonl(tmp_path / "in.jsonl", [good(1), good(2, ok=False)]),
                                ["tool_selection_accuracy", QuotesOutput()])
    rows = list(csv.DictReader(io.StringIO(to_csv(result))))
    assert len(rows) == 4 and tuple(rows[0]) == CSV_COLUMNS
    r = next(x for x in rows if x["trace_id"] == "t2" and x["metric"] == "tool_selection_accuracy")
    assert (r["score"], r["threshold"], r["passed"], r["status"], r["dimension"]) == ("0.0", "0.7", "false", "failed",
                                                                                       "tool_calling")


@pytest.mark.parametrize("fmt", ["junit", "csv"])
def test_cli_formats_keep_exit_statuses(tmp_path, fmt):
    ok = write_jsonl(tmp_path / "ok.jsonl", [good(1), good(2)])
    bad = write_jsonl(tmp_path / "bad.jsonl", [good(1), good(2, ok=False)])
    broken = write_jsonl(tmp_path / "broken.jsonl", [good(1), "{nope"])
    r = invoke("run", str(ok), "-m", "tool_selection_accuracy", "-f", fmt)
    assert r.exit_code == 0 and ("<testsuites" in r.stdout if fmt == "junit" else r.stdout.startswith("trace_id,"))
    out = tmp_path / f"out.{fmt}"
    r = invoke("run", str(bad), "-m", "tool_selection_accuracy", "-f", fmt, "-o", str(out))
    assert r.exit_code == 1 and "1 trace(s) failed" in r.stdout  # the table is still shown; -q keeps stdout empty
    r = invoke("run", str(bad), "-m", "tool_selection_accuracy", "-f", fmt, "-o", str(out), "-q")
    assert r.exit_code == 1 and r.stdout == "" and "1 failed" in r.stderr
    text = out.read_text()
    assert ('failures="1"' in text) if fmt == "junit" else (text.count("\n") == 3 and ",failed," in text)
    r = invoke("run", str(broken), "-m", "tool_selection_accuracy", "-f", fmt)
    assert r.exit_code == 2
    if fmt == "junit":
        suite = ET.fromstring(r.stdout).find("testsuite[@name='assay.inputs']")
        assert suite.get("errors") == "1" and "not valid JSON" in suite.find("testcase/error").get("message")


def test_json_output_now_names_inputs_with_hashes(tmp_path):
    ok = write_jsonl(tmp_path / "ok.jsonl", [good(1)])
    out = json.loads(invoke("run", str(ok), "-m", "tool_selection_accuracy", "-f", "json").stdout)
    (info,) = out["run"]["input_files"]
    assert info["path"] == str(ok) and len(info["sha256"]) == 64 and info["bytes"] == ok.stat().st_size
    assert "run_id" not in out["run"]  # the store is off in these tests


def test_a_score_just_under_its_threshold_never_reads_as_equal(tmp_path):
    from dataclasses import dataclass

    from assay.metrics import MetricContext, metric
    from assay.pytest_plugin import failures
    from assay.report import render_report

    @metric("almost", dimension="custom", register=False)
    @dataclass(frozen=True, kw_only=True)
    class Almost:
        threshold: float = 0.7

        def score(self, ctx: MetricContext):
            return ctx.result(0.6999, reason="close")

    result, _ = run_with_traces(write_jsonl(tmp_path / "in.jsonl", [good(1)]), [Almost()])
    failure = cases(to_junit(result))[("assay.almost", "t1")].find("failure")
    assert failure.get("message").startswith("almost scored 0.6999 < threshold 0.700: close")  # not 0.700 < 0.70
    assert any("almost scored 0.6999 < threshold 0.700" in p for p in failures(result))
    html = render_report(result)
    assert "0.6999</strong> &lt; 0.7000" in html and "0.70</strong> &lt; 0.70" not in html
