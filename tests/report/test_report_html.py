"""The HTML report without a browser: escaping, CSP, optional sections, evidence marks."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from report_data import COMPARISON, EXAMPLES, IMG, PASS_K, SCRIPT, QuotesOutput, hostile_run, run_with_traces

from assay.cli import main
from assay.report import render_report, write_report
from assay.report._charts import histogram
from assay.report._conversation import find_spans, highlight
from assay.report._html import Markup, esc, h, num
from assay.report._traces import select
from assay.store import load_run

ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "main", "footer", "header", "nav", "section", "h1",
                "h2", "h3", "p", "br", "a", "div", "span", "strong", "code", "pre", "q", "mark", "dl", "dt", "dd", "ul",
                "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "details", "summary", "figure", "figcaption",
                "label", "select", "option", "input", "button", "script", "svg", "rect", "line", "text",
                "circle", "polygon", "polyline", "h4", "del", "ins"}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


def parse_tags(page: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    parser = _Tags()
    parser.feed(page)
    return parser.tags


@pytest.fixture()
def hostile(tmp_path):
    return hostile_run(tmp_path)


def test_every_text_from_the_data_is_escaped(hostile):
    result, traces = hostile
    result.statistics["pass_k"] = PASS_K
    page = render_report(result, traces=traces, comparison=COMPARISON)
    assert page.count("<script") == 1 and page.count("</script>") == 1  # the report's own
    assert page.count("<style") == 1 and "<img" not in page and "<svg onload" not in page
    assert "window.__pwned=1</script>" not in page.replace("&lt;/script&gt;", "")
    assert html.escape(SCRIPT) in page and html.escape(IMG) in page
    tags = parse_tags(page)
    assert not [(t, a) for t, attrs in tags for a, _ in attrs if a.startswith("on")], "an event handler got in"
    assert {t for t, _ in tags} <= ALLOWED_TAGS
    body = page.split("<body>", 1)[1]
    assert "ValueError: boom &lt;script&gt;" in body  # the raising metric's error is shown, as text


def test_csp_blocks_the_network_and_nonces_match(hostile):
    result, traces = hostile
    page = render_report(result, traces=traces)
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page).group(1)
    assert "default-src &#x27;none&#x27;" in csp and "connect-src &#x27;none&#x27;" in csp
    nonce = re.search(r"script-src &#x27;nonce-([^&]+)&#x27;", csp).group(1)
    assert f'<script nonce="{nonce}">' in page and f'<style nonce="{nonce}">' in page
    assert render_report(result).split('nonce="')[1][:10] != nonce[:10]  # fresh per report


def test_the_page_references_nothing_outside_itself(tmp_path):
    result, traces = run_with_traces(EXAMPLES, ["tool_selection_accuracy", QuotesOutput()])
    page = render_report(result, traces=traces)
    for attr in re.findall(r'\s(?:src|href|action|srcset|xlink:href)="([^"]*)"', page):
        assert attr.startswith("#"), attr
    assert "url(" not in page and "@import" not in page and "@font-face" not in page
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg"}


def test_sections_render_only_when_their_data_is_there(hostile):
    result, traces = hostile
    plain = render_report(result, traces=traces)
    assert 'id="pass-k"' not in plain and 'id="comparison"' not in plain
    result.statistics["pass_k"] = [PASS_K, {**PASS_K, "label": "second", "pass_at_k_ci_low": None}]
    full = render_report(result, traces=traces, comparison=COMPARISON)
    bands = lambda cls: len(re.findall(f'<polygon [^>]*class="band {cls}', full))  # noqa: E731
    assert 'id="pass-k"' in full and bands("s1") == 1 and bands("s2") == 2
    assert "pass@k" in full and "0.970" in full and "[0.900, 0.995]" in full
    comp = full.split('id="comparison"', 1)[1].split("</section>", 1)[0]
    assert "-0.120" in comp and "[-0.200, -0.040]" in comp and "0.008" in comp and "regression" in comp
    assert "<strong>run-a</strong>" in comp and "<strong>run-b</strong>" in comp and "correction: holm" in comp
    assert render_report(result, comparison={"metrics": {}}).count('id="comparison"') == 0


def test_the_engines_trial_statistics_render_as_curves():
    result, _ = run_with_traces(EXAMPLES, ["tool_selection_accuracy"])
    trials = result.statistics["trials"]  # the example data has tasks with repeated trials
    page = render_report(result)
    section = page.split('id="pass-k"', 1)[1].split("</section>", 1)[0]
    assert "traces passing every threshold" in section and "tool_selection_accuracy passed" in section
    assert f"{trials['n_tasks']} tasks" in section
    first = trials["trace_passed"][0]
    assert f"{first['pass_at_k']:.3f}" in section
    assert section.count("<polyline") == 2 * (1 + len(trials["by_metric"]))


def test_evidence_quotes_are_marked_and_missing_ones_flagged(tmp_path):
    result, traces = run_with_traces(EXAMPLES, [QuotesOutput()])
    result.traces[0].metrics["quotes_output"].evidence.append("a sentence the agent never said")
    page = render_report(result, traces=traces)
    view = page.split('id="trace-1"', 1)[1].split("</details>\n", 1)[0]
    assert '<mark title="evidence: quotes_output" data-m="quotes_output">' in view
    assert "(not found in the trace)" in view


def test_traces_without_inputs_still_show_their_results(hostile):
    result, _ = hostile
    page = render_report(result)
    assert page.count("The input trace is not available") == len(result.traces)
    assert "the answer was" in page


def test_report_of_a_run_without_traces_has_summaries_only(hostile):
    result, _ = hostile
    result.traces = []
    page = render_report(result)
    assert 'id="metrics"' in page and 'id="traces"' not in page


def test_select_keeps_failed_traces_first_when_over_the_limit(tmp_path):
    result, _ = run_with_traces(EXAMPLES, ["tool_selection_accuracy"])
    shown, hidden = select(result.traces, 3)
    failed = [i for i, t in enumerate(result.traces) if t.passed is False]
    assert hidden == len(result.traces) - 3 and set(failed) <= set(shown) and shown == sorted(shown)
    page = render_report(result, max_traces=3)
    assert f"{hidden} more traces not shown" in page


@given(st.text(max_size=200), st.lists(st.text(min_size=1, max_size=12), max_size=4))
def test_highlight_keeps_the_text_and_only_adds_marks(text, quotes):
    marked = highlight(text, {q: ["m"] for q in quotes})
    assert html.unescape(re.sub(r"</?mark[^>]*>", "", marked)) == text
    assert "<" not in re.sub(r"</?mark[^>]*>", "", marked)


def test_find_spans_matches_case_and_whitespace_insensitively_and_merges():
    text = "The refund of $49.90 was\nstarted.  Reference RF-1."
    spans = find_spans(text, {"refund of $49.90 was started.": ["a"], "RF-1": ["b"], "of $49": ["c"]})
    assert [(text[a:b], q) for a, b, q in spans] == [
        ("refund of $49.90 was\nstarted.", ["refund of $49.90 was started.", "of $49"]), ("RF-1", ["RF-1"])]


def test_html_helpers_escape_and_reject_garbage_numbers():
    assert h("a", "<b>", href='x" onclick="y') == '<a href="x&quot; onclick=&quot;y">&lt;b&gt;</a>'
    assert h("td", Markup("<i>ok</i>"), data_m="n", hidden=True) == '<td data-m="n" hidden><i>ok</i></td>'
    assert esc(None) == "" and esc(Markup("<i>")) == "<i>"
    assert [num(x) for x in (1, 0.5, True, "0.5", float("nan"), None)] == [1.0, 0.5, None, None, None, None]
    svg = histogram([0.1, "x", None, float("inf"), 1.0, 2.0, -1], label="<m>", threshold="bad", mean=None,
                    ci=["a", 1])
    assert svg.startswith("<svg") and "&lt;m&gt;" in svg and "4 scores" in svg


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_assay_report_from_a_results_file_and_from_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "runs.sqlite3"))
    res = tmp_path / "res.json"
    r = invoke("run", str(EXAMPLES), "-m", "tool_selection_accuracy", "-o", str(res), "--html",
               str(tmp_path / "direct.html"))
    assert r.exit_code == 1 and "report written to" in r.stderr
    direct = (tmp_path / "direct.html").read_text()
    assert "support-refund-0" in direct and "Turn 1" in direct
    out = tmp_path / "from-file.html"
    comp = tmp_path / "comp.json"
    comp.write_text(json.dumps(COMPARISON))
    r = invoke("report", str(res), "-o", str(out), "--comparison", str(comp), "--title", "Nightly <eval>")
    assert r.exit_code == 0, r.output
    page = out.read_text()
    assert "<title>Nightly &lt;eval&gt;</title>" in page and 'id="comparison"' in page and "Turn 1" in page
    run_id = load_run("latest").run["run_id"]
    r = invoke("report", run_id[:10], "-o", str(tmp_path / "stored.html"))
    assert r.exit_code == 0 and run_id in (tmp_path / "stored.html").read_text()
    r = invoke("report", "nope", "-o", str(tmp_path / "x.html"))
    assert r.exit_code == 2 and r.stderr.startswith("Error: no run 'nope'")
    r = invoke("report", str(res), "-o", str(out), "--comparison", str(tmp_path / "missing.json"))
    assert r.exit_code == 2 and "--comparison" in r.stderr


def test_write_report_creates_parent_dirs(tmp_path, hostile):
    result, traces = hostile
    path = write_report(tmp_path / "a" / "b" / "r.html", result, traces=traces)
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_assay_report_with_a_baseline_computes_the_comparison(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", "off")
    rows_a = [{"id": f"t{i}", "task_id": f"k{i}", "turns": [{"input": "q", "output": "a",
                                                             "tool_calls": [{"name": "search"}]}],
               "expected": {"tool_calls": [{"name": "search"}]}} for i in range(30)]
    rows_b = [{**r, "turns": [{"input": "q", "output": "a", "tool_calls": [{"name": "other"}]}]} if i % 2 else r
              for i, r in enumerate(rows_a)]
    for name, rows in (("a", rows_a), ("b", rows_b)):
        (tmp_path / f"{name}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        invoke("run", str(tmp_path / f"{name}.jsonl"), "-m", "tool_selection_accuracy", "-o", str(tmp_path / f"{name}.json"))
    out = tmp_path / "cmp.html"
    r = invoke("report", str(tmp_path / "b.json"), "--baseline", str(tmp_path / "a.json"), "-o", str(out))
    assert r.exit_code == 0, r.output
    comp = out.read_text().split('id="comparison"', 1)[1].split("</section>", 1)[0]
    assert "tool_selection_accuracy" in comp and "-0.500" in comp and "regression" in comp
    r = invoke("report", str(tmp_path / "b.json"), "--baseline", "x", "--comparison", "y", "-o", str(out))
    assert r.exit_code == 2 and "not both" in r.stderr
