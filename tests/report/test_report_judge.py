"""The report's judge section in a real headless Chromium: jurors, test-retest, a judge card, visible notes."""

from __future__ import annotations

import collections
import threading

import pytest

from assay import Evaluation
from assay.analysis import correct_pass_rates
from assay.engine._jury import Jury
from assay.judge import make_judge
from assay.model import JudgeCard, MetricCard, PassFail
from assay.report import write_report
from tests.support.judge_server import JudgeServer, obj, status

pytestmark = pytest.mark.browser

ANSWERS = {"01": ["resolved"] * 3, "02": ["resolved", "resolved", "unresolved"], "03": ["unresolved"] * 3}


def trace(case: str) -> dict:
    return {"id": f"t{case}", "turns": [{"input": f"Where is case-{case} ?", "output": f"Checking case-{case} now."}]}


def retest_run():
    seen: collections.Counter = collections.Counter()
    lock = threading.Lock()

    def reply(request):
        case = next(c for c in ANSWERS if f"case-{c} " in request["messages"][-1]["content"])
        with lock:
            i, seen[case] = seen[case], seen[case] + 1
        return obj({"evidence": [], "reasoning": "ok", "verdict": ANSWERS[case][i]})

    with JudgeServer(reply) as server:
        judge = make_judge(f"openai-compatible:scripted@{server.url}", cache=False, retries=0, reasks=0)
        evaluation = Evaluation(["resolution"], judge=judge, repeats=3)
        return evaluation.run([trace(c) for c in ANSWERS]), evaluation, judge


def card_for(model: str) -> JudgeCard:
    pf = PassFail(tp=39, fn=1, tn=30, fp=10, tpr=0.975, tnr=0.75)
    return JudgeCard(id="jc-test", created_at="2026-12-01T00:00:00+00:00", judge={"model": model},
                     labels={"n": 80}, metrics={"resolution": MetricCard(
                         metric="resolution", rubric="resolution@1", threshold=0.7, kind="label",
                         compared_on="pass_fail", n_labelled=80, n_compared=80, pass_fail=pf)})


def test_judge_section_with_a_card_and_an_unstable_trace(open_page, tmp_path):
    result, evaluation, judge = retest_run()
    result.statistics["judge_correction"] = correct_pass_rates(result, [card_for(judge.model)], evaluation.instances,
                                                              judge)
    path = write_report(tmp_path / "r.html", result)
    p = open_page()
    page = p.open(path)
    assert p.console_errors == []
    assert page.locator("#judge").is_visible()
    assert page.inner_text("#judge-table tbody td code") == "openai-compatible:scripted"
    # 2 of 3 traces pass (t02 by majority): raw 66.7%, corrected (2/3 + .75 - 1) / .725 = 57.5%
    row = page.inner_text("#judge-correction tbody tr")
    assert "jc-test" in row and "66.7%" in row and "57.5%" in row
    assert page.locator("#judge-uncalibrated").count() == 0  # a card applies
    assert page.locator("#judge-unstable").is_visible()
    assert page.inner_text("#judge-unstable-traces") == "t02 resolution: 1 flip(s)"
    retest = page.inner_text("#judge-retest tbody tr")
    assert retest.split("\t")[:4] == ["resolution", "3", "1 (33%)", "1"]


def test_uncalibrated_jury_shows_the_note_and_juror_failures(open_page, tmp_path):
    def reply(request):
        return status(500, "juror down") if request["model"] == "j2" else obj(
            {"evidence": [], "reasoning": "ok", "verdict": "resolved"})

    with JudgeServer(reply) as server:
        jury = Jury([make_judge(f"openai-compatible:j{i}@{server.url}", cache=False, retries=0, reasks=0)
                     for i in (1, 2)])
        result = Evaluation(["resolution"], judge=jury).run([trace("01"), trace("03")])
    path = write_report(tmp_path / "j.html", result)
    page = open_page().open(path)
    note = page.locator("#judge-uncalibrated")
    assert note.is_visible() and "resolution" in note.inner_text()
    assert [c.strip() for c in page.locator("#judge-table tbody td:first-child").all_inner_texts()] == [
        "openai-compatible:j1", "openai-compatible:j2"]
    failed = page.locator("#judge-table tbody tr").nth(1).inner_text()
    assert "100.0%" in failed and "juror down" in failed
    assert "openai-compatible:j2: 2" in page.inner_text("#judge-jury tbody tr")
    assert page.eval_on_selector("#judge-uncalibrated", "e => getComputedStyle(e).borderLeftStyle") == "solid"
