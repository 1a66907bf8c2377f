"""benchmarks/judge_quality.py's figures (by hand) and its plumbing on the written set's fixture,
with the scripted judge server answering."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from benchmarks import devset_load, judge_quality
from tests.support.judge_server import fitting

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "devset"
FR = devset_load.labels_of("failure_rate")
W = devset_load.WEIGHTS["failure_rate"]


def _item(n: int, label: str, writer: str = "A") -> dict:
    return {"id": f"{writer}-fr-{n:03d}", "label": label, "score": W[label], "writer": writer}


def test_figures_by_hand():
    rows = [(_item(1, "hallucination"), "hallucination", 0.0),
            (_item(2, "hallucination"), "stall", 0.4),
            (_item(3, "not_applicable"), "hallucination", 0.0),
            (_item(4, "honest_fallback"), "honest_fallback", 1.0),
            (_item(5, "stall"), None, None),                      # errored: no verdict
            (_item(6, "mixed", "B"), "mixed", 0.6)]
    f = judge_quality.figures("failure_rate", rows, FR)
    assert f["items"] == 6 and f["errored"] == 1
    # rows the label, columns the judge's (hallucination, stall, mixed, honest_fallback, alternative, n/a)
    assert f["confusion"] == [[1, 1, 0, 0, 0, 0], [0] * 6, [0, 0, 1, 0, 0, 0], [0, 0, 0, 1, 0, 0], [0] * 6,
                              [1, 0, 0, 0, 0, 0]]
    assert f["errored_by_label"] == [0, 1, 0, 0, 0, 0]
    assert f["exact"] == pytest.approx(3 / 5)
    # kappa: p_o 3/5; truth h2 m1 hf1 na1, judge h2 s1 m1 hf1: p_e (4 + 1 + 1) / 25; (15 - 6) / (25 - 6)
    assert f["kappa"] == pytest.approx(9 / 19)
    assert f["mae"] == pytest.approx((0 + 0.4 + 1 + 0 + 0) / 5)
    assert f["pass_fail"] == pytest.approx(4 / 5)  # only n/a (1.0) called hallucination (0.0) crosses 0.7
    # 2 true hallucinations, 1 caught; 2 called hallucination, 1 right; 1 of the 3 others called hallucination
    assert f["hallucination"] == {"recall": "1/2", "precision": "1/2", "false_alarms": "1/3",
                                  "false_alarm_share": pytest.approx(1 / 3)}
    assert f["recall"] == {"hallucination": "1/2", "honest_fallback": "1/1", "mixed": "1/1",
                           "not_applicable": "0/1", "stall": "0/1"}


def test_figures_on_the_goal_scale_weigh_by_distance():
    ga = devset_load.labels_of("goal_achievement_rate")
    weights = devset_load.WEIGHTS["goal_achievement_rate"]

    def item(n: int, lab: str) -> dict:
        return {"id": f"A-ga-{n:03d}", "label": lab, "score": weights[lab], "writer": "A"}

    rows = [(item(1, "fully"), "fully", 1.0), (item(2, "mostly"), "fully", 1.0), (item(3, "none"), "none", 0.0),
            (item(4, "partial"), "minor", 0.3)]
    f = judge_quality.figures("goal_achievement_rate", rows, ga)
    # truth by level [1, 0, 1, 1, 1], judge [1, 1, 0, 0, 2]: p_e = (1 + 0 + 0 + 0 + 2) / 16, p_o 2/4
    assert f["kappa"] == pytest.approx((8 / 16 - 3 / 16) / (1 - 3 / 16))
    # quadratic, distances /4: observed (1/16 + 1/16) / 4; expected sum (i-j)^2 r_i c_j / 16 / 16
    r, c = [1, 0, 1, 1, 1], [1, 1, 0, 0, 2]
    expected = sum((i - j) ** 2 * r[i] * c[j] for i in range(5) for j in range(5)) / 16 / 16
    assert f["weighted_kappa"] == pytest.approx(1 - (2 / 16 / 4) / expected)
    assert "hallucination" not in f


@pytest.mark.parametrize("half", devset_load.HALVES)
def test_run_metric_on_the_fixture_with_the_scripted_judge(judge_server, half):
    judge_server.reply = fitting  # a verdict that fits whatever the metric asks
    dump = io.StringIO()
    out = judge_quality.run_metric("failure_rate", f"openai-compatible:m@{judge_server.url}",
                                   {"prompt_style": "compact"}, None, half, dump, None, "devset", FIXTURE)
    data = devset_load.items("failure_rate", half, FIXTURE)
    assert out["items"] == len(data) == 3
    assert out["calls"] == len(judge_server.requests) >= len(data)
    assert out["calls_per_item"] == pytest.approx(out["calls"] / len(data))
    assert sum(map(sum, out["confusion"])) + out["errored"] == len(data)
    assert [sum(r) + e for r, e in zip(out["confusion"], out["errored_by_label"])] == \
           [sum(i["label"] == lab for i in data) for lab in FR]
    writers = {"tuning": {"A": 2, "C": 1}, "heldback": {"B": 2, "D": 1}}[half]
    assert {w: f["items"] for w, f in out["writers"].items()} == writers
    lines = [json.loads(x) for x in dump.getvalue().splitlines()]
    assert [(x["id"], x["label"], x["writer"]) for x in lines] == [(i["id"], i["label"], i["writer"]) for i in data]
    # no label, note or writer reaches the judge: only the conversation
    sent = json.dumps([r.json for r in judge_server.requests])
    assert not any(i["note"][:30] in sent for i in data)
    text = judge_quality.render("failure_rate", {half: out}, "test")
    assert f"confusion ({half}): rows the label" in text and f"per writer ({half})" in text


def test_devset_takes_its_two_metrics_only(capsys):
    with pytest.raises(SystemExit) as exc:
        judge_quality.main(["--judge", "openai-compatible:m@http://127.0.0.1:9/v1", "--set", "devset",
                            "--devset-root", str(FIXTURE), "--metric", "accuracy"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "labels failure_rate, goal_achievement_rate only; use --set templates for accuracy" in err


def test_per_label_subset_takes_the_writers_in_turn():
    data = [_item(n, "stall", "A") for n in range(1, 4)] + [_item(n, "stall", "B") for n in range(1, 4)] \
        + [_item(9, "mixed", "B")]
    got = judge_quality.subset(data, 3)
    assert [i["id"] for i in got] == ["A-fr-001", "B-fr-001", "B-fr-009", "A-fr-002"]
    templates = [{"id": f"fr-0{n}-stall", "label": "stall"} for n in range(3)]
    assert judge_quality.subset(templates, 2) == templates[:2]  # the template set: first N, as before
