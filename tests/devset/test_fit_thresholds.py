"""benchmarks/fit_thresholds.py on the written set's fixture, the scripted judge server answering
with chosen log-probabilities; and judge_quality.py reading the thresholds it writes."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import pytest

from benchmarks import devset_load, fit_thresholds, judge_quality
from tests.support.judge_server import scored

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "devset"
ln = math.log


def sheet(answers: float, admits: float, points: float):
    """A ReplyCheck reply whose greedy answers are P(yes) >= 0.5, with those probabilities."""
    pieces: list = ["{"]
    for n, (name, p) in enumerate((("answers", answers), ("admits", admits), ("points", points))):
        yes = p >= 0.5
        pieces += [("," if n else "") + f'"{name}":',
                   ("true" if yes else "false", ln(p if yes else 1 - p), {"false" if yes else "true": ln(1 - p if yes else p)})]
    return scored(*pieces, ',"evasive":false}')


ITEMS = {  # keyword of the user's message -> (sheet probabilities, the judge's own answer)
    "order 882": ((0.9, 0.1, 0.05), {"answer": "I cannot know that.", "known": False}),     # hallucination
    "helpline": ((0.95, 0.02, 0.1), {"answer": "It opens at 9.", "known": True}),           # not_applicable
    "landlord": ((0.2, 0.3, 0.4), {"answer": "I cannot know that.", "known": False}),       # alternative_proposed
}


def judge_reply(request: dict):
    name = (request.get("response_format") or {}).get("json_schema", {}).get("name", "")
    user = request["messages"][1]["content"]
    if name == "Agreement":
        return scored('{"agrees":', ("true", ln(0.9), {"false": ln(0.1)}), "}")
    if name == "Contradiction":
        return scored('{"contradicts":', ("false", ln(0.9), {"true": ln(0.1)}), "}")
    (probs, reference), = [v for k, v in ITEMS.items() if k in user]
    return sheet(*probs) if name == "ReplyCheck" else scored(json.dumps(reference, separators=(",", ":")))


def test_fitting_finds_the_threshold_that_turns_a_stall_into_the_labelled_alternative(judge_server, tmp_path, capsys):
    judge_server.reply = judge_reply
    out = tmp_path / "thresholds.toml"
    code = fit_thresholds.main(["--judge", f"openai-compatible:m@{judge_server.url}", "--metric", "failure_rate",
                                "--devset-root", str(FIXTURE), "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    # greedy: the alternative reads as a stall (no to everything), kappa (2/3 - 2/9) / (1 - 2/9) = 4/7;
    # a points threshold <= 0.4 (its P(yes)) fixes it, and of those the one nearest 0.5 is kept
    assert "greedy      kappa 0.571" in printed and "thresholds  kappa 1.000" in printed
    table = tomllib.loads(out.read_text())["judge"]
    assert table["logprobs"] == 10
    assert table["thresholds"] == {"failure_rate.points": 0.4}
    # every call was made once: the re-scorings came from the verdict cache
    calls = [(json.dumps(q.json["messages"][1]["content"][-200:]), q.json["response_format"]["json_schema"]["name"])
             for q in judge_server.requests]
    assert len(calls) == len(set(calls)) and all(q.json["logprobs"] is True for q in judge_server.requests)


def test_the_held_back_half_is_not_fitted_on(capsys):
    with pytest.raises(SystemExit) as exc:
        fit_thresholds.main(["--judge", "openai-compatible:m@http://127.0.0.1:9/v1", "--half", "heldback"])
    assert exc.value.code == 2
    assert "the held-back half is only measured" in capsys.readouterr().err


def test_judge_quality_measures_with_the_fitted_thresholds(judge_server, tmp_path):
    judge_server.reply = judge_reply
    path = tmp_path / "t.toml"
    path.write_text('[judge]\nlogprobs = 5\n\n[judge.thresholds]\n"failure_rate.points" = 0.3\n')
    options = judge_quality.read_thresholds(path)
    assert options == {"thresholds": {"failure_rate.points": 0.3}, "logprobs": 5}
    out = judge_quality.run_metric("failure_rate", f"openai-compatible:m@{judge_server.url}",
                                   {"prompt_style": "compact", **options}, None, "tuning", None, None, "devset",
                                   FIXTURE)
    assert out["kappa"] == pytest.approx(1.0) and out["recall"]["alternative_proposed"] == "1/1"
    assert all(q.json["top_logprobs"] == 5 for q in judge_server.requests)
    missing = tmp_path / "none.toml"
    missing.write_text("[judge]\nlogprobs = 5\n")
    with pytest.raises(SystemExit, match="no \\[judge.thresholds\\] table"):
        judge_quality.read_thresholds(missing)


def test_the_questions_fitted_are_the_sheets_yes_no_fields():
    from assay.judge._probs import choices_of
    from assay.metrics.eval_lib import Agreement, Contradiction, DeliveryCheck, GoalCheck, Reference, ReplyCheck

    asked = {m: {q for s in schemas for q, v in choices_of(s).items() if v == (True, False)}
             for m, schemas in (("failure_rate", (ReplyCheck, Reference, Contradiction, Agreement)),
                                ("goal_achievement_rate", (GoalCheck, DeliveryCheck)))}
    assert set(fit_thresholds.QUESTIONS["failure_rate"]) == asked["failure_rate"] - {"evasive"}
    # got_everything is on both goal sheets: the delivery sheet's is also fitted on its own
    assert set(fit_thresholds.QUESTIONS["goal_achievement_rate"]) == asked["goal_achievement_rate"] | {
        "delivery.got_everything"}
    assert "got_everything" in choices_of(DeliveryCheck)
    assert devset_load.METRICS == tuple(fit_thresholds.QUESTIONS)
