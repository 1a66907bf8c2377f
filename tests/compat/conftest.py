"""Fixtures for the compat tests: the scripted judge server, a network guard, a registry snapshot,
and a judge environment that sends bare model strings ("gpt-4o") to the scripted server."""

from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # so `tests.support` imports under plain `pytest` too
    sys.path.insert(0, str(ROOT))

from assay.metrics import REGISTRY
from tests.support.judge_server import JudgeServer, judge_server  # noqa: F401  (fixture)


def _local(host: Any) -> bool:
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Fail on any connection to a non-loopback address; keep the judge cache in tmp_path."""
    real = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
            raise AssertionError(f"test tried to reach the network: {address!r}")
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("ASSAY_JUDGE", "ASSAY_JUDGE_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture()
def openai_env(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:  # noqa: F811
    """Bare model strings such as "gpt-4o" (the seeds' spelling) reach the scripted server."""
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return judge_server


@pytest.fixture()
def chat_url(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:  # noqa: F811
    """The fake LangChain models of tests/compat/fakes.py post to the scripted server."""
    monkeypatch.setenv("ASSAY_TEST_CHAT_URL", judge_server.url)
    return judge_server


@pytest.fixture()
def registry_snapshot() -> Any:
    """Restore the global registry after a test that registers metrics."""
    REGISTRY.names()  # load the built-ins first
    saved = dict(REGISTRY._classes)
    yield REGISTRY
    REGISTRY._classes.clear()
    REGISTRY._classes.update(saved)


def schema_name(request: dict) -> str:
    """The verdict schema a request asks for (OpenAI json_schema response format)."""
    fmt = request.get("response_format") or {}
    return fmt.get("json_schema", {}).get("name", "")
