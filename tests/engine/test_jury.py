"""A three-judge jury against the scripted server (jurors told apart by model name), one of them failing."""

from __future__ import annotations

import pytest

from assay import Evaluation
from assay.engine._jury import Jury
from assay.errors import ConfigError
from assay.judge import make_judge
from tests.support.judge_server import JudgeServer, obj, status

# per trace: what jurors j1, j2, j3 answer (None: HTTP 500, the juror fails on that item)
VOTES = {
    "01": ("resolved", "resolved", None),
    "02": ("resolved", "unresolved", None),
    "03": ("resolved", "unresolved", "unresolved"),
    "04": ("partially_resolved", "partially_resolved", "partially_resolved"),
}


def trace(case: str) -> dict:
    return {"id": f"t{case}", "turns": [{"input": f"Where is case-{case} ?", "output": f"Checking case-{case} now."}]}


def server_for(table: dict, make) -> JudgeServer:
    def reply(request: dict):
        user = request["messages"][-1]["content"]
        case = next(c for c in table if f"case-{c} " in user)
        juror = int(request["model"][1]) - 1
        return make(table[case][juror])
    return JudgeServer(reply)


def jury(server: JudgeServer, weights=None, scores="mean") -> Jury:
    return Jury([make_judge(f"openai-compatible:j{i}@{server.url}", cache=False, retries=0, reasks=0, timeout=5.0)
                 for i in (1, 2, 3)], weights, scores=scores)


def label(verdict):
    return status(500, "juror down") if verdict is None else obj({"evidence": [], "reasoning": verdict, "verdict": verdict})


def test_majority_with_a_failing_juror_dropped_and_alpha_across_jurors():
    with server_for(VOTES, label) as server:
        j = jury(server)
        res = Evaluation(["resolution"], judge=j).run([trace(c) for c in VOTES])
        assert len(server.requests) == 12  # every juror asked on every trace, each call its own
    r = {t.id: t.metrics["resolution"] for t in res.traces}
    one = r["t01"].details["jury"]
    assert r["t01"].score == 1.0 and one["aggregate"] == "majority" and one["verdict"] == "resolved"
    assert list(one["failed"]) == ["openai-compatible:j3"] and "juror down" in one["failed"]["openai-compatible:j3"]
    assert one["weights"] == {"openai-compatible:j1": 0.5, "openai-compatible:j2": 0.5}  # j3's third redistributed
    assert r["t01"].details["jury_disagree"] is False
    # a tied vote goes to the lower-weight label (never a mean no juror chose)
    assert r["t02"].score == 0.0 and r["t02"].details["jury"]["verdict"] == "unresolved"
    assert r["t02"].details["jury"]["tie"] and r["t02"].details["jury"]["verdicts"] == ["resolved", "unresolved", None]
    assert r["t02"].details["jury_disagree"] is True and r["t02"].passed is False
    assert r["t03"].score == 0.0 and r["t03"].details["jury"]["verdict"] == "unresolved"
    assert r["t04"].score == 0.5 and r["t04"].details["jury_disagree"] is False
    assert r["t03"].judge_calls == 3 and r["t01"].judge_calls == 3
    figures = res.statistics["jury"]["resolution"]
    assert figures["n"] == 4 and figures["disagreements"] == 2
    assert figures["juror_failures"] == {"openai-compatible:j3": 2}
    # nominal alpha: units (r,r) (r,u) (r,u,u) (p,p,p): D_o = (2/1 + 4/2) / 10 = .4; pooled r 4, u 3, p 3:
    # D_e = 2 (12 + 12 + 9) / 90 = 66/90; alpha = 1 - .4 / (66/90) = 5/11
    assert figures["alpha_level"] == "nominal" and figures["alpha"] == pytest.approx(5 / 11)
    jurors = res.run["judge"]["jurors"]
    assert [x["model"] for x in jurors] == ["openai-compatible:j1", "openai-compatible:j2", "openai-compatible:j3"]
    assert [x["requests"] for x in jurors] == [4, 4, 4] and [x["errors"] for x in jurors] == [0, 0, 2]
    assert res.run["judge"]["requests"] == 12 and res.run["judge"]["errors"] == 2  # the jurors summed


def test_weights_break_the_tie():
    with server_for(VOTES, label) as server:
        res = Evaluation(["resolution"], judge=jury(server, weights=[2, 1, 1])).run([trace("02")])
    r = res.traces[0].metrics["resolution"]
    assert r.score == 1.0 and r.details["jury"]["verdict"] == "resolved"
    assert r.details["jury"]["weights"] == {"openai-compatible:j1": pytest.approx(2 / 3),
                                            "openai-compatible:j2": pytest.approx(1 / 3)}


@pytest.mark.parametrize("scores, expected", [("mean", (1 + 0.75 + 0) / 3), ("median", 0.75)], ids=["mean", "median"])
def test_scores_mean_or_median(scores, expected):
    table = {"01": (5, 4, 1)}
    with server_for(table, lambda s: obj({"evidence": [], "reasoning": "ok", "score": s})) as server:
        res = Evaluation(["user_satisfaction"], judge=jury(server, scores=scores)).run([trace("01")])
    r = res.traces[0].metrics["user_satisfaction"]
    assert r.score == pytest.approx(expected) and r.details["jury"]["aggregate"] == scores
    assert r.details["jury_disagree"] is True  # 5 and 4 pass at .7, 1 fails
    assert res.statistics["jury"]["user_satisfaction"]["alpha_level"] == "interval"


def test_every_juror_failing_is_a_judge_error_not_a_score():
    with server_for({"01": (None, None, None)}, label) as server:
        res = Evaluation(["resolution"], judge=jury(server)).run([trace("01")])
    r = res.traces[0].metrics["resolution"]
    assert r.score is None and r.errored and len(r.details["jury"]["failed"]) == 3


def test_a_jury_needs_two_judges_and_sane_weights(judge_server):
    j = make_judge(f"openai-compatible:j1@{judge_server.url}", cache=False)
    with pytest.raises(ConfigError, match="at least two judges"):
        Jury([j])
    with pytest.raises(ConfigError, match="weights must be finite"):
        Jury([j, j], [0, 0])
    with pytest.raises(ConfigError, match="2 judge weights for 3 judges"):
        Jury([j, j, j], [1, 1])


def test_judge_tables_in_a_config_file(tmp_path):
    from assay.engine._config import load_config

    p = tmp_path / "assay.toml"
    p.write_text('[[judge]]\nmodel = "openai:a"\nweight = 2\n[[judge]]\nmodel = "openai:b"\n')
    cfg = load_config(p)
    assert cfg.judge == ["openai:a", "openai:b"] and cfg.judge_weights == [2.0, 1.0]
    p.write_text('[[judge]]\nmodel = "openai:a"\nweight = -1\n')
    with pytest.raises(ConfigError, match=r"\[\[judge\]\] #1: weight must be a finite number >= 0, got -1"):
        load_config(p)
    p.write_text('[[judge]]\nname = "openai:a"\n')
    with pytest.raises(ConfigError, match=r"\[\[judge\]\] #1: expected a table with model"):
        load_config(p)
