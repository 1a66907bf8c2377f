"""Judge test fixtures: a fast judge factory on the scripted server (the network guard and the
server fixture come from tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.judge import make_judge
from tests.support.judge_server import JudgeServer


@pytest.fixture()
def make(judge_server: JudgeServer, tmp_path: Path) -> Any:
    """``make(**options)``: a judge on the scripted server with test-sized delays and no cache."""

    def build(spec: str = "scripted", **options: Any) -> Any:
        options.setdefault("cache", False)
        options.setdefault("base_delay", 0.01)
        options.setdefault("timeout", 2.0)
        return make_judge(f"openai-compatible:{spec}@{judge_server.url}", **options)

    return build
