"""The persistent cache: re-runs are free, repeats are independent, a killed run resumes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from judge_helpers import GOOD, Score, request

from assay.judge import JudgeCache, Verdict, cache_key, default_cache_path
from tests.support.judge_server import hang, malformed, obj, status


def gather(judge, n, **kw):
    async def batch():
        return await asyncio.gather(*(judge.judge(request(i, **kw)) for i in range(n)))
    return asyncio.run(batch())


def test_rerun_makes_zero_backend_calls(make, judge_server, tmp_path):
    judge_server.default = obj(GOOD)
    path = tmp_path / "judge.sqlite3"
    first = gather(make(cache=path), 10)
    assert len(judge_server.requests) == 10 and not any(v.cached for v in first)

    judge = make(cache=path)  # a new judge, as in a new process
    second = gather(judge, 10)
    assert len(judge_server.requests) == 10  # the server saw nothing new
    assert all(v.cached and v.parsed == Score(**GOOD) and v.cost_usd == 0.0 for v in second)
    assert judge.stats.cached == 10 and judge.stats.calls == 0
    assert [v.raw for v in second] == [v.raw for v in first]


def test_repeats_are_independent_entries(make, judge_server, tmp_path):
    judge_server.default = obj(GOOD)
    judge = make(cache=tmp_path / "c.sqlite3")
    for repeat in range(3):
        gather(judge, 2, repeat=repeat)
    assert len(judge_server.requests) == 6
    gather(judge, 2, repeat=1)
    assert len(judge_server.requests) == 6 and len(judge.cache) == 6


def test_key_covers_everything_that_changes_a_verdict():
    base = request()
    variants = [request(repeat=1), request(1), request(temperature=0.5), request(max_tokens=10),
                request(schema=type("Other", (Score,), {}))]
    keys = {cache_key("m", base), cache_key("other-model", base)} | {cache_key("m", r) for r in variants}
    assert len(keys) == 2 + len(variants)
    assert cache_key("m", request()) == cache_key("m", base)


def test_only_successful_verdicts_are_cached(make, judge_server, tmp_path):
    judge_server.push(status(400, "bad"), malformed(), obj(GOOD))
    judge = make(cache=tmp_path / "c.sqlite3", reasks=0)
    assert gather(judge, 1)[0].error is not None  # 400
    assert gather(judge, 1)[0].error is not None  # malformed
    assert gather(judge, 1)[0].error is None
    assert gather(judge, 1)[0].cached
    assert len(judge_server.requests) == 3


def test_cache_disabled_calls_every_time(make, judge_server):
    judge_server.default = obj(GOOD)
    judge = make(cache=False)
    gather(judge, 3)
    gather(judge, 3)
    assert len(judge_server.requests) == 6


def test_default_path_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "x"))
    assert default_cache_path() == tmp_path / "x" / "judge.sqlite3"
    monkeypatch.delenv("ASSAY_CACHE_DIR")
    assert default_cache_path().name == "judge.sqlite3" and "assay" in str(default_cache_path())


def test_default_cache_is_used_when_enabled(make, judge_server):
    judge_server.default = obj(GOOD)
    gather(make(cache=True), 2)
    assert (Path(os.environ["ASSAY_CACHE_DIR"]) / "judge.sqlite3").exists()  # set by tests/conftest.py


def test_threads_share_one_cache_file(tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite3")
    verdict = Verdict(parsed=Score(**GOOD), raw="{}", model="m")

    def work(t):
        for i in range(50):
            cache.put(f"{t}-{i}", verdict)
            assert cache.get(f"{t}-{i}", Score).parsed == Score(**GOOD)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 400


def test_processes_share_one_cache_file(tmp_path):
    path = tmp_path / "c.sqlite3"
    code = textwrap.dedent(f"""
        import sys, pydantic
        from assay.judge import JudgeCache, Verdict
        class S(pydantic.BaseModel):
            x: int
        c = JudgeCache({str(path)!r})
        for i in range(100):
            c.put(f"{{sys.argv[1]}}-{{i}}", Verdict(parsed=S(x=i), raw="", model="m"))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(n)]) for n in range(3)]
    assert [p.wait(timeout=30) for p in procs] == [0] * 3
    assert len(JudgeCache(path)) == 300


RESUMABLE = """
import asyncio, sys
sys.path[:0] = [{root!r}, {here!r}]
from judge_helpers import request
from assay.judge import make_judge

async def main():
    judge = make_judge("openai-compatible:scripted@{url}", cache={cache!r}, concurrency=2,
                       default_headers={{"X-Killed-Run": "1"}})
    await asyncio.gather(*(judge.judge(request(i)) for i in range({n})))
    print("finished", flush=True)
asyncio.run(main())
"""


def stored(cache: Path) -> int:
    """Verdicts in a cache file another process is writing, read-only (0 while it has no table yet)."""
    import sqlite3

    if not cache.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=30)) as db:
            return db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


@pytest.mark.skipif(os.name != "posix", reason="needs SIGKILL")
def test_a_killed_run_resumes_without_paying_again(judge_server, tmp_path, make):
    """Deterministic at any speed: the server answers the first run's first 6 calls and holds every
    later one, the run is killed once those 6 verdicts are in the cache, and the rerun's calls are
    told from the killed run's (a late one may still reach the server) by a header only it sends."""
    n, done, cache = 20, 6, tmp_path / "resume.sqlite3"
    answered = iter(range(10**6))
    lock = threading.Lock()

    def first_run(request):
        with lock:
            return obj(GOOD) if next(answered) < done else hang(600)  # held until the server stops
    judge_server.reply = first_run
    script = RESUMABLE.format(root=str(Path(__file__).parents[2]), here=str(Path(__file__).parent),
                              url=judge_server.url, cache=str(cache), n=n)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        while stored(cache) < done:  # until the 6 answered verdicts are all in the file, however long that takes
            assert proc.poll() is None, "the first run ended before it was killed"
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL and len(JudgeCache(cache)) == done

    judge_server.reply = lambda request: obj(GOOD)
    verdicts = gather(make(cache=cache), n)
    assert all(v.error is None for v in verdicts)
    resumed = [r for r in judge_server.requests if "X-Killed-Run" not in r.headers]
    assert len(resumed) == n - done  # only the unfinished calls are paid for
    assert sum(v.cached for v in verdicts) == done


def test_cache_survives_a_corrupt_entry(tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite3")
    cache._connection().execute("INSERT INTO verdicts VALUES ('k', 'm', 'not json', 0)")
    assert cache.get("k", Score) is None


def test_close_closes_every_thread_s_connection_and_the_cache_reopens_after_it(tmp_path):
    import threading

    from judge_helpers import GOOD, Score

    from assay.judge import JudgeCache, Verdict

    cache = JudgeCache(tmp_path / "c.sqlite3")
    cache.put("main", Verdict(parsed=Score(**GOOD), raw="{}", model="m"))
    worker = threading.Thread(target=lambda: cache.put("worker", Verdict(parsed=Score(**GOOD), raw="{}", model="m")))
    worker.start()
    worker.join()
    cache.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.sqlite3"]  # the last close folded the WAL in
    assert len(cache) == 2 and cache.get("worker", Score).parsed.score == 0.75  # usable again
    cache.close()


def committed(path: Path) -> int:
    """Verdicts committed to the file, seen from a connection of its own."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(path, timeout=30)) as db:
        return db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]


def test_verdicts_of_one_loop_step_are_committed_together_at_its_end(tmp_path):
    """A burst of replies is one transaction (a commit per verdict cost most of the cache's CPU): committed
    when the loop step ends, found by ``get`` before that."""
    path = tmp_path / "c.sqlite3"
    cache = JudgeCache(path)
    cache.check()

    async def burst() -> tuple[int, bool, int]:
        for i in range(5):
            cache.put(f"k{i}", Verdict(parsed=Score(**GOOD), raw="{}", model="m"))
        during = committed(path)
        found = cache.get("k3", Score) is not None
        await asyncio.sleep(0)
        return during, found, committed(path)
    assert asyncio.run(burst()) == (0, True, 5)
    cache.put("outside", Verdict(parsed=Score(**GOOD), raw="{}", model="m"))  # no loop: committed at once
    assert committed(path) == 6


def test_a_step_whose_loop_closed_before_its_end_is_committed_by_close_and_at_exit(tmp_path):
    path = tmp_path / "c.sqlite3"
    cache = JudgeCache(path)
    cache.check()
    loop = asyncio.new_event_loop()

    def put_and_stop() -> None:
        cache.put("k", Verdict(parsed=Score(**GOOD), raw="{}", model="m"))
        loop.stop()  # the loop ends with this step: the flush it scheduled never runs
    loop.call_soon(put_and_stop)
    loop.run_forever()
    loop.close()
    assert committed(path) == 0 and cache.get("k", Score) is not None
    cache.close()
    assert committed(path) == 1

    script = textwrap.dedent(f"""
        import asyncio, sys
        sys.path[:0] = [{str(Path(__file__).parent)!r}]
        from judge_helpers import GOOD, Score
        from assay.judge import JudgeCache, Verdict
        cache = JudgeCache({str(tmp_path / "exit.sqlite3")!r})
        cache.check()
        loop = asyncio.new_event_loop()
        def put_and_stop():
            cache.put("k", Verdict(parsed=Score(**GOOD), raw="{{}}", model="m"))
            loop.stop()
        loop.call_soon(put_and_stop)
        loop.run_forever()
        loop.close()
        assert cache.get("k", Score) is not None
    """)
    subprocess.run([sys.executable, "-c", script], check=True)
    assert committed(tmp_path / "exit.sqlite3") == 1


def test_a_commit_that_failed_stops_the_cache_writing_with_one_warning_and_keeps_the_verdicts(tmp_path):
    """A full disk under the cache: the failed commit was raised at the cache's next use, so the verdict of that
    call, already paid for, became a judge error (182 of 400 on a full tmpfs). Now one CacheWarning, the cache
    stops writing, and every verdict in hand is kept."""
    import sqlite3

    from assay.errors import CacheWarning

    cache = JudgeCache(tmp_path / "c.sqlite3")
    real = cache._connection

    class Full:
        def __init__(self, conn):
            self.conn = conn

        def execute(self, sql, *args):
            if sql.startswith("INSERT"):
                raise sqlite3.OperationalError("database or disk is full")
            return self.conn.execute(sql, *args)

    async def put() -> None:
        cache._connection = lambda: Full(real())  # type: ignore[method-assign]
        cache.put("k", Verdict(parsed=Score(**GOOD), raw="{}", model="m"))
        await asyncio.sleep(0)  # the step ends: its commit fails with nobody to raise to
    asyncio.run(put())
    cache._connection = real  # type: ignore[method-assign]
    with pytest.warns(CacheWarning, match="could not be written .*disk is full.*verdicts are kept but no longer cached"):
        assert cache.get("other", Score) is None  # a miss, not an error
    assert cache.get("k", Score) is None  # not kept as if stored
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        cache.put("k2", Verdict(parsed=Score(**GOOD), raw="{}", model="m"))  # no longer written, no error
        cache.flush()
        assert cache.get("k2", Score) is None
