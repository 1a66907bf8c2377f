"""Fixtures for the judge-metric tests: the scripted server (for end-to-end tests) and a network guard."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # so `tests.support` imports under plain `pytest` too
    sys.path.insert(0, str(ROOT))
HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from tests.support.judge_server import judge_server  # noqa: E402,F401  (fixture)
