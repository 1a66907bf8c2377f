"""The Dask executor on a real LocalCluster (two worker processes, started once for this module).

Identical summaries, pass@k curves and per-trace results to a single-process run; a killed
worker's shard retried with no trace lost or doubled; judge limits held across workers, as
measured by the scripted judge server.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading

import pytest

distributed = pytest.importorskip("distributed")

from assay import Evaluation, evaluate  # noqa: E402
from assay.engine import DaskExecutor  # noqa: E402
from assay.engine._shards import plan_shards  # noqa: E402
from assay.errors import ConfigError  # noqa: E402
from tests.support.judge_server import JudgeServer, obj  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       host="127.0.0.1", silence_logs=40)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def _traces(n: int, tasks: int = 17, bad_every: int = 0) -> list[str]:
    """JSONL lines: trials of one task spread over the file (so they span shards), some bad lines."""
    rng = random.Random(n)
    lines = []
    for i in range(n):
        if bad_every and i % bad_every == bad_every - 1:
            lines.append('{"id": "broken", "turns": [')
            continue
        ok = rng.random() < 0.5
        lines.append(json.dumps({
            "id": f"t{i}", "task_id": f"task{i % tasks}", "trial": i // tasks,
            "turns": [{"input": "What is the refund window?", "output": "30 days" if ok else "no idea",
                       "latency_ms": rng.randint(50, 4000)}],
            "metadata": {"score": rng.random()}}))
    return lines


METRICS = ["contains:values=['30 days']", "latency_score:threshold_ms=1500"]


def _same(a, b) -> None:
    assert {k: s.to_dict() for k, s in a.summary.items()} == {k: s.to_dict() for k, s in b.summary.items()}
    assert a.statistics == b.statistics
    for key in ("n_traces", "n_passed", "n_failed", "n_input_issues"):
        assert a.run[key] == b.run[key], key
    assert a.input_issues == b.input_issues


def test_byte_range_shards_cut_at_line_starts_and_know_their_lines(tmp_path):
    p = tmp_path / "t.jsonl"
    lines = _traces(300)
    p.write_text("\n".join(lines) + "\n")
    shards = plan_shards(str(p), shard_bytes=4096)
    assert len(shards) > 5
    data = p.read_bytes()
    for s, nxt in zip(shards, shards[1:]):
        assert s.end == nxt.start and data[s.end - 1:s.end] == b"\n"
        assert nxt.first_line == data[:nxt.start].count(b"\n") + 1
    assert shards[0].start == 0 and shards[-1].end is None


def test_default_shard_sizes_give_every_worker_several_shards():
    shards = plan_shards([{"id": f"x{i}"} for i in range(100)], spread=2)
    assert len(shards) == 8 and [s.first_line for s in shards[:3]] == [1, 14, 27]


def test_sharded_run_equals_a_single_process_run(client, tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(_traces(600, bad_every=97)) + "\n")
    ev = Evaluation(METRICS)
    single = ev.run(str(p))
    seen: list = []
    dist = Evaluation(METRICS).run(str(p), executor=DaskExecutor(client, shard_bytes=8192), on_result=seen.append)
    assert dist.run["executor"]["shards"] > 8 and dist.run["executor"]["workers"] == 2
    _same(dist, single)
    assert single.statistics["trials"]["by_metric"]  # tasks repeat: pass@k curves are compared
    assert [(t.id, t.source, t.passed, t.overall) for t in dist.traces] == \
        [(t.id, t.source, t.passed, t.overall) for t in single.traces]
    assert [t.metrics for t in dist.traces] == [t.metrics for t in single.traces]
    streamed = [getattr(i, "source", None) or f"{i.source}:{i.line}" for i in seen]
    assert len(seen) == 600 and streamed[:3] == [f"{p}:1", f"{p}:2", f"{p}:3"]  # in input order, as located


def test_in_memory_traces_and_no_intervals(client):
    data = [json.loads(line) for line in _traces(120)]
    single = evaluate(data, METRICS)
    dist = Evaluation(METRICS).run(data, executor=DaskExecutor(client, shard_items=25))
    _same(dist, single)
    assert [t.source for t in dist.traces] == [t.source for t in single.traces]
    quiet = Evaluation(METRICS).run(data, executor=DaskExecutor(client, shard_items=25), intervals=False,
                                      keep_traces=False)
    assert {k: s.mean for k, s in quiet.summary.items()} == {k: s.mean for k, s in single.summary.items()}
    assert quiet.traces == [] and [t.id for t in quiet.failed] == [t.id for t in single.traces if not t.passed][:10]


def test_a_killed_worker_is_retried_without_loss_or_duplication(client, tmp_path):
    p = tmp_path / "slow.jsonl"
    p.write_text("\n".join(_traces(240)) + "\n")
    pids = client.run(os.getpid)
    killed: list[int] = []

    def kill_once(item) -> None:
        if not killed:  # the first result is in: the other shards are being scored; kill a busy worker
            busy = [w for w, keys in client.processing().items() if keys]
            victim = pids[busy[0]] if busy else next(iter(pids.values()))
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    seen: list = []
    dist = Evaluation(_slow()).run(str(p), executor=DaskExecutor(client, shard_bytes=2048),
                                   on_result=lambda i: (seen.append(i.id), kill_once(i)))
    single = Evaluation(_slow(0.0)).run(str(p))
    assert killed and killed[0] not in client.run(os.getpid).values()  # a new worker process took its place
    assert len(seen) == 240 and len(set(seen)) == 240 and seen == [t.id for t in single.traces]
    _same(dist, single)


def test_an_interrupt_stops_the_run_with_what_was_scored(client, tmp_path):
    p = tmp_path / "slow.jsonl"
    p.write_text("\n".join(_traces(240)) + "\n")
    cancel = threading.Event()
    ev = Evaluation(_slow(), cancel=cancel)
    seen: list = []
    r = ev.run(str(p), executor=DaskExecutor(client, shard_bytes=2048),
               on_result=lambda i: (seen.append(i.id), cancel.set()))
    assert ev.interrupted and r.run.get("interrupted") is True
    assert 0 < r.run["n_traces"] == len(seen) < 240 and len(set(seen)) == len(seen)


def _slow(seconds: float = 0.02) -> list:
    from tests.support.dask_support import SlowEcho
    return [SlowEcho(seconds=seconds), *METRICS]


def test_judge_limits_hold_across_workers(client, tmp_path):
    """concurrency 4 over two busy workers: the server never sees more than 4 calls at once.

    Unsplit, each worker would keep 4 in flight (8 at the server); split, each keeps 2."""
    data = [{"id": f"r{i}", "task_id": f"q{i % 5}",
             "turns": [{"input": f"What causes rain? ({i})", "output": "Water vapour condenses into droplets."}]}
            for i in range(48)]
    with JudgeServer(lambda req: obj({"evidence": ["Water vapour condenses"], "reasoning": "on topic",
                                      "score": 5}, delay=0.2)) as server:
        spec = f"openai-compatible:scripted@{server.url}"
        options = {"cache": str(tmp_path / "judge.sqlite3"), "concurrency": 4, "max_concurrency": 4, "base_delay": 0.01}
        dist = evaluate(data, ["answer_relevance"], judge=spec, executor=DaskExecutor(client, shard_items=6), **options)
        assert 2 <= server.peak <= 4
        assert len(server.requests) == 48 and dist.summary["answer_relevance"].judge_calls == 48
        assert dist.run["judge"]["calls"] == 48
        again = evaluate(data, ["answer_relevance"], judge=spec, executor=DaskExecutor(client, shard_items=6), **options)
        assert len(server.requests) == 48 and again.run["judge"]["cached"] == 48  # every worker reads the cache
        single = evaluate(data, ["answer_relevance"], judge=spec, **options)
        assert {k: s.mean for k, s in single.summary.items()} == {k: s.mean for k, s in dist.summary.items()}


def test_a_worker_keeps_one_judge_stack_and_its_connections_for_all_its_shards(client):
    """16 shards on two workers, 2 calls in flight per worker: 4 connections at most, not 2 per shard."""
    data = [{"id": f"k{i}", "turns": [{"input": f"What causes rain? ({i})",
                                       "output": "Water vapour condenses into droplets."}]} for i in range(64)]
    with JudgeServer(lambda req: obj({"evidence": ["Water vapour condenses"], "reasoning": "on topic", "score": 5},
                                     delay=0.02)) as server:
        dist = evaluate(data, ["answer_relevance"], judge=f"openai-compatible:scripted@{server.url}",
                        executor=DaskExecutor(client, shard_items=4), cache=False, concurrency=4, max_concurrency=4)
    assert dist.run["executor"]["shards"] == 16 and len(server.requests) == 64
    assert len({r.peer for r in server.requests}) <= 4


def test_the_token_budget_holds_across_workers(client, tmp_path):
    data = [{"id": f"b{i}", "turns": [{"input": f"What causes rain? ({i})",
                                       "output": "Water vapour condenses into droplets."}]} for i in range(40)]
    with JudgeServer(lambda req: obj({"evidence": ["Water vapour condenses"], "reasoning": "on topic", "score": 5},
                                     usage=(400, 100))) as server:
        dist = evaluate(data, ["answer_relevance"], judge=f"openai-compatible:scripted@{server.url}",
                        executor=DaskExecutor(client, shard_items=5), cache=False, budget_tokens=5000, concurrency=2)
    spent = dist.run["judge"]["input_tokens"] + dist.run["judge"]["output_tokens"]
    assert spent <= 5000 and len(server.requests) * 500 <= 5000
    assert dist.summary["answer_relevance"].warnings.get("not_evaluated", 0) == 40 - len(server.requests)


def test_cli_on_an_existing_cluster_stores_one_run_that_report_and_compare_read(client, tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(_traces(200)) + "\n")
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "runs.sqlite3"), "ASSAY_CACHE_DIR": str(tmp_path / "c")}
    address = client.scheduler.address

    def assay(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True, text=True, env=env,
                              timeout=120)

    single = assay("run", str(p), *sum((["-m", m] for m in METRICS), []), "-o", str(tmp_path / "one.json"))
    dist = assay("run", str(p), *sum((["-m", m] for m in METRICS), []), "--executor", f"dask:{address}",
                 "-o", str(tmp_path / "two.json"))
    assert dist.returncode == single.returncode == 1, dist.stderr  # some traces fail a threshold
    one, two = (json.loads((tmp_path / f).read_text()) for f in ("one.json", "two.json"))
    assert one["summary"] == two["summary"] and one["statistics"] == two["statistics"]
    assert two["run"]["executor"]["kind"] == "dask"
    runs = assay("runs", "--json")
    assert runs.returncode == 0, runs.stderr
    stored = json.loads(runs.stdout)
    assert len(stored) == 2
    cmp = assay("compare", stored[1]["id"], stored[0]["id"])
    assert cmp.returncode in (0, 1), cmp.stderr
    rep = assay("report", stored[0]["id"], "-o", str(tmp_path / "r.html"))
    assert rep.returncode == 0, rep.stderr and (tmp_path / "r.html").stat().st_size > 1000
    bad = assay("run", str(p), "-m", METRICS[0], "--executor", "spark")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith("Error: unknown executor 'spark'")


def test_without_dask_installed_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ConfigError, match=r"pip install 'assay\[dask\]'"):
        Evaluation(METRICS).run([json.loads(_traces(1)[0])], executor="dask")
