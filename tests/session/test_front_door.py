"""Every command starts at the session floor: an ``assay.toml`` in the working directory gives each judging
command its ``[[criteria]]`` metrics, its judge and its ``[judge]`` options, as the real CLI runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import cli_env
from tests.support.judge_server import JudgeServer, fitting

TRACES = [{"id": f"t{i}", "task_id": f"task{i}", "turns": [{"input": "Where is my order?",
                                                           "output": "It arrives tomorrow. Thank you for asking!"}]}
          for i in range(3)]
OTHER = [{**t, "turns": [{"input": "Where is my order?", "output": "Check the site."}]} for t in TRACES]


def config(url: str) -> str:
    return f'''
[judge]
model = "openai-compatible:scripted@{url}"
temperature = 0.25
prompt_style = "compact"

[[criteria]]
name = "polite"
criteria = "Is the reply polite?"
labels = {{ polite = 1.0, curt = 0.0 }}
'''


def assay(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True, text=True,
                          env=cli_env(cwd), cwd=cwd, timeout=120)


@pytest.fixture()
def project(tmp_path):
    with JudgeServer(fitting) as server:
        (tmp_path / "assay.toml").write_text(config(server.url))
        (tmp_path / "a.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TRACES))
        (tmp_path / "b.jsonl").write_text("".join(json.dumps(t) + "\n" for t in OTHER))
        yield tmp_path, server


def judged_with_config_options(server: JudgeServer) -> bool:
    """Calls were made, each with the config's [judge] temperature."""
    return bool(server.requests) and all(r.json.get("temperature") == 0.25 for r in server.requests)


def test_metrics_lists_and_documents_a_criteria_metric(project):
    cwd, _ = project
    r = assay(cwd, "metrics", "polite")
    assert r.returncode == 0, r.stderr
    assert "polite" in r.stdout and "Is the reply polite?" in r.stdout
    listed = json.loads(assay(cwd, "metrics", "--json").stdout)
    assert [m["origin"] for m in listed if m["name"] == "polite"] == ["config [[criteria]]"]


def test_run_reads_criteria_judge_and_options(project):
    cwd, server = project
    r = assay(cwd, "run", "a.jsonl", "-m", "polite", "--no-store", "--no-progress", "-f", "json")
    assert r.returncode in (0, 1), r.stderr
    out = json.loads(r.stdout)
    assert out["summary"]["polite"]["n"] == 3 and out["run"]["judge"]["model"] == "openai-compatible:scripted"
    assert judged_with_config_options(server)


def test_calibrate_reads_criteria_judge_and_prompt_style(project):
    cwd, server = project
    (cwd / "labels.csv").write_text("trace_id,metric,label\nt0,polite,polite\nt1,polite,curt\nt2,polite,polite\n")
    r = assay(cwd, "calibrate", "a.jsonl", "-m", "polite", "--labels", "labels.csv", "--no-store", "-o", "card.json")
    assert r.returncode == 0, r.stderr
    card = json.loads((cwd / "card.json").read_text())
    assert card["metrics"]["polite"]["n_compared"] == 3
    assert card["judge"]["model"] == "openai-compatible:scripted" and card["judge"]["prompt_style"] == "compact"
    assert judged_with_config_options(server)
    # the run finds the card it made: same judge, same prompt form
    run = assay(cwd, "run", "a.jsonl", "-m", "polite", "--no-store", "--no-progress", "-f", "json",
                "--judge-card", "card.json")
    assert run.returncode in (0, 1), run.stderr
    assert json.loads(run.stdout)["statistics"]["judge_correction"]["polite"]["card"] == card["id"]


@pytest.mark.parametrize("command", [["versus", "a.jsonl", "b.jsonl"], ["tournament", "a.jsonl", "b.jsonl"]],
                         ids=["versus", "tournament"])
def test_pairwise_commands_read_the_judge_and_options(project, command):
    cwd, server = project
    r = assay(cwd, *command, "-f", "json")
    assert r.returncode in (0, 1), r.stderr
    assert judged_with_config_options(server)


def test_collect_score_reads_criteria_judge_and_options(project):
    cwd, server = project
    (cwd / "agent.py").write_text("def reply(messages):\n    return 'Thank you, it arrives tomorrow.'\n")
    (cwd / "tasks.jsonl").write_text(json.dumps({"id": "where", "input": "Where is my order?"}) + "\n")
    r = assay(cwd, "collect", "tasks.jsonl", "--agent", "agent:reply", "-o", "out.jsonl", "--score", "-m", "polite",
              "--no-store", "--results", "results.json")
    assert r.returncode in (0, 1), r.stderr
    assert json.loads((cwd / "results.json").read_text())["summary"]["polite"]["n"] == 1
    assert judged_with_config_options(server)


def test_a_bad_config_names_the_file_for_every_command(tmp_path):
    (tmp_path / "assay.toml").write_text('[[criteria]]\nname = "polite"\n')
    for args in (["metrics"], ["calibrate", "x.jsonl", "--judge", "openai:x"], ["run", "x.jsonl"],
                 ["versus", "a", "b"], ["tournament", "a", "b"], ["validate", "x.jsonl"]):
        r = assay(tmp_path, *args)
        assert r.returncode == 2 and "assay.toml" in r.stderr and "missing 'criteria'" in r.stderr, (args, r.stderr)


def test_an_unreadable_input_stops_a_run_before_any_judge_call_or_stored_run(project):
    """`assay run a.jsonl b.csv`: a.jsonl was scored (its judge calls paid for) and a failed run stored before
    b.csv was found unreadable; every input is now checked first, from the CLI and from Python."""
    from assay import DataError, evaluate
    from assay.store import RunStore

    tmp_path, server = project
    (tmp_path / "b.csv").write_text("id,input,output\nt1,hi,yo\n")
    many = [{**TRACES[0], "id": f"m{i}", "task_id": f"m{i}"} for i in range(300)]  # more than are read ahead (256)
    (tmp_path / "many.jsonl").write_text("".join(json.dumps(t) + "\n" for t in many))
    r = assay(tmp_path, "run", "many.jsonl", "b.csv", "-m", "polite")
    assert r.returncode == 2 and "b.csv: this looks like CSV" in r.stderr
    with pytest.raises(DataError, match="b.csv: this looks like CSV"):
        evaluate([str(tmp_path / "many.jsonl"), str(tmp_path / "b.csv")], ["answer_relevance"],
                       judge=f"openai-compatible:scripted@{server.url}", store=str(tmp_path / "runs.sqlite3"))
    assert server.requests == []
    assert RunStore(tmp_path / "runs.sqlite3").runs() == []  # (cli_env's store is this file too)
