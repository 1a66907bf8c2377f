"""``assay versus`` as a user runs it: stored runs or result files, a scripted judge, exit status and output."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.cli import cli_env, run_pipe
from tests.support.judge_server import JudgeServer, obj


def prefer(word: str):
    def reply(request: dict):
        user = request["messages"][-1]["content"]
        a = re.search(r"<<<BEGIN CANDIDATE_A (\w+)>>>\n(.*?)\n<<<END", user, re.S).group(2)
        b = re.search(r"<<<BEGIN CANDIDATE_B (\w+)>>>\n(.*?)\n<<<END", user, re.S).group(2)
        v = "A" if word in a and word not in b else "B" if word in b and word not in a else "tie"
        return obj({"evidence": [], "reasoning": f"the {word} one" if v != "tie" else "same", "verdict": v})
    return reply


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two stored runs on 12 shared traces: run 'new' has the better reply on 10 of them."""
    home = tmp_path_factory.mktemp("versus")
    env = cli_env(home)
    for name, good in (("base", set()), ("new", set(range(10)))):
        lines = [json.dumps({"id": f"q{i}", "turns": [{"input": f"Question {i}?",
                                                       "output": ("GOOD answer" if i in good else "answer") + f" {i}"}]})
                 for i in range(12)]
        (home / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
        r = run_pipe(["run", str(home / f"{name}.jsonl"), "-m", "regex_match:pattern=.", "--name", name,
                      "-o", str(home / f"{name}.json")], env)
        assert r.returncode == 0, r.stderr
    return home, env


def versus(env, *args: str):
    return run_pipe(["versus", *args], env)


def test_b_worse_exits_1_and_says_why(runs):
    home, env = runs
    with JudgeServer(prefer("GOOD")) as server:
        r = versus(env, "latest", "latest~1", "--judge", f"openai-compatible:scripted@{server.url}")
        assert len(server.requests) == 24  # 12 pairs x 2 orders
    assert r.returncode == 1, r.stderr
    out = r.stdout
    assert "base (B) vs new (A)" in " ".join(out.split())
    assert re.search(r"12\s+0\s+2\s+10\s+0\.083 \[", out), out  # pairs, B wins, ties, B losses, win rate
    assert "position inconsistency: 0 of 12 pairs (0%)" in " ".join(out.split())
    assert "q0: A better: the GOOD one" in out
    assert out.strip().splitlines()[-1].startswith("base is significantly worse than new (win rate of base 0.083")


def test_b_better_exits_0_from_result_files_with_json_and_html(runs):
    home, env = runs
    html = home / "v.html"
    with JudgeServer(prefer("GOOD")) as server:
        r = versus(env, str(home / "base.json"), str(home / "new.json"), "--judge",
                   f"openai-compatible:scripted@{server.url}", "-f", "json", "--html", str(html), "--no-cache")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["wins_b"], out["ties"], out["losses_b"]) == (10, 2, 0) and out["b_better"]
    assert out["p_value"] == pytest.approx(2 / 1024)  # exact sign test, 10 of 10 decisive pairs
    assert out["differing"] == [f"q{i}" for i in range(10)]
    assert html.exists() and "HTML view written to" in r.stderr


def test_dry_run_plans_pairs_times_orders_and_sends_nothing(runs):
    home, env = runs
    with JudgeServer(prefer("GOOD")) as server:
        r = versus(env, "latest~1", "latest", "--judge", f"openai-compatible:scripted@{server.url}", "--dry-run",
                   "--no-cache")
        assert server.requests == []
    assert r.returncode == 0, r.stderr
    assert "12 pairs x 2 orders = 24 judge calls planned, 24 not in the cache" in r.stdout


def test_errors_are_one_line_with_the_documented_status(runs):
    home, env = runs
    other = home / "other.jsonl"
    other.write_text(json.dumps({"id": "zz", "turns": [{"input": "hi", "output": "hello"}]}) + "\n")
    r = run_pipe(["run", str(other), "-m", "regex_match:pattern=.", "-o", str(home / "other.json"), "--no-store"], env)
    assert r.returncode == 0, r.stderr
    with JudgeServer(prefer("GOOD")) as server:
        url = f"openai-compatible:scripted@{server.url}"
        r = versus(env, str(home / "base.json"), str(home / "other.json"), "--judge", url)
        assert r.returncode == 2 and r.stderr.strip() == f"Error: runs base and {home / 'other.json'} share no " \
                                                          "trace id (nor task_id and trial): nothing to compare"
        r = versus(env, "latest", "latest~1")
        assert r.returncode == 2 and "needs a judge" in r.stderr
        r = versus(env, "latest", "latest~1", "--judge", url, "-m", "pairwise_qualty")
        assert r.returncode == 2 and "Did you mean 'pairwise_quality'" in r.stderr
        assert "Traceback" not in r.stderr
    with JudgeServer(default=obj({"verdict": "nonsense"})) as server:  # every verdict fails validation
        r = versus(env, "latest", "latest~1", "--judge", f"openai-compatible:scripted@{server.url}", "--no-cache",
                   "--retries", "0", "-m", "pairwise_quality:both_orders=false")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "could not evaluate: no pair was judged" in r.stdout


def test_custom_criteria_from_the_command_line(runs):
    home, env = runs
    with JudgeServer(prefer("GOOD")) as server:
        r = versus(env, "latest~1", "latest", "--judge", f"openai-compatible:scripted@{server.url}", "--no-cache",
                   "--criteria", "Which reply is more polite?", "-f", "json")
        system = server.requests[0].json["messages"][0]["content"]
    assert r.returncode == 0, r.stderr
    assert "Which reply is more polite?" in system
    assert json.loads(r.stdout)["metric"]["rubric"].startswith("pairwise_criteria@1-")


def test_tournament_ranks_three_runs(runs, tmp_path):
    import shutil

    home, env = runs
    env = {**env, "ASSAY_STORE": str(tmp_path / "runs.sqlite3")}  # a third run, kept out of the shared store
    for suffix in ("", "-wal", "-shm"):
        if (home / f"runs.sqlite3{suffix}").exists():
            shutil.copy(home / f"runs.sqlite3{suffix}", tmp_path / f"runs.sqlite3{suffix}")
    lines = [json.dumps({"id": f"q{i}", "turns": [{"input": f"Question {i}?", "output": f"GOOD answer {i}"
                                                   if i < 5 else f"answer {i}"}]}) for i in range(12)]
    (home / "third.jsonl").write_text("\n".join(lines) + "\n")
    r = run_pipe(["run", str(home / "third.jsonl"), "-m", "regex_match:pattern=.", "--name", "third"], env)
    assert r.returncode == 0, r.stderr
    with JudgeServer(prefer("GOOD")) as server:
        r = run_pipe(["tournament", "latest", "latest~1", "latest~2", "--judge",
                      f"openai-compatible:scripted@{server.url}", "--n-boot", "200", "--html", str(home / "t.html")],
                     env)
        assert len(server.requests) == 3 * 12 * 2
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())
    assert "tournament of 3 runs, all-pairs schedule, 3 matches" in out
    ranks = re.findall(r"^\s+(\d)\s+(\w+)\s+[+-]\d", r.stdout, re.M)
    assert ranks == [("1", "new"), ("2", "third"), ("3", "base")]
    assert "first: new" in out and (home / "t.html").exists()
    r = run_pipe(["tournament", "latest"], env)
    assert r.returncode == 2 and "needs a judge" in r.stderr


def test_unnamed_runs_are_shown_as_the_user_gave_them(runs):
    home, env = runs
    for name in ("base", "new"):
        r = run_pipe(["run", str(home / f"{name}.jsonl"), "-m", "regex_match:pattern=.", "--no-store",
                      "-o", str(home / f"plain-{name}.json")], env)
        assert r.returncode == 0, r.stderr
    with JudgeServer(prefer("GOOD")) as server:
        r = versus(env, str(home / "plain-base.json"), str(home / "plain-new.json"), "--judge",
                   f"openai-compatible:scripted@{server.url}")
    assert r.returncode == 0, r.stderr
    first = " ".join(r.stdout.split("judged pairwise")[0].split())
    assert first == f"{home / 'plain-new.json'} (B) vs {home / 'plain-base.json'} (A),"
    assert "(rubric pairwise_quality v1, both orders)" in " ".join(r.stdout.split())


def test_two_trace_files_are_judged_on_every_shared_id(runs):
    home, env = runs  # base.jsonl and new.jsonl: the agents' own trace files, 12 shared ids
    with JudgeServer(prefer("GOOD")) as server:
        r = versus(env, str(home / "base.jsonl"), str(home / "new.jsonl"), "--judge",
                   f"openai-compatible:scripted@{server.url}", "-f", "json")
        assert len(server.requests) == 24
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["n_pairs"], out["n_judged"], out["wins_b"], out["losses_b"]) == (12, 12, 10, 0)
    assert out["b"].endswith("new.jsonl") and out["b_better"]


def test_trace_files_without_shared_ids_pair_by_task_and_trial(runs, tmp_path):
    home, env = runs
    for side, word in (("a", "answer"), ("b", "GOOD answer")):
        rows = [{"id": f"{side}-{t}-{k}", "task_id": f"task{t}", "trial": k,
                 "turns": [{"input": f"Question {t}?", "output": f"{word} {t}"}]} for t in range(4) for k in range(2)]
        (tmp_path / f"{side}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))
    with JudgeServer(prefer("GOOD")) as server:
        r = versus(env, str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--judge",
                   f"openai-compatible:scripted@{server.url}", "-f", "json", "-m", "pairwise_quality:both_orders=false")
        assert len(server.requests) == 8
    out = json.loads(r.stdout)
    assert (out["n_judged"], out["n_tasks"], out["wins_b"]) == (8, 4, 8)
    assert {p["id"] for p in out["pairs"]} == {f"task{t}#{k}" for t in range(4) for k in range(2)}


def test_a_file_that_is_neither_says_what_it_is(runs, tmp_path):
    home, env = runs
    (tmp_path / "v.json").write_text(json.dumps({"a": "x", "b": "y", "wins_b": 3, "pairs": []}))
    (tmp_path / "junk.jsonl").write_text('{"hello": 1}\n')
    for bad, said in (("v.json", "it is the output of `assay versus`"), ("junk.jsonl", "neither traces nor")):
        r = versus(env, str(tmp_path / bad), str(home / "new.jsonl"), "--judge", "openai-compatible:scripted@http://127.0.0.1:9")
        assert r.returncode == 2 and said in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_tournament_of_trace_files(runs, tmp_path):
    home, env = runs
    best = tmp_path / "best.jsonl"
    best.write_text("".join(json.dumps({"id": f"q{i}", "turns": [{"input": f"Question {i}?",
                                                                   "output": f"GOOD GOOD answer {i}"}]}) + "\n"
                            for i in range(12)))
    with JudgeServer(prefer("GOOD")) as server:
        r = run_pipe(["tournament", str(home / "base.jsonl"), str(home / "new.jsonl"), str(best), "--judge",
                      f"openai-compatible:scripted@{server.url}", "-f", "json", "--n-boot", "50",
                      "-m", "pairwise_quality:both_orders=false"], env)
        assert len(server.requests) == 3 * 12
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [row["name"] for row in out["ranking"]][-1].endswith("base.jsonl")
