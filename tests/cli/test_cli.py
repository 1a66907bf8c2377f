"""The ``assay`` command: outputs, exit statuses, bad input, config files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from assay.cli import main

EXAMPLES = Path(__file__).parents[2] / "examples" / "traces.jsonl"


def good(i: int, score_ok: bool = True) -> dict:
    called = "search" if score_ok else "weather"
    return {"id": f"t{i}", "turns": [{"input": "q", "output": "a", "tool_calls": [{"name": called}]}],
            "expected": {"tool_calls": [{"name": "search"}]}}


def write(tmp_path: Path, rows: list, name: str = "traces.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return p


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_exit_0_when_all_pass_and_json_shape(tmp_path):
    p = write(tmp_path, [good(1), good(2)])
    r = invoke("run", str(p), "-m", "tool_selection_accuracy", "-f", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert [t["id"] for t in out["traces"]] == ["t1", "t2"]
    m = out["traces"][0]["metrics"]["tool_selection_accuracy"]
    assert m["score"] == 1.0 and m["passed"] is True and m["warning"] is None
    s = out["summary"]["tool_selection_accuracy"]
    assert (s["n"], s["n_null"], s["n_errored"], s["mean"], s["pass_rate"]) == (2, 0, 0, 1.0, 1.0)
    assert out["run"]["n_traces"] == 2 and out["run"]["metrics"][0]["params"] == {"threshold": 0.7}


def test_exit_1_when_a_threshold_fails(tmp_path):
    p = write(tmp_path, [good(1), good(2, score_ok=False)])
    r = invoke("run", str(p), "-m", "tool_selection_accuracy")
    assert r.exit_code == 1
    assert "t2" in r.stdout and "1 trace(s) failed" in r.stdout


def test_bad_lines_are_reported_good_lines_scored_exit_2(tmp_path):
    rows = [good(1), "{not json", good(2),
            {"id": "x", "turns": [{}, {}, {"tool_calls": [{"name": "t", "arguments": "city=Paris"}]}]}]
    p = write(tmp_path, rows)
    out = tmp_path / "res.json"
    r = invoke("run", str(p), "-m", "tool_selection_accuracy", "-o", str(out))
    assert r.exit_code == 2
    assert f"{p}:2: not valid JSON" in r.stderr
    assert f"{p}:4: turns[2].tool_calls[0].arguments: expected an object, got string" in r.stderr
    res = json.loads(out.read_text())
    assert [t["id"] for t in res["traces"]] == ["t1", "t2"]
    assert [(i["line"], i["field"]) for i in res["input_issues"]] == [(2, None), (4, "turns[2].tool_calls[0].arguments")]


def test_a_file_of_only_bad_lines_names_each_line_and_exits_2(tmp_path):
    """Nothing readable: every line is named (not 'cannot tell the input format') and the run says
    that no trace could be read instead of 'the others were scored'."""
    p = write(tmp_path, ["{not json", '"just a string"'])
    r = invoke("run", str(p), "-m", "tool_selection_accuracy", "--no-store")
    assert r.exit_code == 2
    assert f"{p}:1: not valid JSON" in r.stderr and f"{p}:2: expected a trace object, got string" in r.stderr
    assert "2 input record(s) skipped; no trace could be read." in r.stderr
    assert "the others were scored" not in r.stderr


def test_strict_stops_at_first_bad_line(tmp_path):
    p = write(tmp_path, [good(1), "[]", good(2)])
    r = invoke("run", str(p), "-m", "tool_selection_accuracy", "--strict", "-f", "json")
    assert r.exit_code == 2
    assert f"Error: {p}:2: expected a trace object, got array" in r.stderr
    assert r.stdout == ""


def test_jsonl_streams_one_line_per_trace_then_summary(tmp_path):
    p = write(tmp_path, [good(i) for i in range(5)])
    out = tmp_path / "r.jsonl"
    r = invoke("run", str(p), "-m", "tool_selection_accuracy", "-f", "jsonl", "-o", str(out))
    assert r.exit_code == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines[:-1]] == [f"t{i}" for i in range(5)]
    assert lines[-1]["summary_record"] is True and lines[-1]["summary"]["tool_selection_accuracy"]["n"] == 5


def test_usage_errors_exit_2_with_one_line(tmp_path):
    p = write(tmp_path, [good(1)])
    r = invoke("run", str(p), "-m", "tool_selection_acuracy")
    assert r.exit_code == 2 and r.stderr.startswith("Error: unknown metric 'tool_selection_acuracy'")
    assert "Did you mean 'tool_selection_accuracy'" in r.stderr
    r = invoke("run", str(tmp_path / "missing.jsonl"))
    assert r.exit_code == 2 and "missing.jsonl: no such file" in r.stderr


def test_config_file_sets_metrics_and_weights(tmp_path):
    p = write(tmp_path, [good(1)])
    cfg = tmp_path / "assay.toml"
    cfg.write_text('metrics = ["tool_selection_accuracy:threshold=0.9"]\n[weights]\ntool_calling = 0.5\n')
    r = invoke("run", str(p), "--config", str(cfg), "-f", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["run"]["metrics"][0]["params"]["threshold"] == 0.9
    assert out["run"]["dimension_weights"] == {"tool_calling": 0.5}
    cfg.write_text('metricz = ["x"]\n')
    r = invoke("run", str(p), "--config", str(cfg))
    assert r.exit_code == 2 and "'metricz'. Did you mean 'metric', 'metrics'?" in r.stderr


def test_validate_and_metrics_commands(tmp_path):
    p = write(tmp_path, [good(1), "3"])
    r = invoke("validate", str(p))
    assert r.exit_code == 2 and "1 valid trace(s), 1 invalid record(s)" in r.stdout
    r = invoke("metrics", "--json")
    names = {m["name"] for m in json.loads(r.stdout)}
    assert "tool_selection_accuracy" in names


def test_validate_reports_every_file_when_some_cannot_be_read(tmp_path):
    """`assay validate *.jsonl` stopped at the first file it could not read, saying nothing of the others."""
    (tmp_path / "a.csv").write_text("id,input\nt1,hi\n")
    (tmp_path / "b.jsonl").write_text('{"id": "t1", "input": "hi", "output": "yo"}\n')
    ok = write(tmp_path, [good(1), good(2)], name="ok.jsonl")
    r = invoke("validate", str(tmp_path / "a.csv"), str(ok), str(tmp_path / "missing.jsonl"), str(tmp_path / "b.jsonl"))
    assert r.exit_code == 2
    assert f"{ok}: read as assay (2 traces)" in r.stdout
    assert "2 valid trace(s), 0 invalid record(s), 3 file(s) not readable as traces" in r.stdout
    said = r.stderr.splitlines()
    assert [line.split(": ", 1)[0] for line in said] == [str(tmp_path / n) for n in ("a.csv", "missing.jsonl",
                                                                                      "b.jsonl")], said
    assert "looks like CSV" in said[0] and said[1].endswith("no such file") and "'input' and 'output'" in said[2]
    r = invoke("validate", str(ok), "--input-format", "nope")
    assert r.exit_code == 2 and r.stderr.count("unknown input format 'nope'") == 1


def test_a_run_that_read_nothing_in_the_named_format_says_what_detection_reads(tmp_path):
    """`--input-format otel` on assay's own traces: every record skipped, and the run did not say why that was."""
    ok = write(tmp_path, [good(1), good(2)])
    r = invoke("run", str(ok), "-m", "tool_selection_accuracy", "--input-format", "otel", "--no-store")
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines()[-1] == f"{ok} reads as assay when its format is detected: drop --input-format otel"
    r = invoke("run", str(ok), "-m", "tool_selection_accuracy", "--input-format", "assay", "--no-store")
    assert "when its format is detected" not in r.stderr


def test_installed_command_runs_the_example_data():
    r = subprocess.run([sys.executable, "-m", "assay", "run", str(EXAMPLES), "-f", "json"], capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr
    out = json.loads(r.stdout)
    assert out["run"]["n_traces"] == 12 and out["run"]["n_input_issues"] == 0


def test_readme_catalog_lists_every_registered_metric():
    from assay.metrics._base import REGISTRY

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    missing = [n for n in REGISTRY.names() if f"| `{n}`" not in readme]
    assert missing == [], f"README's metric catalog lacks {missing}: regenerate with `assay metrics --markdown`"


def test_metrics_name_prints_the_metric_documentation():
    r = invoke("metrics", "parameter_quality")
    assert r.exit_code == 0
    assert r.stdout.startswith("parameter_quality (tool_calling, per trace, version 1)\n")
    assert "  threshold = 0.7" in r.stdout and "Differs from\nUAEF" in r.stdout
    r = invoke("metrics", "paramter_quality")
    assert r.exit_code == 2 and "Did you mean 'parameter_quality'" in r.stderr


def test_no_intervals_drops_intervals_and_statistics(tmp_path):
    p = write(tmp_path, [good(i) for i in range(4)])
    r = invoke("run", str(p), "-m", "tool_selection_accuracy", "-f", "json", "--no-intervals", "--no-store")
    out = json.loads(r.stdout)
    assert r.exit_code == 0 and out["summary"]["tool_selection_accuracy"]["mean_ci"] is None
    assert out["statistics"] == {}
    r = invoke("run", str(p), "-m", "tool_selection_accuracy", "-f", "json", "--no-store")
    assert json.loads(r.stdout)["statistics"]["interval_level"] == 0.95


def test_no_store_help_says_the_judge_cache_is_apart():
    text = " ".join(invoke("run", "--help").stdout.split()).replace("--no- ", "--no-")  # click wraps at hyphens
    assert "--no-store Do not record this run in the run store. The judge cache is apart and still kept: add " \
           "--no-cache to write neither." in text
    assert "--no-cache Do not read or write the judge cache, which --no-store leaves on." in text
