"""Every test gets its own run store: nothing touches the user's data dir."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "runs.sqlite3"))
