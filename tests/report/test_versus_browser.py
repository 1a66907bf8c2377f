"""The ``assay versus`` HTML view in a real headless Chromium: offline, side by side, filter, inert XSS."""

from __future__ import annotations

import re

import pytest

from assay import evaluate
from assay.analysis._versus import versus
from assay.judge import make_judge
from assay.metrics.pairwise import get_pairwise
from assay.model import Trace
from assay.report._versus import write_versus
from tests.support.judge_server import JudgeServer, obj

pytestmark = pytest.mark.browser

XSS = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


def _run(outputs):
    raw = [{"id": i, "turns": [{"input": f"Question {i}?", "output": o}]} for i, o in outputs.items()]
    return evaluate(raw, ["regex_match:pattern=."]), {r["id"]: Trace.model_validate(r) for r in raw}


def _judge(request):
    user = request["messages"][-1]["content"]
    a = re.search(r"<<<BEGIN CANDIDATE_A \w+>>>\n(.*?)\n<<<END", user, re.S).group(1)
    if "Question q3?" in user:  # position-biased on q3: always the first candidate
        return obj({"evidence": [], "reasoning": "the first is best", "verdict": "A"})
    good_a = "GOOD" in a
    good_b = "GOOD" in re.search(r"<<<BEGIN CANDIDATE_B \w+>>>\n(.*?)\n<<<END", user, re.S).group(1)
    v = "A" if good_a and not good_b else "B" if good_b and not good_a else "tie"
    return obj({"evidence": [], "reasoning": f"reason {v} " + XSS, "verdict": v})


@pytest.fixture()
def view(tmp_path):
    a, ta = _run({"q0": "plain 0", "q1": "GOOD 1", "q2": "plain 2", "q3": "plain 3"})
    b, tb = _run({"q0": "GOOD 0 " + XSS, "q1": "plain 1", "q2": "plain 2", "q3": "GOOD 3"})
    with JudgeServer(_judge) as server:
        result = versus(a, b, ta, tb, get_pairwise("pairwise_quality"),
                        make_judge(f"openai-compatible:scripted@{server.url}", cache=False), names=("base", "new"))
    return write_versus(tmp_path / "versus.html", result), result


def test_versus_view_side_by_side_with_reasons(open_page, view):
    path, result = view
    p = open_page()
    page = p.open(path)
    assert p.console_errors == [] and page.evaluate("window.__csp") == []
    assert p.requests == [path.resolve().as_uri()], "the view fetched something besides itself"
    assert page.evaluate("window.__pwned") is None  # the replies' and reasons' HTML stayed text
    assert page.locator("article.pair").count() == 4
    assert page.inner_text("#f-count") == "4 of 4 pairs"  # the script ran
    q0 = page.locator("#pair-q0")
    replies = q0.locator(".reply")
    assert replies.nth(0).inner_text() == "plain 0" and replies.nth(1).inner_text() == "GOOD 0 " + XSS
    assert "won" in replies.nth(1).get_attribute("class")
    assert q0.locator(".reasons li").count() == 2 and XSS in q0.locator(".reasons").inner_text()
    assert "changed verdict" in page.inner_text("#inconsistency") and "1 of 4 pairs (25%)" in page.inner_text(
        "#inconsistency")
    assert "verdict changed with the order" in page.locator("#pair-q3").inner_text()
    # side by side: the two replies share a row
    boxes = [replies.nth(i).bounding_box() for i in range(2)]
    assert boxes[0]["y"] == boxes[1]["y"] and boxes[0]["x"] < boxes[1]["x"]


def test_versus_view_filters(open_page, view):
    path, result = view
    page = open_page().open(path)

    def shown():
        return page.eval_on_selector_all("article.pair:not([hidden])", "els => els.map(e => e.id)")

    page.select_option("#f-winner", "differ")
    assert shown() == ["pair-q0", "pair-q1"] and page.inner_text("#f-count") == "2 of 4 pairs"
    page.select_option("#f-winner", "a")
    assert shown() == ["pair-q1"]
    page.select_option("#f-winner", "flip")
    assert shown() == ["pair-q3"]
    page.select_option("#f-winner", "tie")
    assert shown() == ["pair-q2", "pair-q3"]


def test_tournament_page_ranking_and_win_matrix_chart(open_page, tmp_path):
    from assay.analysis._tournament import Entrant, tournament
    from assay.report._versus import write_tournament

    def entrant(name, good):
        result, traces = _run({f"q{k}": ("GOOD " if k in good else "plain ") + f"{name} {k}" for k in range(4)})
        return Entrant(name, result, traces)

    field = [entrant("<b>x</b>", {0, 1, 2}), entrant("mid", {0}), entrant("low", set())]
    with JudgeServer(_judge) as server:
        result = tournament(field, get_pairwise("pairwise_quality"),
                            make_judge(f"openai-compatible:scripted@{server.url}", cache=False), n_boot=100)
    path = write_tournament(tmp_path / "t.html", result)
    p = open_page()
    page = p.open(path)
    assert p.console_errors == [] and page.evaluate("window.__csp") == []
    assert p.requests == [path.resolve().as_uri()]
    names = page.eval_on_selector_all("#ranking tr td:nth-child(2)", "els => els.map(e => e.textContent)")
    assert names == [r["name"] for r in result["ranking"]] and names[0] == "<b>x</b>"  # escaped, shown as text
    cells = page.locator("svg.win-matrix rect.cell:not(.empty)")
    assert cells.count() == 6  # 3 x 3 without the diagonal
    rates = {(int(cells.nth(k).get_attribute("data-row")), int(cells.nth(k).get_attribute("data-col"))):
             float(cells.nth(k).get_attribute("data-rate")) for k in range(6)}
    for (i, j), rate in rates.items():
        assert rate == pytest.approx(result["win_matrix"][i][j]["win_rate"], abs=1e-4)
        assert rate + rates[(j, i)] == pytest.approx(1.0, abs=1e-4)
    assert page.locator("svg.win-matrix").bounding_box()["width"] > 200  # rendered, not collapsed
