"""Finding why a trace failed, in Chromium: Failures section, tool-call diff, sorting, filtered views, widths.

Screenshots are written at 1400 and 900 px (to ``$ASSAY_SHOT_DIR`` when set, to look at them) and
every header on the page is checked for clipping at both widths.
"""

from __future__ import annotations

import msgspec
import os
import struct
from pathlib import Path

import pytest
from report_data import EXAMPLES, PASS_K, QuotesOutput, run_with_traces, wait_until

from assay.analysis._compare import compare_runs
from assay.metrics._base import REGISTRY
from assay.report import write_report

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The demo data under the default metric set, plus a baseline in which two verdicts differ."""
    defaults = [s.name for s in REGISTRY.specs() if s.default and not s.needs_judge]
    result, traces = run_with_traces(EXAMPLES, [*defaults, QuotesOutput()])
    result.statistics["pass_k"] = PASS_K
    flip = {"support-refund-2": True, "rag-warranty": False}  # baseline: refund-2 passed, warranty failed
    shift = {"latency_score": 0.2, "prompt_injection_detection": -0.3}  # the candidate got worse, then better

    def before(t):
        metrics = {n: msgspec.structs.replace(r, score=min(1.0, max(0.0, r.score + shift[n])))
                   if n in shift and r.score is not None else r for n, r in t.metrics.items()}
        return msgspec.structs.replace(t, passed=flip.get(t.id, t.passed), metrics=metrics)
    base = msgspec.structs.replace(result, traces=[before(t) for t in result.traces],
                               run={**result.run, "name": "baseline-v1"})
    result.run["name"] = "candidate-v2"
    comp = compare_runs(base, result)
    path = write_report(tmp_path_factory.mktemp("findings") / "r.html", result, traces=traces, comparison=comp,
                        baseline=base)
    return path, result


def _index(result, trace_id: str) -> int:
    return next(i for i, t in enumerate(result.traces) if t.id == trace_id) + 1


def test_failures_come_first_and_each_links_to_its_opened_view(open_page, example):
    path, result = example
    page = open_page().open(path)
    first = page.eval_on_selector("main", "m => [...m.children].find(e => e.tagName === 'SECTION').id")
    assert first == "failures"
    failed = [t.id for t in result.traces if t.passed is False]
    assert page.eval_on_selector_all("#failures a.failure-link", "a => a.map(e => e.textContent)") == failed
    refund = page.locator("#failures li.failure", has_text="support-refund-2").inner_text()
    assert "missing check_refund_policy" in refund
    assert 'issue_refund.amount: expected 49.9, got "49.90"' in refund
    assert "parameter_quality 0.44 < 0.70" in refund and "check_refund_policy: not called" in refund
    n = _index(result, "support-refund-2")
    assert page.evaluate(f"document.getElementById('trace-{n}').open") is False
    page.click("#failures a.failure-link:text-is('support-refund-2')")
    wait_until(page, f"document.getElementById('trace-{n}').open")
    box = page.locator(f"#trace-{n}").bounding_box()
    assert box is not None and 0 <= box["y"] < 50  # scrolled to it


def test_tool_call_diff_highlights_missing_calls_and_argument_values(open_page, example):
    path, result = example
    page = open_page().open(path)
    n = _index(result, "support-refund-2")
    page.evaluate(f"document.getElementById('trace-{n}').open = true")
    diff = page.locator(f"#trace-{n} table.tool-diff")
    kinds = diff.locator("tbody tr").evaluate_all("rs => rs.map(r => r.className)")
    assert kinds == ["call match same", "call missing bad", "call match bad"]
    assert diff.locator("tr.missing").inner_text().split() == ["missing", "check_refund_policy", "—"]
    amount = diff.locator("li.arg.differs")
    assert amount.locator("del").inner_text() == "49.9" and amount.locator("ins").inner_text() == '"49.90"'
    assert diff.locator("li.arg.missing del").inner_text() == '"late_delivery"'
    # highlighted: the changed value has its own colours, not the row's text colour
    colors = amount.evaluate("li => [getComputedStyle(li.querySelector('del')).backgroundColor,"
                             " getComputedStyle(li.querySelector('ins')).backgroundColor]")
    assert colors[0] != colors[1] and "rgba(0, 0, 0, 0)" not in colors
    weather = _index(result, "weather-paris-2")
    page.evaluate(f"document.getElementById('trace-{weather}').open = true")
    turn_diff = page.locator(f"#trace-{weather} .turn table.tool-diff tbody tr")
    assert turn_diff.evaluate_all("rs => rs.map(r => r.className)") == ["call extra bad", "call missing bad"]


def test_trace_metrics_list_failures_first_and_fold_nulls(open_page, example):
    path, result = example
    page = open_page().open(path)
    n = _index(result, "support-refund-2")
    view = page.locator(f"#trace-{n}")
    page.evaluate(f"document.getElementById('trace-{n}').open = true")
    states = view.locator(":scope > table.metric-results tbody tr").evaluate_all(
        "rs => rs.map(r => r.querySelector('.badge').textContent)")
    assert states[:4] == ["fail"] * 4 and set(states[4:]) == {"pass"}
    nulls = [m for m, r in result.traces[n - 1].metrics.items() if r.score is None and not r.errored]
    folded = view.locator(":scope > details.nulls")
    assert folded.evaluate("d => d.open") is False
    assert folded.locator("summary").inner_text() == f"{len(nulls)} metrics without a score"
    assert sorted(folded.locator("tr[data-m]").evaluate_all("rs => rs.map(r => r.dataset.m)")) == sorted(nulls)
    # the header of a trace's metric table is not sticky (it used to slide over the rows)
    assert view.locator("table.metric-results th").first.evaluate("e => getComputedStyle(e).position") == "static"


def test_sorting_the_trace_table(open_page, example):
    path, result = example
    page = open_page().open(path)
    ids = lambda: page.eval_on_selector_all("#trace-table tbody tr a.trace-link", "a => a.map(e => e.textContent)")  # noqa: E731
    head = page.locator("#trace-table th", has_text="overall")
    head.locator("button").click()
    by_overall = sorted(result.traces, key=lambda t: t.overall)
    assert ids() == [t.id for t in by_overall] and head.get_attribute("aria-sort") == "ascending"
    head.locator("button").click()
    assert ids() == [t.id for t in sorted(result.traces, key=lambda t: -t.overall)]
    col = page.locator("#trace-table th[data-sort=num]", has_text="parameter_quality")
    col.locator("button").click()
    scored = [t for t in result.traces if t.metrics.get("parameter_quality") and
              t.metrics["parameter_quality"].score is not None]
    order = ids()
    assert order[:len(scored)] == [t.id for t in sorted(scored, key=lambda t: t.metrics["parameter_quality"].score)]
    assert len(order) == len(result.traces)  # rows without a score go last, none lost
    page.locator("#trace-table th", has_text="#").locator("button").click()
    assert ids() == [t.id for t in result.traces]


def test_the_filter_also_filters_the_trace_views(open_page, example):
    path, result = example
    page = open_page().open(path)
    open_views = lambda: page.eval_on_selector_all("details.trace:not([hidden]) > summary strong",  # noqa: E731
                                                   "s => s.map(e => e.textContent)")
    assert open_views() == [t.id for t in result.traces]
    page.select_option("#f-status", "fail")
    failed = [t.id for t in result.traces if t.passed is False]
    assert open_views() == failed
    assert page.inner_text("#v-count") == f"{len(failed)} of {len(result.traces)} trace views match the filter"
    page.fill("#f-text", "weather")
    assert open_views() == [i for i in failed if "weather" in i]
    page.fill("#f-text", "")
    page.select_option("#f-status", "")
    assert open_views() == [t.id for t in result.traces] and page.inner_text("#v-count") == ""


def test_comparison_names_runs_colours_deltas_and_lists_flipped_traces(open_page, example):
    path, _ = example
    page = open_page().open(path)
    names = page.inner_text("#comparison .run-names")
    assert "baseline-v1" in names and "candidate-v2" in names
    cards = page.locator("#comparison .flips .card")
    assert cards.nth(0).inner_text().split("\n")[0].startswith("pass → fail 1 trace")
    assert cards.nth(0).locator("a").all_inner_texts() == ["support-refund-2"]
    assert cards.nth(1).locator("a").all_inner_texts() == ["rag-warranty"]
    fail, ok = page.evaluate("[getComputedStyle(document.body).getPropertyValue('--fail'),"
                             " getComputedStyle(document.body).getPropertyValue('--pass')]")
    assert fail and ok
    seen = set()
    for cell in page.locator("#comparison td.delta").all():
        cls, color = cell.evaluate("c => [c.className, getComputedStyle(c).color]")
        if "down" in cls or "up" in cls:
            seen.add("down" if "down" in cls else "up")
            probe = page.evaluate(f"(() => {{ const s = document.createElement('span'); s.style.color = "
                                  f"'var(--{'fail' if 'down' in cls else 'pass'})'; document.body.append(s);"
                                  f" const c = getComputedStyle(s).color; s.remove(); return c; }})()")
            assert color == probe
    assert seen == {"up", "down"}


def test_legends_and_task_counts(open_page, example):
    path, result = example
    page = open_page().open(path)
    legend = page.locator("#metrics .legend").all_inner_texts()
    assert any("threshold" in x and "interval of the mean" in x for x in legend)
    assert "pass^k interval" in page.inner_text("#pass-k .legend")
    assert "4 tasks: few, so the intervals are wide" in page.inner_text("#pass-k")
    tasks = {t.task_id for t in result.traces if t.metrics["parameter_quality"].score is not None}
    card = page.inner_text("#metric-parameter_quality")
    assert f"· {len(tasks)} tasks" in card


SHOTS = os.environ.get("ASSAY_SHOT_DIR")


@pytest.mark.parametrize("width", [1400, 900])
def test_no_clipped_headers_at_1400_and_900_px(open_page, example, width, tmp_path):
    path, result = example
    p = open_page()
    p.page.set_viewport_size({"width": width, "height": 1000})
    page = p.open(path)
    page.evaluate("document.querySelectorAll('details.trace').forEach((d, i) => { d.open = i < 3; })")
    clipped = page.evaluate("""() => [...document.querySelectorAll('th')].filter(th => th.offsetParent)
        .filter(th => th.scrollWidth > th.clientWidth + 1 || th.scrollHeight > th.clientHeight + 1)
        .map(th => th.textContent)""")
    assert clipped == []
    # every metric header's label lies inside its cell
    outside = page.evaluate("""() => [...document.querySelectorAll('#trace-table th')].filter(th => {
        const a = th.getBoundingClientRect(), b = (th.querySelector('button') || th).getBoundingClientRect();
        return b.left < a.left - 1 || b.right > a.right + 1 || b.top < a.top - 1 || b.bottom > a.bottom + 1;
      }).map(th => th.textContent)""")
    assert outside == []
    scroll = page.eval_on_selector("#traces .scroll", "s => [s.scrollWidth, s.clientWidth]")
    if width >= 1400:
        assert scroll[0] <= scroll[1], "the trace table overflows at 1400 px"
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # the page itself never scrolls sideways
    out = Path(SHOTS) if SHOTS else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    for name in ("failures", "traces", "comparison"):
        page.locator(f"#{name}").screenshot(path=str(out / f"{name}-{width}.png"))
    n = _index(result, "support-refund-2")
    page.evaluate(f"document.getElementById('trace-{n}').open = true")
    page.locator(f"#trace-{n}").screenshot(path=str(out / f"trace-{width}.png"))
    data = (out / f"traces-{width}.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">I", data[16:20])[0] <= width
