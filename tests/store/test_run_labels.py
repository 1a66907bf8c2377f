"""Run names and tags, dry runs not stored, `assay runs prune`, and `assay runs` at 80 columns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from assay.store import RunStore

EXAMPLES = Path(__file__).parents[2] / "examples" / "traces.jsonl"


def assay(*args: str, store: Path | None, cols: int = 80, answer: str = "",
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``assay ARGS`` with ``answer`` on stdin (none: stdin is closed at once)."""
    env = {**os.environ, "COLUMNS": str(cols), **({"ASSAY_STORE": str(store)} if store else {}), **(env or {})}
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True, text=True, env=env,
                          input=answer, timeout=120)


def test_name_and_tags_are_stored_and_listed(tmp_path):
    store = tmp_path / "runs.sqlite3"
    r = assay("run", str(EXAMPLES), "-m", "tool_selection_accuracy", "--name", "baseline-v1", "--tag", "model=gpt-4o",
              "--tag", "team=support", "-f", "json", store=store)
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout)["run"]["name"] == "baseline-v1"
    assay("run", str(EXAMPLES), "-m", "tool_selection_accuracy", store=store)
    info = RunStore(store).runs()[1]
    assert info.config["name"] == "baseline-v1" and info.config["tags"] == {"model": "gpt-4o", "team": "support"}
    listing = assay("runs", store=store).stdout
    assert max(len(line) for line in listing.splitlines()) <= 80
    ids = [i.id for i in RunStore(store).runs()]
    assert all(i in listing for i in ids)  # ids are never cut
    assert f"{ids[1]}  baseline-v1  (model=gpt-4o,team=support)" in listing
    assert "completed" in listing and " 1 " in listing  # status whole; the metric count
    wide = assay("runs", store=store, cols=140).stdout
    assert "baseline-v1 model=gpt-4o,team=support" in wide
    show = assay("runs", "show", ids[1], store=store).stdout
    assert f"run {ids[1]} (baseline-v1)" in show and "tags model=gpt-4o,team=support" in show
    assert "metrics (1):" in show and "tool_selection_accuracy v" in show and "judge none" in show


def test_a_bad_tag_is_one_error_line(tmp_path):
    r = assay("run", str(EXAMPLES), "--tag", "nokey", store=tmp_path / "s.sqlite3")
    assert r.returncode == 2 and r.stderr.strip() == "Error: --tag 'nokey': expected KEY=VALUE"


def test_dry_runs_are_not_stored(tmp_path):
    store = tmp_path / "runs.sqlite3"
    r = assay("run", str(EXAMPLES), "-m", "answer_relevance", "--judge", "openai:gpt-4o-mini", "--dry-run", store=store)
    assert r.returncode == 0, r.stderr  # a dry run is a plan: exit 0
    assert r.stdout.startswith("dry run: nothing was sent and no run was stored") and " stored in " not in r.stderr
    assert not store.exists() or RunStore(store).runs() == []


def test_prune_deletes_unfinished_runs_and_old_ones_with_keep(tmp_path):
    store = tmp_path / "runs.sqlite3"
    for _ in range(3):
        assay("run", str(EXAMPLES), "-m", "tool_selection_accuracy", store=store)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "turns": [{"input": "q"}]}\nnot json\n')
    assay("run", str(bad), "--strict", store=store)  # stops at the bad record: recorded as failed
    before = RunStore(store).runs()
    assert [i.status for i in before].count("failed") == 1
    dry = assay("runs", "prune", "--dry-run", store=store)
    assert "1 run(s) to delete, 3 kept" in dry.stdout and len(RunStore(store).runs()) == 4
    assert "1 run(s) deleted, 3 kept" in assay("runs", "prune", "--yes", store=store).stdout
    assert [i.status for i in RunStore(store).runs()] == ["completed"] * 3
    newest = RunStore(store).runs()[0].id
    assert "2 run(s) deleted, 1 kept" in assay("runs", "prune", "--keep", "1", store=store, answer="y\n").stdout
    assert [i.id for i in RunStore(store).runs()] == [newest]


def _runs(store: Path, *labels: tuple[str, ...]) -> list[str]:
    """One completed run per label (``("--name", "a", "--tag", "k=v")``), oldest first: their ids."""
    for label in labels:
        assert assay("run", str(EXAMPLES), "-m", "tool_selection_accuracy", *label, store=store).returncode == 1
    return [i.id for i in reversed(RunStore(store).runs())]


def test_prune_on_the_default_store_needs_a_scope(tmp_path):
    home = tmp_path / "home"
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "ASSAY_STORE": ""}
    r = assay("runs", "prune", "--keep", "0", "--yes", store=None, env=env)
    assert r.returncode == 2 and "the default run store holds every project's runs" in r.stderr
    assert "--name NAME, --tag KEY=VALUE or --store PATH" in r.stderr


def test_prune_deletes_only_the_runs_in_its_scope(tmp_path):
    store = tmp_path / "runs.sqlite3"
    a1, b1, a2, b2 = _runs(store, ("--name", "a", "--tag", "team=x"), ("--name", "b"),
                           ("--name", "a", "--tag", "team=y"), ("--name", "b", "--tag", "team=x"))
    dry = assay("runs", "prune", "--keep", "0", "--name", "a", "--dry-run", store=store)
    assert dry.returncode == 0 and f"would delete {a1} (completed)" in dry.stdout and b1 not in dry.stdout
    assert "2 run(s) to delete, 0 kept" in dry.stdout and len(RunStore(store).runs()) == 4
    r = assay("runs", "prune", "--keep", "0", "--tag", "team=x", "--yes", store=store)
    assert r.returncode == 0 and "2 run(s) deleted, 0 kept" in r.stdout
    assert sorted(i.id for i in RunStore(store).runs()) == sorted([b1, a2])
    r = assay("runs", "prune", "--keep", "0", "--name", "a", "--tag", "team=y", "--yes", store=store)
    assert "1 run(s) deleted, 0 kept" in r.stdout and [i.id for i in RunStore(store).runs()] == [b1]


def test_prune_asks_first_and_deletes_nothing_without_a_yes(tmp_path):
    store = tmp_path / "runs.sqlite3"
    ids = _runs(store, (), ())
    for answer in ("", "n\n"):  # stdin closed, then a no
        r = assay("runs", "prune", "--keep", "0", store=store, answer=answer)
        assert r.returncode == 2 and f"Delete 2 run(s) from {store}?" in r.stderr
        assert "nothing deleted: not confirmed" in r.stderr and len(RunStore(store).runs()) == 2
    r = assay("runs", "prune", "--keep", "0", store=store, answer="y\n")
    assert r.returncode == 0 and f"to delete {ids[0]} (completed)" in r.stdout and RunStore(store).runs() == []
