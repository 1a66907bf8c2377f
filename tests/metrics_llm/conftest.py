"""Judge-metric tests import their case data from this folder (network guard, scripted server
fixture and registry snapshot: tests/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
