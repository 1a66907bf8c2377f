"""Judge test fixtures: the scripted server, a fast judge factory, and a guard against the network.

The guard makes any connection (or name lookup) to a non-loopback address raise and fail the
test, even when a backend would have swallowed the error into an errored Verdict.
"""

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

from assay.judge import make_judge  # noqa: E402
from tests.support.judge_server import JudgeServer, judge_server  # noqa: E402,F401  (fixture)

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "", None}


def _is_local(host: Any) -> bool:
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return str(host).endswith(".localhost")


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Fail the test on any connection to a non-loopback address."""
    violations: list[str] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
            violations.append(f"connect to {address!r}")
            raise ConnectionRefusedError(f"test guard: no network access to {address!r}")

    def connect(self: socket.socket, address: Any) -> Any:
        check(self, address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        check(self, address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if not _is_local(name):
            violations.append(f"name lookup of {name!r}")
            raise socket.gaierror(f"test guard: no name lookups for {name!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield violations
    assert not violations, f"test tried to reach the network: {violations}"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No real keys, no user cache: every test starts from a known environment."""
    for name in ("ASSAY_JUDGE", "ASSAY_JUDGE_BASE_URL", "ASSAY_JUDGE_API_KEY", "OPENAI_API_KEY",
                 "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY",
                 "GROQ_API_KEY", "TOGETHER_API_KEY", "OPENROUTER_API_KEY", "OLLAMA_HOST", "AZURE_OPENAI_API_KEY",
                 "AZURE_OPENAI_ENDPOINT", "LITELLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture()
def make(judge_server: JudgeServer, tmp_path: Path) -> Any:
    """``make(**options)``: a judge on the scripted server with test-sized delays and no cache."""

    def build(spec: str = "scripted", **options: Any) -> Any:
        options.setdefault("cache", False)
        options.setdefault("base_delay", 0.01)
        options.setdefault("timeout", 2.0)
        return make_judge(f"openai-compatible:{spec}@{judge_server.url}", **options)

    return build
