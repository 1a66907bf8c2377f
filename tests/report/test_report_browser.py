"""The report in a real headless Chromium: offline, no console errors, working filter, inert XSS."""

from __future__ import annotations

import struct

import pytest
from report_data import COMPARISON, EXAMPLES, IMG, PASS_K, SCRIPT, QuotesOutput, hostile_run, run_with_traces, wait_until

from assay.report import write_report
from assay.report.screenshot import screenshot

pytestmark = pytest.mark.browser


@pytest.fixture()
def example_report(tmp_path):
    result, traces = run_with_traces(EXAMPLES, ["tool_selection_accuracy", QuotesOutput()])
    result.statistics["pass_k"] = PASS_K
    return write_report(tmp_path / "example.html", result, traces=traces, comparison=COMPARISON), result


def visible_ids(page) -> list[str]:
    return page.eval_on_selector_all("#trace-table tbody tr:not([hidden]) a.trace-link", "els => els.map(e => e.textContent)")


def test_example_report_loads_offline_without_errors(open_page, example_report):
    path, result = example_report
    p = open_page()
    page = p.open(path)
    assert page.title().startswith("assay report")
    assert p.console_errors == []
    assert p.requests == [path.resolve().as_uri()], "the report fetched something besides itself"
    assert page.evaluate("window.__csp") == [], "the page's own style or script broke its CSP"
    assert page.inner_text("#f-count") == f"{len(result.traces)} of {len(result.traces)} traces"  # the script ran
    assert page.locator("svg.chart").count() >= 5
    curves = 1 + len(result.statistics["trials"]["by_metric"]) + 1  # trace_passed, per metric, PASS_K
    assert page.locator("#pass-k polyline.series").count() == 2 * curves
    assert page.locator("#comparison tbody tr").count() == 2
    # computed style proves the nonced stylesheet applied
    assert page.eval_on_selector("details.trace", "e => getComputedStyle(e).borderLeftStyle") == "solid"


def test_trace_filter_hides_and_shows_rows(open_page, example_report):
    path, result = example_report
    page = open_page().open(path)
    everything = [t.id for t in result.traces]
    assert visible_ids(page) == everything
    page.select_option("#f-status", "fail")
    assert visible_ids(page) == [t.id for t in result.traces if t.passed is False]
    page.select_option("#f-metric", "tool_selection_accuracy")
    failed_tsa = [t.id for t in result.traces if t.metrics["tool_selection_accuracy"].passed is False]
    assert visible_ids(page) == failed_tsa == ["support-refund-2", "weather-paris-2"]
    page.select_option("#f-status", "null")
    assert visible_ids(page) == [t.id for t in result.traces if t.metrics["tool_selection_accuracy"].score is None]
    page.select_option("#f-status", "")
    page.fill("#f-text", "weather")
    assert visible_ids(page) == [i for i in everything if "weather" in i]
    assert page.inner_text("#f-count") == "4 of 12 traces"
    page.fill("#f-text", "")
    page.select_option("#f-metric", "")
    assert visible_ids(page) == everything


def test_clicking_a_trace_opens_its_conversation(open_page, example_report):
    path, _ = example_report
    page = open_page().open(path)
    view = page.locator("#trace-3")
    assert view.evaluate("d => d.open") is False
    page.click("#trace-table a[href='#trace-3']")
    wait_until(page, "document.getElementById('trace-3').open")
    text = view.inner_text()
    assert "support-refund-2" in text and "lookup_order" in text and "USER" in text.upper()
    assert view.locator("mark").count() >= 1


def test_xss_payloads_stay_inert_and_visible_as_text(open_page, tmp_path):
    result, traces = hostile_run(tmp_path)
    result.statistics["pass_k"] = PASS_K
    path = write_report(tmp_path / "hostile.html", result, traces=traces, comparison=COMPARISON)
    p = open_page()
    page = p.open(path)
    page.click("#expand-all")
    page.wait_for_timeout(200)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img").count() == 0 and page.locator("script").count() == 1
    body = page.inner_text("body")
    assert SCRIPT in body and IMG in body and "ValueError: boom <script>" in body
    assert p.requests == [path.resolve().as_uri()]  # no <img src=x> fetch either
    assert p.console_errors == []


def test_screenshot_of_the_example_report(example_report, tmp_path, chromium):
    path, _ = example_report
    png = screenshot(path, tmp_path / "report.png", width=1200)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width == 1200 and height > 2000  # full page
