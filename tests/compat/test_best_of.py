"""assay.compat.fair_forge.metrics.best_of: Fair Forge's knockout bracket, contests judged pairwise."""

from __future__ import annotations

import re

import pytest

from assay.compat.fair_forge.metrics.best_of import BestOf, BestOfContest, BestOfMetric
from assay.compat.fair_forge.schemas.common import Batch, Dataset
from tests.support.judge_server import obj

QUESTIONS = ["What is 2 + 2?", "Capital of France?", "Boiling point of water at sea level?"]


def datasets(quality: dict[str, int]) -> list[Dataset]:
    return [Dataset(session_id=f"s-{who}", assistant_id=who, context="quiz",
                    conversation=[Batch(qa_id=f"q{k}", query=q, assistant=f"answer of quality {quality[who]}",
                                        ground_truth_assistant="ref") for k, q in enumerate(QUESTIONS)])
            for who in quality]


def by_quality(request: dict):
    user = request["messages"][-1]["content"]
    qa, qb = (int(re.search(rf"<<<BEGIN CANDIDATE_{c} \w+>>>\n.*?quality (\d+)", user, re.S).group(1)) for c in "AB")
    v = "A" if qa > qb else "B" if qb > qa else "tie"
    return obj({"evidence": [], "reasoning": "higher quality", "verdict": v})


def test_knockout_bracket_with_a_bye(judge_server):
    judge_server.reply = by_quality
    # sorted ids: alpha, beta, gamma; round 1 alpha vs beta (gamma has the bye), round 2 the winner vs gamma
    result = BestOf.run(datasets({"beta": 3, "alpha": 1, "gamma": 2}), model=f"openai-compatible:m@{judge_server.url}")
    assert len(result) == 1 and isinstance(result[0], BestOfMetric)
    m = result[0]
    assert (m.session_id, m.qa_id, m.bestof_winner_id, m.assistant_id) == ("bestof", "bestof_tournament", "beta", "beta")
    assert [(c.round, c.left_id, c.right_id, c.winner_id) for c in m.bestof_contests] == [
        (1, "alpha", "beta", "beta"), (2, "beta", "gamma", "beta")]
    first = m.bestof_contests[0]
    assert first.confidence == 1.0 and first.reasoning["judged"] == 3
    assert "beta won 3, tied 0, lost 0 of 3 questions against alpha" in first.verdict
    assert len(judge_server.requests) == 2 * 3 * 2  # contests x questions x orders
    text = " ".join(m["content"] for r in judge_server.requests for m in r.json["messages"])
    assert "alpha" not in text and "beta" not in text  # the assistants' ids never reach the judge


def test_a_tie_lets_both_through_and_a_standoff_ends(judge_server):
    judge_server.reply = by_quality
    m = BestOf.run(datasets({"a1": 2, "a2": 2}), model=f"openai-compatible:m@{judge_server.url}")[0]
    assert m.bestof_winner_id == "tie" and [c.winner_id for c in m.bestof_contests] == ["tie"]  # no endless loop


def test_criteria_text_reaches_the_judge(judge_server):
    judge_server.reply = by_quality
    BestOf.run(datasets({"x": 1, "y": 2}), model=f"openai-compatible:m@{judge_server.url}",
               criteria="Which answer is more precise?", both_orders=False)
    assert len(judge_server.requests) == 3
    assert "Which answer is more precise?" in judge_server.requests[0].json["messages"][0]["content"]


def test_contests_are_plain_pydantic_models():
    c = BestOfContest(round=1, left_id="a", right_id="b", winner_id="tie")
    assert c.confidence is None and c.model_dump()["winner_id"] == "tie"
    with pytest.raises(Exception, match="at least 2 assistants"):
        BestOf.run(datasets({"solo": 1}), model="openai-compatible:m@http://127.0.0.1:9/v1")
