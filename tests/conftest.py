"""Suite-wide isolation: no test writes to the user's run store or judge cache."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_user_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path_factory.mktemp("user-state")
    monkeypatch.setenv("ASSAY_STORE", str(state / "runs.sqlite3"))
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(state / "cache"))
    monkeypatch.delenv("ASSAY_JUDGE", raising=False)
    monkeypatch.delenv("ASSAY_JUDGE_BASE_URL", raising=False)
