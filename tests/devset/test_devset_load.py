"""The written development set's loader (benchmarks/devset_load.py), on a small hand-written
fixture set (tests/data/devset) whose agreement figures are computed by hand below, and on
the committed set (benchmarks/devset) once it is there. No judge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assay import read_traces
from benchmarks import devset_load

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "devset"


@pytest.fixture(scope="module")
def fixture_set() -> devset_load.DevSet:
    return devset_load.load(FIXTURE)


def test_fixture_set_loads_without_problems(fixture_set):
    assert fixture_set.problems == []
    assert [i.id for i in fixture_set.items["failure_rate"]] == [
        "A-fr-001", "A-fr-002", "A-fr-003", "B-fr-001", "B-fr-002", "C-fr-001", "D-fr-001", "D-fr-002"]
    assert len(fixture_set.items["goal_achievement_rate"]) == 6
    assert fixture_set.labellers[("C", "failure_rate")] == "LB"


def test_second_labels_from_blind_ids_are_mapped_back(fixture_set):
    # labels/LB_on_C_*.jsonl use the blind copies' ids; private/map_C.json maps them back
    c = {i.id: i.second for m in devset_load.METRICS for i in fixture_set.items[m] if i.writer == "C"}
    assert c == {"C-fr-001": ("LB", "alternative_proposed", "points to the advice service"),
                 "C-ga-001": ("LB", "fully", "the dose was what mattered")}


def test_failure_rate_agreement_by_hand(fixture_set):
    # 7 relabelled pairs (writer, second): (h,h) (na,na) (stall,mixed) (h,h) (hf,ap) (ap,ap) (mixed,mixed).
    # p_o = 5/7; writer marginals h2 s1 m1 hf1 ap1 na1, second h2 s0 m2 hf0 ap2 na1:
    # p_e = (4 + 0 + 2 + 0 + 2 + 1) / 49 = 9/49; kappa = (35/49 - 9/49) / (40/49) = 26/40.
    table = devset_load.agreement_table(fixture_set, "failure_rate")
    assert table["all"]["n"] == 7
    assert table["all"]["exact"] == pytest.approx(5 / 7)
    assert table["all"]["kappa"] == pytest.approx(26 / 40)
    # WA: (h,h) (na,na) (stall,mixed): p_o 2/3, p_e (1 + 1 + 0) / 9; kappa (6/9 - 2/9) / (7/9) = 4/7
    assert table["A"]["kappa"] == pytest.approx(4 / 7)
    assert (table["D"]["n"], table["D"]["exact"], table["D"]["kappa"]) == (1, 1.0, None)  # one category: undefined
    assert "weighted_kappa" not in table["all"]
    assert sorted(table) == ["A", "B", "C", "D", "all"]  # D-fr-002 has no second label and is not counted


def test_goal_agreement_by_hand_unweighted_and_quadratic(fixture_set):
    # 6 pairs on the scale none=0 .. fully=4: (4,4) (2,1) (0,0) (3,4) (1,1) (2,2). p_o = 4/6.
    # writer counts by level [1,1,2,1,1], second [1,2,1,0,2]: p_e = (1+2+2+0+2)/36 = 7/36;
    # kappa = (24/36 - 7/36) / (29/36) = 17/29.
    # quadratic: observed disagreement (1/16 + 1/16) / 6 = 1/48; expected sum (i-j)^2 r_i c_j = 144,
    # / (16 * 36) = 1/4; weighted kappa = 1 - (1/48) / (1/4) = 11/12.
    a = devset_load.agreement_table(fixture_set, "goal_achievement_rate")["all"]
    assert a["n"] == 6 and a["exact"] == pytest.approx(4 / 6)
    assert a["kappa"] == pytest.approx(17 / 29)
    assert a["weighted_kappa"] == pytest.approx(11 / 12)
    # the matrix: rows the writer's level, columns the second labeller's, in scale order
    assert a["matrix"] == [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 0, 1]]


def test_agreed_items_by_half_with_scores_and_adjudication(fixture_set):
    tuning = devset_load.items("failure_rate", "tuning", FIXTURE)
    heldback = devset_load.items("failure_rate", "heldback", FIXTURE)
    # A-fr-003 (stall vs mixed) is left out; D-fr-002 (never relabelled) too; B-fr-002 (honest_fallback
    # vs alternative_proposed) is kept by adjudicated.jsonl with the adjudicated label
    assert [(i["id"], i["label"], i["score"]) for i in tuning] == [
        ("A-fr-001", "hallucination", 0.0), ("A-fr-002", "not_applicable", 1.0),
        ("C-fr-001", "alternative_proposed", 1.0)]
    assert [(i["id"], i["label"], i["score"], i["writer"]) for i in heldback] == [
        ("B-fr-001", "hallucination", 0.0, "B"), ("B-fr-002", "honest_fallback", 1.0, "B"),
        ("D-fr-001", "mixed", 0.6, "D")]
    goal = devset_load.items("goal_achievement_rate", None, FIXTURE)
    assert [(i["id"], i["score"]) for i in goal] == [("A-ga-001", 1.0), ("B-ga-001", 0.0), ("D-ga-001", 0.3),
                                                     ("D-ga-002", 0.7)]
    assert goal[-1]["expected"] == {"goal": "Convert the oven temperature and the butter weight."}
    with pytest.raises(ValueError, match="half must be one of"):
        devset_load.items("failure_rate", "train", FIXTURE)


def test_disagreements_md_lists_both_notes(fixture_set):
    text = devset_load.disagreements_md(fixture_set)
    assert "| A-fr-003 | stall | two vague replies about the refund, no admission, no pointer | mixed (LD) " \
           "| the first reply is at least a partial answer | - |" in text
    assert "| B-fr-002 | honest_fallback |" in text and "honest_fallback: no pointer is given" in text
    assert "## goal_achievement_rate (2)" in text and "| C-ga-001 | mostly |" in text


def test_check_prints_counts_and_agreement(capsys):
    assert devset_load.main(["--check", "--root", str(FIXTURE)]) == 0
    out = capsys.readouterr().out
    assert "all   n=7    exact 0.71  kappa 0.65" in out
    assert "all   n=6    exact 0.67  kappa 0.59  weighted 0.92" in out
    assert "kept, heldback     3: hallucination 1, stall 0, mixed 1, honest_fallback 1" in out
    assert "left out: 1 disagreements (1 adjudicated and kept), 1 not relabelled" in out
    assert out.rstrip().endswith("0 problem(s)")


def test_markdown_tables_for_the_readme(fixture_set):
    text = devset_load.markdown(fixture_set)
    assert "| all | 7 / 0.71 / 0.65 | 6 / 0.67 / 0.59 / 0.92 |" in text
    assert "| A | 3 / 0.67 / 0.57 | 2 / 0.50 / 0.33 / 0.86 |" in text
    assert "| heldback (B, D, F) | 3 (hallucination 1, stall 0, mixed 1, honest_fallback 1," in text


def test_shape_counts_turns_tools_context_and_goals(fixture_set):
    a = [i for i in fixture_set.items["goal_achievement_rate"] if i.writer == "A"]
    assert devset_load.shape(a) == "1/1/0/0/0/0; tools 1 (50%); context 0 (0%); goal 1 (50%)"


def _write(path: Path, lines: list[object]) -> None:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")


def test_invalid_items_are_named_and_fail_the_check(tmp_path, capsys):
    root = tmp_path / "devset"
    shutil.copytree(FIXTURE, root)
    turn = {"input": "hi", "output": "hello"}
    _write(root / "WB" / "failure_rate.jsonl", [
        {"id": "B-fr-001", "label": "hallucination", "note": "ok", "turns": [turn]},
        {"id": "B-fr-002", "label": "guessing", "note": "bad label", "turns": [turn]},
        {"id": "B-fr-003", "label": "stall", "note": "no turns", "turns": []},
        {"id": "B-fr-001", "label": "stall", "note": "the id again", "turns": [turn]},
        {"id": "B-fr-005", "label": "stall", "note": "arguments as text", "turns": [
            {"input": "run it", "output": "done", "tool_calls": [{"name": "run", "arguments": "--all"}]}]},
        {"id": "B-fr-006", "label": "stall", "note": "a stray field", "turns": [turn], "score": 0.4},
        {"id": "A-fr-007", "label": "stall", "note": "another writer's id", "turns": [turn]},
        {"id": "B-fr-008", "label": "stall", "note": "", "turns": [{"input": "hi", "output": ""}]},
        "{not json",
    ])
    _write(root / "labels" / "LA_on_B_failure_rate.jsonl", [
        {"id": "B-fr-001", "label": "hallucination", "note": "ok"},
        {"id": "B-fr-001", "label": "stall", "note": "twice"},
        {"id": "x00000000", "label": "stall", "note": "an unknown blind id"},
        {"id": "B-fr-005", "label": "maybe", "note": "bad label"},
    ])
    ds = devset_load.load(root)
    where = "WB/failure_rate.jsonl"
    expected = [
        f"{where}:2: label: 'guessing' is not one of",
        f"{where}:3: turns: expected a non-empty list",
        f"{where}:4: id 'B-fr-001' also at {where}:1",
        f"{where}:5: as an assay trace: turns[0].tool_calls[0].arguments: expected an object, got string",
        f"{where}:6: unknown field(s) ['score']",
        f"{where}:7: id: 'A-fr-007' should read B-fr-<number>",
        f"{where}:8: note: expected a one-line reason",
        f"{where}:8: turns[0].output: expected non-empty text",
        f"{where}:9: not JSON",
        "labels/LA_on_B_failure_rate.jsonl:2: B-fr-001 labelled twice (also by LA)",
        "labels/LA_on_B_failure_rate.jsonl:3: id 'x00000000' is no valid failure_rate item of writer WB",
        "labels/LA_on_B_failure_rate.jsonl:4: id 'B-fr-005' is no valid failure_rate item of writer WB",
        "adjudicated.jsonl:1: no item 'B-fr-002'",  # B-fr-002 is invalid now
    ]
    for text in expected:
        assert any(p.startswith(text) for p in ds.problems), (text, ds.problems)
    assert len(ds.problems) == len(expected)
    assert devset_load.main(["--check", "--root", str(root)]) == 1
    assert "13 problem(s):" in capsys.readouterr().out
    with pytest.raises(ValueError, match="13 problem"):
        devset_load.items("failure_rate", None, root)


def test_write_regenerates_disagreements_md(tmp_path):
    root = tmp_path / "devset"
    shutil.copytree(FIXTURE, root)
    assert devset_load.main(["--write", "--root", str(root)]) == 0
    written = (root / "DISAGREEMENTS.md").read_text(encoding="utf-8")
    assert written == devset_load.disagreements_md(devset_load.load(root))
    assert "| A-fr-003 | stall |" in written


# -- the committed set -----------------------------------------------------------------------------

committed = pytest.mark.skipif(not devset_load.present(), reason="the written development set is not committed "
                               "under benchmarks/devset/ yet (the lead copies it in; see its README.md)")


@pytest.fixture(scope="module")
def committed_set() -> devset_load.DevSet:
    return devset_load.load()


@committed
def test_committed_set_is_valid(committed_set):
    assert committed_set.problems == []


@committed
@pytest.mark.parametrize("metric", devset_load.METRICS)
def test_committed_set_is_large_split_by_writer_and_balanced(committed_set, metric):
    agreed = committed_set.agreed(metric)
    assert len(agreed) >= 200, f"{metric}: {len(agreed)} agreed items"
    halves = {h: committed_set.agreed(metric, h) for h in devset_load.HALVES}
    writers = {h: {i.writer for i in items} for h, items in halves.items()}
    assert not writers["tuning"] & writers["heldback"]
    assert {"A", "C"} <= writers["tuning"] and {"B", "D"} <= writers["heldback"], writers
    assert all(devset_load.HALF_OF_WRITER[w] == h for h, ws in writers.items() for w in ws)
    for h, items in halves.items():
        missing = set(devset_load.labels_of(metric)) - {i.agreed_label for i in items}
        assert not missing, f"{metric}: no {sorted(missing)} in the {h} half"
    # no phrasing crosses the halves: no user message or agent reply appears in both
    texts = {h: {t[k].strip().lower() for i in items for t in i.record["turns"] for k in ("input", "output")}
             for h, items in halves.items()}
    shared = {t for t in texts["tuning"] & texts["heldback"] if len(t) > 40}
    assert not shared, f"{metric}: text in both halves: {sorted(shared)[:3]}"


@committed
def test_committed_items_are_unique_and_read_as_traces(committed_set, tmp_path):
    every = [i for m in devset_load.METRICS for i in devset_load.items(m)]
    ids = [i["id"] for i in every]
    assert len(ids) == len(set(ids))
    path = tmp_path / "traces.jsonl"
    _write(path, [{k: v for k, v in i.items() if k not in ("label", "score", "note", "writer")} for i in every])
    read = [r for _, r in read_traces(path, input_format="assay", strict=True)]
    assert [t.id for t in read] == ids


@committed
def test_committed_disagreements_md_is_current(committed_set):
    path = devset_load.ROOT / "DISAGREEMENTS.md"
    if not path.exists() and not any(committed_set.disagreements(m) for m in devset_load.METRICS):
        pytest.skip("no disagreements and no DISAGREEMENTS.md")
    assert path.exists() and path.read_text(encoding="utf-8") == devset_load.disagreements_md(committed_set), \
        "DISAGREEMENTS.md is missing or stale: run python benchmarks/devset_load.py --write"
