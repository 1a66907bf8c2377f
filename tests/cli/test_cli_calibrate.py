"""``assay calibrate`` and ``assay run --judge-card`` as a user runs them, against the scripted judge server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.judge_server import JudgeServer, obj

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "calibration"


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ASSAY_CACHE_DIR": str(tmp_path / "cache"),
           "ASSAY_STORE": str(tmp_path / "runs.sqlite3")}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=tmp_path)


def lenient(request: dict):
    """A judge that calls 'resolved' whatever the agent claims to have done ("I've ...", "Yes, ...")."""
    user = request["messages"][-1]["content"]
    verdict = "resolved" if ("I've" in user or "Yes," in user) else "unresolved"
    return obj({"evidence": [], "reasoning": f"looks {verdict}", "verdict": verdict})


@pytest.fixture()
def server():
    with JudgeServer(lenient) as s:
        yield s


def test_calibrate_prints_the_card_writes_it_and_stores_it(tmp_path, server):
    judge = f"openai-compatible:scripted@{server.url}"
    r = cli(tmp_path, "calibrate", str(EXAMPLE / "traces.jsonl"), "--labels", str(EXAMPLE / "labels.csv"),
            "--judge", judge)
    assert r.returncode == 0, r.stderr
    # the example's 12 labels against this judge: resolved 4 of 6 right, partially_resolved 3 called resolved,
    # unresolved 3 of 3 right
    assert "resolution (resolution@1): 12/12 compared, agreement 58.3%" in r.stdout
    assert "  resolved                             4                   0                   2" in r.stdout
    assert "  c04: human partially_resolved, judge resolved: resolved: looks resolved" in r.stdout
    card = json.loads((tmp_path / "judge-card.json").read_text())
    m = card["metrics"]["resolution"]
    assert m["pass_fail"]["tp"] == 4 and m["pass_fail"]["fn"] == 2 and m["pass_fail"]["fp"] == 3
    assert m["pass_fail"]["tn"] == 3 and card["judge"]["model"] == "openai-compatible:scripted"
    assert f"judge card {card['id']} written to judge-card.json, stored in" in r.stderr

    # the run finds the stored card by itself (same judge, metric, rubric version, threshold)
    run = cli(tmp_path, "run", str(EXAMPLE / "traces.jsonl"), "-m", "resolution", "--judge", judge, "-f", "json",
              "--no-progress")
    assert run.returncode == 1, run.stderr  # some traces fail the threshold
    corr = json.loads(run.stdout)["statistics"]["judge_correction"]["resolution"]
    # 7 of 12 judged resolved; TPR 4/6, TNR 3/6: (7/12 + 1/2 - 1) / (2/3 + 1/2 - 1) = 0.5
    assert corr["raw"] == pytest.approx(7 / 12) and corr["corrected"] == pytest.approx(0.5)
    assert corr["card"] == card["id"] and corr["ci"][0] <= 0.5 <= corr["ci"][1]
    overview = json.loads(run.stdout)["statistics"]["judge"]
    assert overview["calibrated"] == ["resolution"] and overview["uncalibrated"] == [] and overview["notes"] == []
    assert overview["judges"] == ["openai-compatible:scripted"] and overview["failure_rate"] == 0.0
    assert "resolution: pass rate 58.3% as judged, 50.0% corrected for the judge's error rates" in run.stderr


def test_run_refuses_a_card_for_another_rubric_version_or_a_chance_level_judge(tmp_path, server):
    judge = f"openai-compatible:scripted@{server.url}"
    r = cli(tmp_path, "calibrate", str(EXAMPLE / "traces.jsonl"), "--labels", str(EXAMPLE / "labels.csv"),
            "--judge", judge, "--no-store", "-o", "card.json")
    assert r.returncode == 0, r.stderr
    card = json.loads((tmp_path / "card.json").read_text())
    old = json.loads(json.dumps(card))
    old["metrics"]["resolution"]["rubric"] = "resolution@0"
    (tmp_path / "old.json").write_text(json.dumps(old))
    chance = json.loads(json.dumps(card))
    chance["metrics"]["resolution"]["pass_fail"].update(tp=3, fn=3, tn=2, fp=4, tpr=0.5, tnr=1 / 3)
    (tmp_path / "chance.json").write_text(json.dumps(chance))
    for name, why in (("old.json", "the card is for rubric resolution@0, this run sends resolution@1"),
                      ("chance.json", "TPR + TNR = 0.833 <= 1")):
        run = cli(tmp_path, "run", str(EXAMPLE / "traces.jsonl"), "-m", "resolution", "--judge", judge,
                  "--no-store", "-f", "json", "--no-progress", "--judge-card", name)
        corr = json.loads(run.stdout)["statistics"]["judge_correction"]["resolution"]
        assert corr["corrected"] is None and why in corr["refused"], corr
        assert f"resolution: pass rate not corrected with judge card {card['id']}: " in run.stderr
    other = cli(tmp_path, "run", str(EXAMPLE / "traces.jsonl"), "-m", "resolution:threshold=0.4", "--judge", judge,
                "--no-store", "-f", "json", "--no-progress", "--judge-card", "card.json")
    refused = json.loads(other.stdout)["statistics"]["judge_correction"]["resolution"]["refused"]
    assert refused == "the card measured pass/fail at threshold 0.7, this run uses 0.4"


def test_bad_labels_and_missing_card_are_one_error_line(tmp_path, server):
    judge = f"openai-compatible:scripted@{server.url}"
    bad = tmp_path / "bad.csv"
    bad.write_text("trace_id,metric,label\nc01,resolution,fixed\n")
    r = cli(tmp_path, "calibrate", str(EXAMPLE / "traces.jsonl"), "--labels", str(bad), "--judge", judge)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"Error: {bad}:2: label 'fixed' means nothing for metric 'resolution'; expected one of pass, fail, "
        "resolved, partially_resolved, unresolved"]
    assert not (tmp_path / "judge-card.json").exists() and not server.requests  # checked before the judge is paid
    r = cli(tmp_path, "run", str(EXAMPLE / "traces.jsonl"), "-m", "resolution", "--judge", judge, "--no-store",
            "--judge-card", "nope.json")
    assert r.returncode == 2 and r.stderr.strip() == "Error: --judge-card 'nope.json': no such file"


def test_run_with_repeats_prints_test_retest(tmp_path, server):
    judge = f"openai-compatible:scripted@{server.url}"
    r = cli(tmp_path, "run", str(EXAMPLE / "traces.jsonl"), "-m", "resolution", "--judge", judge, "--no-store",
            "--no-progress", "--repeats", "2")
    assert r.returncode == 1, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("resolution: test-retest"))
    # this judge answers from the text alone: it never contradicts itself, whatever the option order
    assert line.startswith("resolution: test-retest over 2 repeats: 0 of 12 traces unstable (0%")
    assert "self-agreement alpha 1.000" in line and "position agreement 100.0%" in line


def test_a_jury_from_repeated_judge_flags_and_from_judge_tables(tmp_path):
    from tests.support.judge_server import status

    def by_model(request: dict):
        if request["model"] == "j3":
            return status(500, "juror down")
        return lenient(request) if request["model"] == "j1" else obj(
            {"evidence": [], "reasoning": "strict", "verdict": "unresolved"})

    with JudgeServer(by_model) as s:
        jurors = [f"openai-compatible:j{i}@{s.url}" for i in (1, 2, 3)]
        r = cli(tmp_path, "run", str(EXAMPLE / "traces.jsonl"), "-m", "resolution", "--no-store", "--no-progress",
                "-f", "json", "--judge-weight", "2", "--judge-weight", "1", "--judge-weight", "1",
                *[a for j in jurors for a in ("--judge", j)])
        assert r.returncode == 1, r.stderr
        out = json.loads(r.stdout)
        jury = out["statistics"]["jury"]["resolution"]
        assert jury["juror_failures"] == {"openai-compatible:j3": 12} and jury["n"] == 12
        # j1 (weight 2) says resolved on 7 traces, j2 (weight 1) never: j1 outvotes j2 on those 7 (disagreements)
        assert jury["disagreements"] == 7
        overview = out["statistics"]["judge"]
        assert overview["uncalibrated"] == ["resolution"] and overview["failure_rate"] == pytest.approx(12 / 36)
        assert overview["notes"][0].startswith("uncalibrated judge for resolution: no judge card applies")
        assert [x["requests"] for x in out["run"]["judge"]["jurors"]] == [12, 12, 12]
        assert sum(t["metrics"]["resolution"]["passed"] for t in out["traces"]) == 7
        assert "resolution: jury of 3: agreement across jurors alpha" in r.stderr
        assert "openai-compatible:j3 failed on 12 (dropped there, its weight shared out)" in r.stderr

        (tmp_path / "assay.toml").write_text("".join(f'[[judge]]\nmodel = "{j}"\n' for j in jurors[:2]))
        r = cli(tmp_path, "run", str(EXAMPLE / "traces.jsonl"), "-m", "resolution", "--no-store", "--no-progress",
                "-f", "json")
        out = json.loads(r.stdout)
        assert out["run"]["judge"]["model"] == f"jury({jurors[0].split('@')[0]}, {jurors[1].split('@')[0]})"
        # equal weights: the 7 split votes are ties, scored by the mean (0.5, below the 0.7 threshold)
        assert sum(t["metrics"]["resolution"]["passed"] for t in out["traces"]) == 0
        bad = cli(tmp_path, "run", str(EXAMPLE / "traces.jsonl"), "-m", "resolution", "--no-store",
                  "--judge-weight", "1", "--judge", jurors[0], "--judge", jurors[1], "--judge", jurors[2])
        assert bad.returncode == 2
        assert bad.stderr.strip().splitlines()[-1] == "Error: 1 --judge-weight for 3 --judge: give one per judge"


def test_labels_that_match_no_trace_are_counted_in_a_warning(tmp_path, server):
    labels = tmp_path / "labels.csv"
    rows = (EXAMPLE / "labels.csv").read_text().splitlines()
    labels.write_text("\n".join(rows + [f"ghost{i:06d},resolution,resolved" for i in range(20_000)]) + "\n")
    r = cli(tmp_path, "calibrate", str(EXAMPLE / "traces.jsonl"), "--labels", str(labels),
            "--judge", f"openai-compatible:scripted@{server.url}", "--no-store")
    assert r.returncode == 0, r.stderr
    assert (f"Warning: {labels}: 20,000 of 20,012 labels name no scored trace (e.g. 'ghost000000', 'ghost000001', "
            "'ghost000002'); the card leaves them out") in r.stderr
    assert json.loads((tmp_path / "judge-card.json").read_text())["labels"]["unmatched"] == 20_000


def test_calibrate_makes_a_failure_rate_card_from_its_own_labels(tmp_path):
    """The six labels of failure_rate are labels of the card, not 'means nothing' (per-label recall printed)."""
    said = {"Acme": "hallucination", "Tokyo": "not_applicable", "depends": "not_applicable"}

    def reply(request):
        user = request["messages"][-1]["content"]
        verdict = next(v for word, v in said.items() if word in user)
        return obj({"findings": [], "reason": f"read as {verdict}", "verdict": verdict})
    rows = [("f1", "What did Acme close at?", "Acme closed at $184.27.", "hallucination"),
            ("f2", "Capital of Japan?", "Tokyo.", "not_applicable"),
            ("f3", "Who wins next year?", "It depends on many factors.", "stall")]
    traces = tmp_path / "t.jsonl"
    traces.write_text("".join(json.dumps({"id": i, "turns": [{"input": q, "output": a}]}) + "\n" for i, q, a, _ in rows))
    labels = tmp_path / "labels.csv"
    labels.write_text("trace_id,label\n" + "".join(f"{i},{lab}\n" for i, _, _, lab in rows))
    with JudgeServer(reply) as s:
        r = cli(tmp_path, "calibrate", str(traces), "--labels", str(labels), "-m", "failure_rate",
                "--judge", f"openai-compatible:scripted@{s.url}", "--no-store")
    assert r.returncode == 0, r.stderr
    assert "failure_rate (failure_rate@" in r.stdout and "3/3 compared, agreement 66.7%" in r.stdout
    assert "  stall: recall 0/1, precision -" in r.stdout
    assert "  hallucination: recall 1/1, precision 1/1" in r.stdout
    assert "  not_applicable: recall 1/1, precision 1/2" in r.stdout
    card = json.loads((tmp_path / "judge-card.json").read_text())
    assert card["metrics"]["failure_rate"]["per_label"]["stall"] == {"human": 1, "judge": 0, "agreed": 0,
                                                                     "recall": 0.0, "precision": None}
