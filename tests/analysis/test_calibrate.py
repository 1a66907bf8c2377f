"""The judge card against the scripted judge server: every figure compared with a hand computation.

The server answers per trace (the trace's marker ``case-NN`` is in the fenced conversation), so
the test decides the judge's confusion matrix; the expected kappas, rates and Wilson intervals are
worked out by hand in the comments.
"""

from __future__ import annotations

import json
import math

import pytest

from assay import JudgeCard, calibrate
from assay.errors import DataError
from assay.judge import make_judge
from tests.support.judge_server import JudgeServer, obj, status

# human label, judge label for the resolution metric (resolved 1.0 / partially_resolved 0.5 / unresolved 0.0,
# threshold 0.7: only "resolved" passes)
RESOLUTION = {
    "01": ("resolved", "resolved"), "02": ("resolved", "resolved"), "03": ("resolved", "resolved"),
    "04": ("resolved", "partially_resolved"),
    "05": ("partially_resolved", "resolved"), "06": ("partially_resolved", "partially_resolved"),
    "07": ("partially_resolved", "unresolved"),
    "08": ("unresolved", "unresolved"), "09": ("unresolved", "unresolved"), "10": ("unresolved", "unresolved"),
    "11": ("resolved", None),  # the judge fails on this one (HTTP 500): an errored item
}


def trace(case: str, **extra) -> dict:
    return {"id": f"t{case}", "turns": [{"input": f"My order case-{case} never arrived.",
                                         "output": f"I have looked into case-{case} for you."}], **extra}


def judge_for(server: JudgeServer):
    return make_judge(f"openai-compatible:scripted@{server.url}", cache=False, retries=0, reasks=0,
                      base_delay=0.01, timeout=5.0)


def by_case(table: dict, make) -> object:
    def reply(request: dict):
        user = request["messages"][-1]["content"]
        case = next(c for c in table if f"case-{c} " in user)
        return make(case)
    return reply


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The textbook Wilson score interval, written out independently of assay.stats."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.fixture()
def resolution_server():
    def make(case):
        verdict = RESOLUTION[case][1]
        if verdict is None:
            return status(500, "judge down")
        return obj({"evidence": [], "reasoning": f"case {case} looks {verdict}", "verdict": verdict})
    with JudgeServer(by_case(RESOLUTION, make)) as server:
        yield server


def test_label_metric_card_from_a_csv_equals_the_hand_computation(tmp_path, resolution_server):
    traces = tmp_path / "t.jsonl"
    traces.write_text("".join(json.dumps(trace(c)) + "\n" for c in RESOLUTION))
    labels = tmp_path / "labels.csv"
    labels.write_text("trace_id,metric,label\n" + "".join(f"t{c},resolution,{h}\n" for c, (h, _) in RESOLUTION.items()))
    card = calibrate(str(traces), ["resolution"], judge=judge_for(resolution_server), labels=labels)
    m = card.metrics["resolution"]
    assert (m.kind, m.compared_on, m.rubric) == ("label", "categories", "resolution@1")
    assert (m.n_labelled, m.n_compared, m.n_errored) == (11, 10, 1) and m.error_rate == pytest.approx(1 / 11)
    # rows human, columns judge, in score order resolved, partially_resolved, unresolved
    assert m.categories == ["resolved", "partially_resolved", "unresolved"]
    assert m.confusion == [[3, 1, 0], [1, 1, 1], [0, 0, 3]]
    # po = 7/10; marginals rows .4 .3 .3, columns .4 .2 .4: pe = .16 + .06 + .12 = .34; kappa = .36 / .66
    assert m.agreement == pytest.approx(0.7) and m.kappa == pytest.approx(6 / 11)
    # quadratic weights on the label scores 1, .5, 0: w = .25 for one step, 1 for two;
    # observed .75 / 10 = .075, expected .375 -> 1 - .075 / .375 = .8
    assert m.weighted_kappa == pytest.approx(0.8)
    pf = m.pass_fail
    # pass = resolved: human-passed 4 (judge passed 3), human-failed 6 (judge passed 1: case 05)
    assert (pf.tp, pf.fn, pf.tn, pf.fp) == (3, 1, 5, 1)
    assert pf.tpr == pytest.approx(0.75) and pf.tnr == pytest.approx(5 / 6)
    assert pf.tpr_ci == pytest.approx(wilson(3, 4)) and pf.tnr_ci == pytest.approx(wilson(5, 6))
    assert pf.tpr_ci == pytest.approx((0.3006, 0.9544), abs=1e-4)
    # 2x2 [[3, 1], [1, 5]]: po .8, pe .4*.4 + .6*.6 = .52, kappa .28 / .48
    assert pf.kappa == pytest.approx(7 / 12) and pf.agreement == pytest.approx(0.8)
    got = {(d.trace_id, d.human, d.judge) for d in m.disagreements}
    assert got == {("t04", "resolved", "partially_resolved"), ("t05", "partially_resolved", "resolved"),
                   ("t07", "partially_resolved", "unresolved")}
    assert next(d for d in m.disagreements if d.trace_id == "t05").reason.startswith("resolved: case 05")
    # the label's weight against the judge's score: cases 04, 05, 07 are .5 off
    assert m.mae == pytest.approx(0.15)
    assert (m.per_label["resolved"].recall, m.per_label["resolved"].precision) == (0.75, 0.75)
    assert m.within_one is None  # resolution's labels are not marked ordinal
    assert card.judge["model"] == "openai-compatible:scripted" and card.judge["backend"] == "openai-compatible"
    assert card.labels["n"] == 11 and len(card.labels["sha256"]) == 64
    assert JudgeCard.from_json(card.to_json()) == card  # the file form round-trips


def test_scale_metric_from_metadata_labels_mae_and_weighted_kappa(judge_server):
    human = {"01": 5, "02": 4, "03": 2, "04": 1, "05": 3}
    judge = {"01": 5, "02": 3, "03": 2, "04": 2, "05": 3}
    judge_server.reply = by_case(human, lambda c: obj({"evidence": [], "reasoning": "ok", "score": judge[c]}))
    traces = [trace(c, metadata={"labels": {"user_satisfaction": human[c]}}) for c in human]
    card = calibrate(traces, ["user_satisfaction"], judge=judge_for(judge_server))
    m = card.metrics["user_satisfaction"]
    assert (m.kind, m.compared_on, m.categories) == ("scale", "categories", [1, 2, 3, 4, 5])
    # normalised differences 0, .25, 0, .25, 0
    assert m.mae == pytest.approx(0.1)
    # po 3/5; rows .2 each, columns 0 .4 .4 0 .2: pe .2, kappa .4 / .8
    assert m.kappa == pytest.approx(0.5)
    # quadratic: observed 2 x (1/4)^2 / 5 = .025; expected .2 x (.4 x .9375 + .4 x .625 + .2 x 1.875) = .2
    assert m.weighted_kappa == pytest.approx(0.875)
    pf = m.pass_fail  # threshold .7: 4 and 5 pass
    assert (pf.tp, pf.fn, pf.tn, pf.fp) == (1, 1, 3, 0) and pf.tpr == 0.5 and pf.tnr == 1.0
    assert card.labels["source"] == "metadata.labels"


def test_pass_fail_labels_compare_on_pass_fail(tmp_path, judge_server):
    human = {"01": "pass", "02": "fail", "03": "fail", "04": "pass"}
    judge = {"01": "contained", "02": "contained", "03": "escalated", "04": "contained"}
    judge_server.reply = by_case(human, lambda c: obj({"evidence": [], "reasoning": "ok", "verdict": judge[c]}))
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"trace_id": f"t{c}", "label": h}) + "\n" for c, h in human.items()))
    card = calibrate([trace(c) for c in human], ["containment"], judge=judge_for(judge_server), labels=labels)
    m = card.metrics["containment"]
    assert m.compared_on == "pass_fail" and m.categories == ["pass", "fail"] and m.confusion == [[2, 0], [1, 1]]
    assert m.pass_fail.tpr == 1.0 and m.pass_fail.tnr == 0.5
    assert [(d.trace_id, d.human, d.judge) for d in m.disagreements] == [("t02", "fail", "pass")]


def test_a_label_that_means_nothing_names_file_line_and_choices(tmp_path, judge_server):
    judge_server.reply = lambda r: obj({"evidence": [], "reasoning": "ok", "verdict": "resolved"})
    labels = tmp_path / "l.csv"
    labels.write_text("trace_id,metric,label\nt01,resolution,resolved\nt02,resolution,solved\n")
    with pytest.raises(DataError) as err:
        calibrate([trace("01"), trace("02")], ["resolution"], judge=judge_for(judge_server), labels=labels)
    assert str(err.value).startswith(f"{labels}:3: label 'solved' means nothing for metric 'resolution'")
    assert "resolved, partially_resolved, unresolved" in str(err.value)


@pytest.mark.parametrize("sep, encoding, newline", [(",", "utf-8", "\n"), (";", "utf-8-sig", "\r\n"),
                                                     ("\t", "utf-8", "\n")], ids=["comma", "excel-semicolon", "tab"])
def test_a_labels_csv_is_read_with_the_separator_its_header_uses(tmp_path, sep, encoding, newline):
    """A spreadsheet where ',' is the decimal mark saves ';' (with a byte-order mark and CRLF); a ';' file was
    'a labels CSV needs a header with trace_id ...', its header one field."""
    from assay.analysis._calibrate import read_labels

    labels = tmp_path / "l.csv"
    rows = [["trace_id", "metric", "label", "score"], ["t01", "resolution", "resolved", ""],
            ["t02", "goal", "", "0.5"], ["t03", "resolution", "a, b", ""]]
    with open(labels, "w", encoding=encoding, newline="") as f:
        f.write("".join(sep.join(f'"{c}"' if sep in c else c for c in row) + newline for row in rows))
    got = [(x.trace_id, x.metric, x.label, x.score) for x in read_labels(labels)]
    assert got == [("t01", "resolution", "resolved", None), ("t02", "goal", None, 0.5),
                   ("t03", "resolution", "a, b", None)]


def test_labels_that_match_no_trace_are_an_error(tmp_path, judge_server):
    judge_server.reply = lambda r: obj({"evidence": [], "reasoning": "ok", "verdict": "resolved"})
    labels = tmp_path / "l.jsonl"
    labels.write_text(json.dumps({"trace_id": "nope", "label": "pass"}) + "\n")
    with pytest.raises(DataError, match="no label matches a scored trace"):
        calibrate([trace("01")], ["resolution"], judge=judge_for(judge_server), labels=labels)


# -- label metrics with their own labels: failure_rate's six, goal_achievement_rate's five levels ----------

def schema_name(request: dict) -> str:
    return ((request.get("response_format") or {}).get("json_schema") or {}).get("name", "")


# human label, judge label for failure_rate (weights: hallucination 0, stall .4, mixed .6, the rest 1;
# threshold .7: the three 1.0 labels pass)
FAILURE = {
    "01": ("hallucination", "hallucination"), "02": ("hallucination", "not_applicable"),
    "03": ("stall", "stall"), "04": ("stall", "mixed"),
    "05": ("mixed", "mixed"),
    "06": ("honest_fallback", "honest_fallback"), "07": ("honest_fallback", "stall"),
    "08": ("alternative_proposed", "not_applicable"),
    "09": ("not_applicable", "not_applicable"), "10": ("not_applicable", "not_applicable"),
}


def test_a_failure_rate_card_from_its_six_labels(tmp_path, judge_server):
    judge_server.reply = by_case(FAILURE, lambda c: obj({"findings": [], "reason": f"case {c}",
                                                         "verdict": FAILURE[c][1]}))
    labels = tmp_path / "labels.csv"
    labels.write_text("trace_id,metric,label\n" + "".join(f"t{c},failure_rate,{h}\n" for c, (h, _) in FAILURE.items()))
    card = calibrate([trace(c) for c in FAILURE], None, judge=judge_for(judge_server), labels=labels)
    m = card.metrics["failure_rate"]
    assert (m.kind, m.compared_on, m.n_compared) == ("label", "categories", 10)
    assert m.rubric.startswith("failure_rate@") and m.rubric != "failure_rate@None"
    # categories by descending weight; equal weights keep the metric's order
    assert m.categories == ["honest_fallback", "alternative_proposed", "not_applicable", "mixed", "stall",
                            "hallucination"]
    assert m.confusion == [[1, 0, 0, 0, 1, 0], [0, 0, 1, 0, 0, 0], [0, 0, 2, 0, 0, 0],
                           [0, 0, 0, 1, 0, 0], [0, 0, 0, 1, 1, 0], [0, 0, 1, 0, 0, 1]]
    # po 6/10; rows .2 .1 .2 .1 .2 .2, columns .1 0 .4 .2 .2 .1: pe .02 + 0 + .08 + .02 + .04 + .02 = .18
    assert m.agreement == pytest.approx(0.6) and m.kappa == pytest.approx(0.42 / 0.82)
    hall, na, alt = m.per_label["hallucination"], m.per_label["not_applicable"], m.per_label["alternative_proposed"]
    assert (hall.human, hall.judge, hall.agreed, hall.recall, hall.precision) == (2, 1, 1, 0.5, 1.0)
    assert (na.recall, na.precision) == (1.0, 0.5) and (alt.recall, alt.precision) == (0.0, None)
    assert m.within_one is None  # six labels, not levels of one scale
    # |human weight - judge score|: 02 1, 04 .2, 07 .6, 08 0 -> 1.8 / 10
    assert m.mae == pytest.approx(0.18)
    pf = m.pass_fail  # human pass: 06, 07, 08, 09, 10 (judge fails 07); human fail 01-05 (judge passes 02)
    assert (pf.tp, pf.fn, pf.tn, pf.fp) == (4, 1, 4, 1)
    assert {(d.trace_id, d.human, d.judge) for d in m.disagreements} >= {("t02", "hallucination", "not_applicable")}


GOAL = {"01": ("fully", "fully"), "02": ("fully", "mostly"), "03": ("mostly", "mostly"), "04": ("mostly", "partial"),
        "05": ("partial", "partial"), "06": ("minor", "none"), "07": ("none", "none"), "08": ("minor", "fully")}


def test_a_goal_achievement_card_from_level_labels_in_metadata(judge_server):
    def reply(request):
        user = request["messages"][-1]["content"]
        case = next(c for c in GOAL if f"case-{c} " in user)
        name = schema_name(request)
        if name == "SignalsVerdict":
            return obj({"positive_signals": [], "negative_signals": [], "unmet_requests": []})
        if name == "SummaryVerdict":
            return obj({"summary": "done"})
        return obj({"reasoning": f"case {case}", "verdict": GOAL[case][1]})
    judge_server.reply = reply
    traces = [trace(c, expected={"goal": "get the parcel"}, metadata={"labels": {"goal_achievement_rate": h}})
              for c, (h, _) in GOAL.items()]
    card = calibrate(traces, ["goal_achievement_rate"], judge=judge_for(judge_server))
    m = card.metrics["goal_achievement_rate"]
    assert (m.kind, m.compared_on, m.categories) == ("label", "categories", ["fully", "mostly", "partial", "minor",
                                                                             "none"])
    assert m.rubric.startswith("goal_achievement_rate@")
    assert m.confusion == [[1, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 0, 0], [1, 0, 0, 0, 1], [0, 0, 0, 0, 1]]
    assert m.agreement == pytest.approx(4 / 8) and m.within_one == pytest.approx(7 / 8)  # only 08 is far off
    # quadratic weights on the level weights 1 .9 .7 .3 0, written out: observed .01 + .04 + .49 over 8
    # (02, 04, 08; 06 minor -> none .09 too); expected from the marginals rows 2 2 1 2 1, columns 2 2 2 0 2
    pos, rows, cols = [1, .9, .7, .3, 0], [2, 2, 1, 2, 1], [2, 2, 2, 0, 2]
    observed = (.01 + .04 + .49 + .09) / 8
    expected = sum(rows[i] * cols[j] * (pos[i] - pos[j]) ** 2 for i in range(5) for j in range(5)) / 64
    assert m.weighted_kappa == pytest.approx(1 - observed / expected)
    assert (m.per_label["mostly"].recall, m.per_label["mostly"].precision) == (0.5, 0.5)
    assert m.per_label["minor"].recall == 0.0 and m.per_label["minor"].precision is None
    # weights 1 .9 .7 .3 0, no negative signals: |.1| + |.2| + |.3| + |.7| = 1.3 over 8
    assert m.mae == pytest.approx(1.3 / 8)
    pf = m.pass_fail  # pass at .7: fully, mostly, partial
    assert (pf.tp, pf.fn, pf.tn, pf.fp) == (5, 0, 2, 1)


def test_a_score_label_card_is_tied_to_the_rubric_it_measured(judge_server):
    """A score that several labels share (1.0) compares on pass/fail; the card still names the rubric."""
    judge_server.reply = lambda r: obj({"findings": [], "reason": "ok", "verdict": "not_applicable"})
    traces = [trace(c, metadata={"labels": {"failure_rate": s}}) for c, s in (("01", 1.0), ("02", 0.0))]
    card = calibrate(traces, ["failure_rate"], judge=judge_for(judge_server))
    m = card.metrics["failure_rate"]
    assert m.rubric is not None and m.rubric.startswith("failure_rate@")
    assert m.compared_on == "pass_fail" and m.mae == pytest.approx(0.5)
    assert card.judge["prompt_style"] in ("full", "compact")


def test_a_card_is_refused_for_another_rubric_metric_version_or_prompt_form(judge_server):
    from assay.analysis import correct_pass_rates
    from assay.engine._run import Evaluation

    verdicts = {"01": "hallucination", "02": "not_applicable", "03": "stall", "04": "honest_fallback"}
    judge_server.reply = by_case(verdicts, lambda c: obj({"findings": [], "reason": "ok", "verdict": verdicts[c]}))
    traces = [trace(c, metadata={"labels": {"failure_rate": v}}) for c, v in verdicts.items()]
    judge = judge_for(judge_server)
    card = calibrate(traces, ["failure_rate"], judge=judge)
    evaluation = Evaluation(["failure_rate"], judge=judge)
    result = evaluation.run(traces, intervals=False)
    fits = correct_pass_rates(result, [card], evaluation.instances, judge)["failure_rate"]
    assert fits["corrected"] is not None and "refused" not in fits

    def refusal(change) -> str:
        other = JudgeCard.from_dict(json.loads(card.to_json()))
        change(other)
        return correct_pass_rates(result, [other], evaluation.instances, judge)["failure_rate"]["refused"]
    rubric = card.metrics["failure_rate"].rubric
    assert refusal(lambda c: setattr(c.metrics["failure_rate"], "rubric", "failure_rate@0")) == (
        f"the card is for rubric failure_rate@0, this run sends {rubric}: recalibrate for the new rubric")
    assert "version 0" in refusal(lambda c: setattr(c.metrics["failure_rate"], "metric_version", "0"))
    style = card.judge["prompt_style"]
    other_style = "compact" if style == "full" else "full"
    assert refusal(lambda c: c.judge.update(prompt_style=other_style)) == (
        f"the card measured the {other_style} prompt form, this run asks the {style} one "
        f"(--prompt-style {other_style}, or recalibrate)")
    # answers decided by thresholds are another judge's answers: only this metric's thresholds count
    assert "thresholds" not in card.judge
    assert refusal(lambda c: c.judge.update(thresholds={"failure_rate.admits": 0.3})) == (
        "the card measured failure_rate's answers decided by {'failure_rate.admits': 0.3}, this run decides them "
        "by the greedy token (--judge-threshold, or recalibrate)")
    assert "refused" not in correct_pass_rates(result, [JudgeCard.from_dict(
        {**json.loads(card.to_json()), "judge": {**card.judge, "thresholds": {"goal_achievement_rate.satisfied": 0.4}}})],
        evaluation.instances, judge)["failure_rate"]


def test_the_run_correction_passes_the_trials_tasks_as_clusters(judge_server):
    """Trials of one task share its outcome: the corrected pass rate's interval carries the task-level
    variance (the card's correction of the same counts as independent verdicts is narrower)."""
    from assay.analysis import correct_pass_rates
    from assay.engine._run import Evaluation
    from assay.stats import corrected_pass_rate

    labels = {"01": "hallucination", "02": "not_applicable", "03": "stall", "04": "honest_fallback"}
    judge_server.reply = by_case(labels, lambda c: obj({"findings": [], "reason": "ok", "verdict": labels[c]}))
    judge = judge_for(judge_server)
    card = calibrate([dict(trace(c, metadata={"labels": {"failure_rate": v}}), id=f"t{c}-{k}")
                      for c, v in labels.items() for k in range(8)], ["failure_rate"], judge=judge)
    # six tasks, four trials each; a task's trials all get its case's verdict (the judge answers by case)
    cases = ["01", "02", "03", "04", "02", "04"]
    traces = [dict(trace(case), id=f"task{k}-{j}", task_id=f"task{k}") for k, case in enumerate(cases)
              for j in range(4)]
    evaluation = Evaluation(["failure_rate"], judge=judge)
    result = evaluation.run(traces, intervals=False)
    got = correct_pass_rates(result, [card], evaluation.instances, judge)["failure_rate"]
    assert got["method"] == "cluster_jeffreys_simulation" and got["n"] == 24
    s = result.summary["failure_rate"]
    pf = card.metrics["failure_rate"].pass_fail
    flat = corrected_pass_rate(s.n_passed, s.n, tp=pf.tp, fn=pf.fn, tn=pf.tn, fp=pf.fp)
    assert flat.method == "jeffreys_simulation" and got["corrected"] == pytest.approx(flat.estimate)
    assert got["ci"][1] - got["ci"][0] > flat.high - flat.low
