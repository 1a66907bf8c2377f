"""``assay run`` with a judge: flags reach the judge stack, the cache is reused, dry runs send nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import cli_env, run_pipe
from tests.support.judge_server import JudgeServer, obj

TRACE = {"id": "r1", "turns": [{"input": "What causes rain?", "output": "Water vapour condenses into droplets."}]}


def run_cli(tmp_path: Path, *args: str, two_turns: bool = False) -> subprocess.CompletedProcess:
    p = tmp_path / "t.jsonl"
    trace = {**TRACE, "turns": TRACE["turns"] * 2} if two_turns else TRACE
    p.write_text(json.dumps(trace) + "\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ASSAY_CACHE_DIR": str(tmp_path / "cache"),
           "ASSAY_STORE": str(tmp_path / "runs.sqlite3")}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    store = () if "--dry-run" in args else ("--no-store",)
    return subprocess.run([sys.executable, "-m", "assay", "run", str(p), *store, "-f", "json", *args],
                          capture_output=True, text=True, env=env, timeout=60)


def test_judge_metric_through_the_cli_then_cache_hit(tmp_path):
    with JudgeServer(lambda req: obj({"evidence": ["Water vapour condenses"], "reasoning": "on topic",
                                      "score": 5})) as server:
        args = ("-m", "answer_relevance", "--judge", f"openai-compatible:scripted@{server.url}",
                "--cache", str(tmp_path / "judge.sqlite3"), "--concurrency", "2")
        first = run_cli(tmp_path, *args)
        assert first.returncode == 0, first.stderr
        out = json.loads(first.stdout)
        m = out["traces"][0]["metrics"]["answer_relevance"]
        assert m["score"] == 1.0 and m["evidence"] == ["Water vapour condenses"] and m["judge_calls"] == 1
        assert out["run"]["judge"]["calls"] == 1 and len(server.requests) == 1
        second = run_cli(tmp_path, *args)
        assert second.returncode == 0 and len(server.requests) == 1  # answered from the cache
        assert json.loads(second.stdout)["run"]["judge"]["cached"] == 1


def test_dry_run_sends_nothing_stores_nothing_and_counts_every_planned_call(tmp_path):
    with JudgeServer() as server:
        r = run_cli(tmp_path, "-m", "answer_relevance", "-m", "goal_achievement_rate", "-m", "safety_score",
                    "--judge", f"openai-compatible:scripted@{server.url}", "--dry-run", "--no-cache",
                    two_turns=True)
        assert len(server.requests) == 0
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "runs.sqlite3").exists()
    rows = {line.split()[0]: line.split()[1:] for line in r.stderr.splitlines()[2:] if line and line[0] != "-"}
    # per turn (2 turns), 4 for goal_achievement_rate without a goal, per turn again: every call counted
    assert rows["answer_relevance"][:2] == ["1", "2"]
    assert rows["goal_achievement_rate"][:2] == ["1", "4"]
    assert rows["safety_score"][:2] == ["1", "2"]
    assert rows["total"][0] == "8" and rows["total"][-1] == "~$0.0000"  # a server on 127.0.0.1 is free
    assert r.stderr.startswith("dry run: nothing was sent and no run was stored")
    assert json.loads(r.stdout)["run"]["judge_plan"]["goal_achievement_rate"] == {"traces": 1, "calls": 4}


def test_judge_flags_without_a_judge_are_a_usage_error(tmp_path):
    r = run_cli(tmp_path, "-m", "tool_selection_accuracy", "--budget-usd", "1")
    assert r.returncode == 2 and "no judge" in r.stderr


def test_criteria_from_the_config_file(tmp_path):
    cfg = tmp_path / "assay.toml"
    cfg.write_text('[[criteria]]\nname = "actionable"\ncriteria = "Does the reply give a concrete next step?"\n')
    with JudgeServer(lambda req: obj({"evidence": [], "reasoning": "no step", "score": 2})) as server:
        r = run_cli(tmp_path, "-m", "actionable", "--config", str(cfg), "--no-cache",
                    "--judge", f"openai-compatible:scripted@{server.url}")
    assert r.returncode == 1, r.stderr  # 0.25 is below the default threshold
    assert json.loads(r.stdout)["traces"][0]["metrics"]["actionable"]["score"] == 0.25


def test_prompt_style_and_ordinal_order_flags_and_config_keys_reach_the_request(tmp_path):
    with JudgeServer(lambda req: obj({"evidence": [], "reasoning": "on topic", "score": 5})) as server:
        judge = ("--judge", f"openai-compatible:scripted@{server.url}", "--no-cache", "-m", "answer_relevance")
        flagged = run_cli(tmp_path, *judge, "--prompt-style", "compact", "--ordinal-order", "reversed")
        assert flagged.returncode == 0, flagged.stderr
        sent = server.requests[-1].json
        assert "max_tokens" in sent and sent["response_format"]["json_schema"]["schema"]["properties"][
            "reasoning"]["maxLength"] == 200
        # a fixed (reversed) order is part of the static system message
        assert sent["messages"][0]["content"].index("- 5:") < sent["messages"][0]["content"].index("- 1:")
        (tmp_path / "assay.toml").write_text('[judge]\nprompt_style = "compact"\n')
        configured = subprocess.run([sys.executable, "-m", "assay", "run", str(tmp_path / "t.jsonl"), "--no-store",
                                     "-f", "json", *judge], capture_output=True, text=True, cwd=tmp_path,
                                    env={**os.environ, "HOME": str(tmp_path),
                                         "ASSAY_CACHE_DIR": str(tmp_path / "cache")}, timeout=60)
        assert configured.returncode == 0, configured.stderr
        assert "max_tokens" in server.requests[-1].json
        bad = run_cli(tmp_path, *judge, "--prompt-style", "tiny")
        assert bad.returncode == 2 and "'tiny' is not one of 'auto', 'full', 'compact'" in bad.stderr


def test_a_run_closes_its_store_and_judge_cache_before_it_exits(tmp_path):
    """The process skips the interpreter's last cycle collection, so nothing may wait for it: the
    SQLite files are complete, with no write-ahead log left beside them."""
    with JudgeServer(lambda req: obj({"evidence": [], "reasoning": "on topic", "score": 5})) as server:
        p = tmp_path / "t.jsonl"
        p.write_text(json.dumps(TRACE) + "\n")
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ASSAY_CACHE_DIR": str(tmp_path / "cache"),
               "ASSAY_STORE": str(tmp_path / "store" / "runs.sqlite3"),
               **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {})}
        args = [sys.executable, "-m", "assay", "run", str(p), "-m", "answer_relevance",
                "--judge", f"openai-compatible:scripted@{server.url}"]
        for _ in range(2):
            done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
            assert done.returncode == 0, done.stderr
        assert len(server.requests) == 1 and "0 calls made, 1 cached" in done.stderr  # the cache kept the verdict
    assert sorted(f.name for f in (tmp_path / "cache").iterdir()) == ["judge.sqlite3"]
    assert sorted(f.name for f in (tmp_path / "store").iterdir()) == ["runs.sqlite3"]
    import sqlite3
    with sqlite3.connect(tmp_path / "store" / "runs.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2


def test_a_broken_judge_cache_is_one_clear_error_before_any_scoring(tmp_path):
    broken = tmp_path / "judge.sqlite3"
    broken.write_bytes(b"this is not a database, just bytes " * 200)
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps({"id": f"r{i}", "turns": [{"input": "q?", "output": "a"}]}) + "\n" for i in range(3)))
    with JudgeServer(lambda req: obj({"evidence": [], "reasoning": "ok", "score": 5})) as server:
        r = run_pipe(["run", str(p), "-m", "answer_relevance", "--judge", f"openai-compatible:m@{server.url}",
                      "--cache", str(broken)], cli_env(tmp_path))
        assert r.returncode == 2 and len(server.requests) == 0
        assert r.stderr.count("Error:") == 1 and f"the judge cache '{broken}' cannot be used" in r.stderr
        assert "--no-cache" in r.stderr
        fine = run_pipe(["run", str(p), "-m", "answer_relevance", "--judge", f"openai-compatible:m@{server.url}",
                         "--no-cache"], cli_env(tmp_path))
        assert fine.returncode == 0 and len(server.requests) == 3


def test_max_reply_mb_bounds_what_a_judge_reply_may_be(tmp_path):
    from tests.support.judge_server import hostile

    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"id": "r0", "turns": [{"input": "q?", "output": "a"}]}) + "\n")
    with JudgeServer() as server:
        server.push(hostile("gzip_bomb", 64 * 2**20))
        r = run_pipe(["run", str(p), "-m", "answer_relevance", "--judge", f"openai-compatible:m@{server.url}",
                      "--no-cache", "--max-reply-mb", "2", "--retries", "0"], cli_env(tmp_path))
    assert r.returncode == 3 and "reply over the 2 MiB limit (--max-reply-mb) refused" in r.stderr, r.stderr
    assert len(server.requests) == 1  # refused, not retried


def test_logprobs_and_threshold_flags_and_the_judge_thresholds_table(tmp_path):
    from tests.support.judge_server import scored

    trace = {"id": "flag", "turns": [{"input": "Which release added the --frozen flag?",
                                      "output": "I'm not sure; the project's changelog lists it per version."}]}
    (tmp_path / "t.jsonl").write_text(json.dumps(trace) + "\n")

    def reply(request: dict):
        name = request["response_format"]["json_schema"]["name"]
        if name == "ReplyCheck":  # no to everything, P(points) 0.45
            return scored('{"answers":false,"admits":false,"points":', ("false", -0.5978, {"true": -0.7985}),
                          ',"evasive":true}')
        return scored('{"answer":"I cannot know that.","known":false}')

    def run(*args: str, cwd: Path | None = None) -> dict:
        env = {**os.environ, "HOME": str(tmp_path), "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
        r = subprocess.run([sys.executable, "-m", "assay", "run", str(tmp_path / "t.jsonl"), "--no-store", "-f",
                            "json", "-m", "failure_rate", "--judge", f"openai-compatible:scripted@{server.url}",
                            "--no-cache", "--prompt-style", "compact", *args], capture_output=True, text=True,
                           env=env, cwd=cwd or tmp_path, timeout=60)
        assert r.returncode in (0, 1), r.stderr
        return json.loads(r.stdout)["traces"][0]["metrics"]["failure_rate"]

    with JudgeServer(reply) as server:
        plain = run()
        assert "logprobs" not in server.requests[-1].json and plain["details"]["verdict"] == "stall"
        probs = run("--judge-logprobs")
        assert server.requests[-1].json["top_logprobs"] == 10
        assert probs["details"]["findings"][0]["p"]["points"] == pytest.approx(0.45, abs=1e-3)
        flipped = run("--judge-logprobs", "3", "--judge-threshold", "failure_rate.points=0.4")
        assert server.requests[-1].json["top_logprobs"] == 3
        assert flipped["details"]["verdict"] == "alternative_proposed"
        (tmp_path / "assay.toml").write_text('[judge]\nlogprobs = 5\n\n[judge.thresholds]\n'
                                             '"failure_rate.points" = 0.4\n')
        configured = run()
        assert server.requests[-1].json["top_logprobs"] == 5 and configured["details"]["verdict"] == \
            "alternative_proposed"
        bad = subprocess.run([sys.executable, "-m", "assay", "run", str(tmp_path / "t.jsonl"), "--no-store",
                              "-m", "failure_rate", "--judge", f"openai-compatible:scripted@{server.url}",
                              "--judge-threshold", "points=0.4"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "HOME": str(tmp_path)}, cwd=tmp_path)
        assert bad.returncode == 2 and "expected METRIC.QUESTION" in bad.stderr
