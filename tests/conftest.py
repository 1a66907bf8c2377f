"""Suite-wide fixtures: no network, no user state, no real keys; the scripted judge server.

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
from hypothesis import settings

# A per-example deadline is a timed test: on a shared, loaded machine it fails for no fault of the code.
settings.register_profile("assay", deadline=None, derandomize=True, database=None)  # CI runs the same examples every time
settings.load_profile("assay")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # so `tests.support` imports under plain `pytest` too
    sys.path.insert(0, str(ROOT))

from assay.metrics._base import REGISTRY  # noqa: E402
from tests.support.browser import chromium  # noqa: E402,F401  (registers the fixture)
from tests.support.judge_server import judge_server  # noqa: E402,F401  (registers the fixture)
from tests.support.plugin_dist import installed_plugin  # noqa: E402,F401  (registers the fixture)

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "", None}
_KEYS = ("ASSAY_JUDGE", "ASSAY_JUDGE_BASE_URL", "ASSAY_JUDGE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL",
         "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY", "GROQ_API_KEY",
         "TOGETHER_API_KEY", "OPENROUTER_API_KEY", "OLLAMA_HOST", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT",
         "LITELLM_BASE_URL")


def _is_local(host: Any) -> bool:
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return str(host).endswith(".localhost")


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Fail the test on any connection or name lookup to a non-loopback address."""
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
def isolated_user_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No real keys, no user run store or judge cache: every test starts from a known environment."""
    for name in _KEYS:
        monkeypatch.delenv(name, raising=False)
    state = tmp_path_factory.mktemp("user-state")
    monkeypatch.setenv("ASSAY_STORE", str(state / "runs.sqlite3"))
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(state / "cache"))


@pytest.fixture()
def registry_snapshot() -> Any:
    """Restore the global registry after a test that registers metrics."""
    REGISTRY.names()  # load the built-ins first
    saved = dict(REGISTRY._entries)
    yield REGISTRY
    REGISTRY._entries.clear()
    REGISTRY._entries.update(saved)
