"""``import assay.judge`` is light: SDKs load only when a backend is built."""

from __future__ import annotations

import json
import subprocess
import sys

import assay.judge

HEAVY = ("openai", "anthropic", "httpx", "httpx2", "httpcore", "langchain", "langchain_core", "sqlite3", "_sqlite3",
         "platformdirs", "numpy")


def test_import_loads_no_sdk_and_reads_no_environment():
    code = (
        "import os, sys, json\n"
        "class Spy(dict):\n"
        "    reads = []\n"
        "    def get(self, k, d=None):\n"
        "        Spy.reads.append(k); return super().get(k, d)\n"
        "    def __getitem__(self, k):\n"
        "        Spy.reads.append(k); return super().__getitem__(k)\n"
        "import threading; n = threading.active_count()\n"
        "os.environ = Spy(os.environ)\n"
        "import assay.judge\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "print(json.dumps({'heavy': heavy, 'env': [k for k in Spy.reads if 'ASSAY' in k or 'KEY' in k],"
        " 'threads': threading.active_count() == n}))\n"
    )
    out = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
    assert out == {"heavy": [], "env": [], "threads": True}


def test_facade_exports_what_it_lists():
    assert len(set(assay.judge.__all__)) == len(assay.judge.__all__)
    for name in assay.judge.__all__:
        assert getattr(assay.judge, name) is not None, name
    for name in ("Judge", "JudgeRequest", "Verdict", "make_judge", "judge_from_env", "Fence", "JudgeStats"):
        assert name in assay.judge.__all__


def test_seam_matches_the_architecture_contract():
    import dataclasses

    from assay.judge import JudgeRequest, Verdict

    assert [f.name for f in dataclasses.fields(JudgeRequest)] == [
        "messages", "schema", "key", "repeat", "temperature", "max_tokens", "content_key"]
    assert [f.name for f in dataclasses.fields(Verdict)] == [
        "parsed", "raw", "model", "input_tokens", "output_tokens", "cost_usd", "latency_s", "cached", "attempts",
        "error", "skipped", "queued_s", "tokens"]
    assert JudgeRequest.__dataclass_params__.frozen and Verdict.__dataclass_params__.frozen
    assert hasattr(JudgeRequest, "__slots__") and hasattr(Verdict, "__slots__")


def test_the_network_guard_refuses_non_local_addresses(no_network):
    import socket

    import pytest

    with socket.socket() as sock, pytest.raises(ConnectionRefusedError, match="no network access"):
        sock.connect(("192.0.2.1", 443))  # TEST-NET-1: never routable anyway
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("api.openai.com", 443)
    assert len(no_network) == 2
    no_network.clear()  # the refusals were the point of this test
