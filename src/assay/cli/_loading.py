"""Find a run by results-file path or run-store id."""

from __future__ import annotations

import json
import os

from ..errors import ConfigError, DataError
from ..model import RunResult


def load_result(ref: str, store_path: str | None = None) -> RunResult:
    if os.path.isfile(ref):
        try:
            with open(ref, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot read results file: {exc}", source=ref) from None
        if not isinstance(data, dict) or "summary" not in data or "traces" not in data:
            raise DataError("not an assay results file (write one with `assay run --output FILE`)", source=ref)
        return RunResult.from_dict(data)
    try:
        from ..store import load_run
    except ImportError:
        raise ConfigError(f"{ref!r}: no such results file") from None
    return load_run(ref, store_path) if store_path else load_run(ref)
