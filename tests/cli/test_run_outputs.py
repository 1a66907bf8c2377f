"""``assay run -o``: the format follows the suffix (html and txt too), ``-f`` may not contradict it, several
outputs in one run are all checked before scoring and written together, and the table is still shown."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from tests.support.cli import cli_env, run_pipe
from tests.support.judge_server import JudgeServer, obj

GOOD = {"evidence": [], "reasoning": "on topic", "score": 5}


def traces(tmp_path: Path, n: int = 4) -> Path:
    """``n`` traces; the odd ones call the wrong tool, so they fail tool_selection_accuracy."""
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps({"id": f"t{i}", "turns": [{"input": "q", "output": "a", "tool_calls": [
        {"name": "search" if i % 2 == 0 else "wrong"}]}], "expected": {"tool_calls": [{"name": "search"}]}}) + "\n"
        for i in range(n)))
    return p


def invoke(*args: str):
    return CliRunner().invoke(main, ["run", *args], catch_exceptions=False)


@pytest.mark.parametrize(("name", "start"), [("r.html", "<!DOCTYPE html>"), ("r.HTM", "<!DOCTYPE html>"),
                                             ("r.txt", "assay results")])
def test_html_and_txt_follow_the_suffix(tmp_path, name, start):
    out = tmp_path / name
    r = invoke(str(traces(tmp_path)), "-m", "tool_selection_accuracy", "--no-store", "-o", str(out))
    assert r.exit_code == 1, r.output
    text = out.read_text()
    assert text.startswith(start), text[:60]
    if name == "r.txt":  # the table as plain text: no escape codes, the failed list included
        assert "\x1b[" not in text and "2 trace(s) failed" in text and "t1" in text
    else:
        assert "t1" in text and "tool_selection_accuracy" in text


def test_an_unknown_suffix_takes_the_format_from_f(tmp_path):
    out = tmp_path / "results.dat"
    r = invoke(str(traces(tmp_path)), "-m", "tool_selection_accuracy", "--no-store", "-f", "csv", "-o", str(out))
    assert r.exit_code == 1, r.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [row["trace_id"] for row in rows] == ["t0", "t1", "t2", "t3"]


@pytest.mark.parametrize(("args", "message"), [
    (["-f", "csv", "-o", "{d}/r.json"], "Error: -f csv contradicts -o '{d}/r.json': a .json file gets json; "
                                        "drop -f, or give the file a suffix that names csv"),
    (["-f", "json", "-o", "{d}/r.html"], "Error: -f json contradicts -o '{d}/r.html': a .html file gets html; "
                                         "drop -f, or give the file a suffix that names json"),
    (["-o", "{d}/r.json", "-o", "{d}/./r.json"], "Error: -o '{d}/./r.json': the same file is already an output "
                                                 "(-o {d}/r.json); give each output its own file"),
    (["-o", "{d}/r.html", "--html", "{d}/r.html"], "Error: --html '{d}/r.html': the same file is already an output "
                                                   "(-o {d}/r.html); give each output its own file"),
    (["-f", "html"], "Error: -f html writes a file: give -o report.html (or --html report.html)"),
    (["-o", "{d}/ok.json", "-o", "{d}/nodir/r.html"], "Error: -o '{d}/nodir/r.html': directory '{d}/nodir' "
                                                      "does not exist"),
], ids=["f-vs-json", "f-vs-html", "same-file", "same-as-html", "html-to-stdout", "second-path-bad"])
def test_bad_outputs_fail_before_any_judge_call_and_write_nothing(tmp_path, args, message):
    d = str(tmp_path)
    with JudgeServer(lambda req: obj(GOOD)) as server:
        r = run_pipe(["run", str(traces(tmp_path)), "-m", "answer_relevance", "--no-cache",
                      "--judge", f"openai-compatible:scripted@{server.url}", *(a.format(d=d) for a in args)],
                     cli_env(tmp_path))
        assert server.requests == []
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [message.format(d=d)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]  # no output, no store, no temporary file


def test_several_outputs_in_one_run_hold_the_same_results(tmp_path):
    out = {s: tmp_path / f"r.{s}" for s in ("jsonl", "json", "csv", "xml", "html")}
    r = invoke(str(traces(tmp_path)), "-m", "tool_selection_accuracy", "--no-store", "--no-progress",
               *[x for p in out.values() for x in ("-o", str(p))])
    assert r.exit_code == 1, r.output
    lines = [json.loads(line) for line in out["jsonl"].read_text().splitlines()]
    assert [x["id"] for x in lines[:-1]] == ["t0", "t1", "t2", "t3"]  # then the summary record
    whole = json.loads(out["json"].read_text())
    assert [t["id"] for t in whole["traces"]] == ["t0", "t1", "t2", "t3"] and whole["run"]["n_failed"] == 2
    assert [row["passed"] for row in csv.DictReader(io.StringIO(out["csv"].read_text()))] == [
        "true", "false", "true", "false"]
    assert 'failures="2"' in out["xml"].read_text()
    page = out["html"].read_text()
    assert page.startswith("<!DOCTYPE html>") and "t3" in page
    assert "2 trace(s) failed" in r.stdout  # the table is shown as well
    assert r.stderr.strip().splitlines()[-1] == "; ".join(
        [f"jsonl results written to {out['jsonl']}", f"json results written to {out['json']}",
         f"csv results written to {out['csv']}", f"junit results written to {out['xml']}",
         f"report written to {out['html']}"])


def test_a_writer_crash_leaves_every_previous_output_intact(tmp_path, monkeypatch):
    jsonl, csv_out = tmp_path / "r.jsonl", tmp_path / "r.csv"
    jsonl.write_text("previous jsonl\n")
    csv_out.write_text("previous csv\n")

    def crash(result, dims):
        raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")

    import assay.report as report

    monkeypatch.setattr(report, "csv_rows", crash)  # the CLI imports the writer from the package when it writes
    r = CliRunner().invoke(main, ["run", str(traces(tmp_path)), "--no-store", "-m", "tool_selection_accuracy",
                                  "-o", str(jsonl), "-o", str(csv_out)])
    assert r.exit_code == 3 and "internal error: UnicodeEncodeError" in r.stderr
    assert (jsonl.read_text(), csv_out.read_text()) == ("previous jsonl\n", "previous csv\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "r.csv", "r.jsonl"]  # no temporary file left


def test_quiet_prints_only_the_one_line_count(tmp_path):
    out = tmp_path / "r.json"
    r = invoke(str(traces(tmp_path)), "-m", "tool_selection_accuracy", "--no-store", "-q", "-o", str(out))
    assert r.exit_code == 1 and r.stdout == ""
    assert "4 traces: 2 passed, 2 failed" in r.stderr and "trace(s) failed" not in r.stderr
    assert json.loads(out.read_text())["run"]["n_failed"] == 2
    r = invoke(str(traces(tmp_path)), "-m", "tool_selection_accuracy", "--no-store", "-q")
    assert r.exit_code == 1 and r.stdout == "" and "4 traces: 2 passed, 2 failed" in r.stderr


def test_csv_cells_are_never_formulas_and_a_cr_in_a_field_stays_in_its_row(tmp_path):
    ids = ["=1+1", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A2)", "\t=tab", "\r=cr", "line\rbreak", "two\nlines",
           "plain", "=HYPERLINK(\"http://x\")"]
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps({"id": i, "turns": [{"input": "q", "output": "a", "tool_calls": [{"name": "x"}]}],
                                     "expected": {"tool_calls": [{"name": "search"}]}}) + "\n" for i in ids))
    out = tmp_path / "r.csv"
    r = invoke(str(p), "-m", "tool_selection_accuracy", "--no-store", "-o", str(out))
    assert r.exit_code == 1, r.output
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0][0] == "trace_id" and len(rows) == 1 + len(ids)  # 10 records, 10 rows: no CR split a row
    cells = [cell for row in rows[1:] for cell in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert [row[0] for row in rows[1:]] == [("'" + i if i[0] in "=+-@\t\r" else i) for i in ids]  # nothing lost


def test_csv_streams_and_keeps_no_results_in_memory(tmp_path, monkeypatch):
    from assay.engine import Evaluation

    kept = []
    real = Evaluation.run

    def run(self, *args, **kwargs):
        kept.append(kwargs.get("keep_traces"))
        return real(self, *args, **kwargs)
    monkeypatch.setattr(Evaluation, "run", run)
    out = tmp_path / "r.csv"
    r = CliRunner().invoke(main, ["run", str(traces(tmp_path)), "-m", "tool_selection_accuracy", "--no-store",
                                  "-f", "csv"], catch_exceptions=False)
    assert kept == [False] and r.stdout.startswith("trace_id,") and len(r.stdout.splitlines()) == 5
    r = invoke(str(traces(tmp_path)), "-m", "tool_selection_accuracy", "--no-store", "-o", str(out))
    assert kept == [False, False] and len(out.read_text().splitlines()) == 5


def test_a_dry_run_leaves_an_existing_results_file_and_report_untouched(tmp_path):
    out, html = tmp_path / "results.json", tmp_path / "report.html"
    out.write_text('{"previous": "results"}\n')
    with JudgeServer(lambda req: obj(GOOD)) as server:
        r = run_pipe(["run", str(traces(tmp_path)), "-m", "answer_relevance", "--judge",
                      f"openai-compatible:m@{server.url}", "--dry-run", "--no-cache", "-o", str(out),
                      "--html", str(html)], cli_env(tmp_path))
        assert len(server.requests) == 0
    assert r.returncode == 0, r.stderr
    assert out.read_text() == '{"previous": "results"}\n' and not html.exists()
    assert r.stdout.startswith("dry run: nothing was sent") and f"dry run: {out}, {html} not written" in r.stderr
    assert "results written" not in r.stderr and sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == \
        ["in.jsonl", "results.json"]


def test_quiet_is_exactly_one_line_with_a_judge_a_store_and_outputs(tmp_path):
    out, store = tmp_path / "r.json", tmp_path / "runs.sqlite3"
    with JudgeServer(lambda req: obj(GOOD)) as server:
        r = run_pipe(["run", str(traces(tmp_path)), "-m", "answer_relevance", "-m", "tool_selection_accuracy",
                      "--judge", f"openai-compatible:m@{server.url}", "--no-cache", "--store", str(store),
                      "-q", "-o", str(out)], cli_env(tmp_path))
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines() == ["4 traces: 2 passed, 2 failed, 0 unscored; 0 input records skipped"]
    assert json.loads(out.read_text())["run"]["n_failed"] == 2 and store.exists()  # all still written


def test_quiet_says_why_a_run_could_not_be_evaluated_on_its_one_line(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    r = run_pipe(["run", str(empty), "-m", "tool_selection_accuracy", "--no-store", "-q"], cli_env(tmp_path))
    assert r.returncode == 3 and r.stdout == ""
    assert r.stderr.splitlines() == ["0 traces: 0 passed, 0 failed, 0 unscored; 0 input records skipped; "
                                     "could not evaluate: no traces in the input"]


@pytest.mark.parametrize("flag", ["-o", "--html"])
def test_an_output_that_is_an_input_is_refused_before_anything_is_read(tmp_path, flag):
    """``assay run in.jsonl -o in.jsonl`` replaced the traces with their results; so did ``--html`` through a
    link to the input. Now the run stops first (exit 2) and the input is as it was, by whatever name."""
    src = traces(tmp_path)
    before = src.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(src)
    for given, out in ((src, src), (link, src), (src, tmp_path / "." / "in.jsonl")):
        r = invoke(str(given), "-m", "tool_selection_accuracy", "--no-store", flag, str(out))
        assert r.exit_code == 2, r.output
        assert f"{flag} {str(out)!r} is a file this command already uses" in r.output
        assert src.read_bytes() == before


def test_evaluate_refuses_an_output_that_is_its_input(tmp_path):
    import assay
    from assay.errors import ConfigError

    src = traces(tmp_path)
    before = src.read_bytes()
    with pytest.raises(ConfigError, match="is a file this command already uses"):
        assay.evaluate(str(src), ["tool_selection_accuracy"], outputs=[str(src)])
    assert src.read_bytes() == before


def test_report_and_run_refuse_to_write_over_a_results_file_or_the_run_store(tmp_path):
    """``assay report res.json -o res.json`` wrote the page over the results it was made from, and an ``-o``
    naming the run store would have written over every stored run: both stop (exit 2), nothing changed."""
    src = traces(tmp_path)
    res, store = tmp_path / "res.json", tmp_path / "runs.sqlite3"
    assert invoke(str(src), "-m", "tool_selection_accuracy", "--store", str(store), "-o", str(res)).exit_code == 1
    kept = res.read_bytes()
    r = CliRunner().invoke(main, ["report", str(res), "-o", str(res)], catch_exceptions=False)
    assert r.exit_code == 2 and f"-o {str(res)!r} is a file this command already uses" in r.output
    r = CliRunner().invoke(main, ["report", "latest", "--store", str(store), "-o", str(store)], catch_exceptions=False)
    assert r.exit_code == 2 and "is a file this command already uses" in r.output
    r = invoke(str(src), "-m", "tool_selection_accuracy", "--store", str(store), "-o", str(store) + ".json")
    assert r.exit_code == 1  # (another file beside it is fine)
    r = invoke(str(src), "-m", "tool_selection_accuracy", "--store", str(store), "-f", "json", "-o", str(store))
    assert r.exit_code == 2 and "is a file this command already uses" in r.output
    assert res.read_bytes() == kept
