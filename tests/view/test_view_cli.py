"""``assay view`` as users start it: a real subprocess, its printed URL, the token off loopback, bad stores."""

from __future__ import annotations

import http.client
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from view_data import store_with_runs

SRC = str(Path(__file__).parents[2] / "src")


def start(*args: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.Popen([sys.executable, "-m", "assay", "view", "--no-open", "--port", "0", *args], env=env,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    m = re.search(r"(http://[^ ]+/(\?token=\S+)?)$", line.strip())
    if m is None:
        proc.kill()
        raise AssertionError(f"no URL printed: {line!r}")
    return proc, m[1]


def get(port: int, path: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read().decode()
    conn.close()
    return r.status, body


def test_serves_the_store_it_is_given_on_127_0_0_1(tmp_path):
    store, ids = store_with_runs(tmp_path)
    proc, url = start("--store", str(store.path))
    try:
        assert url.startswith("http://127.0.0.1:") and "token" not in url
        status, body = get(int(url.split(":")[2].rstrip("/")), "/")
        assert status == 200 and f"/runs/{ids['demo']}" in body
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_any_other_address_prints_a_token_and_requires_it(tmp_path):
    store, _ = store_with_runs(tmp_path)
    proc, url = start("--store", str(store.path), "--host", "0.0.0.0")
    try:
        m = re.match(r"http://0\.0\.0\.0:(\d+)/\?token=(\S+)$", url)
        assert m, url
        port, token = int(m[1]), m[2]
        assert get(port, "/")[0] == 403
        assert get(port, "/?token=" + token)[0] == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("case", ["missing", "not-a-store", "old-schema"])
def test_a_store_it_cannot_read_is_one_error_line(tmp_path, case):
    path = tmp_path / "runs.sqlite3"
    if case == "not-a-store":
        path.write_bytes(b"this is not sqlite" * 100)
    elif case == "old-schema":
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE runs (id TEXT)")
            conn.execute("PRAGMA user_version = 3")
    before = path.read_bytes() if path.exists() else None
    done = subprocess.run([sys.executable, "-m", "assay", "view", "--no-open", "--store", str(path)],
                          env={**os.environ, "PYTHONPATH": SRC}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1, done.stderr
    assert {"missing": "does not exist yet", "not-a-store": "not a usable assay run store",
            "old-schema": "`assay runs` upgrades it"}[case] in done.stderr
    assert (path.read_bytes() if path.exists() else None) == before  # never created, written or upgraded
