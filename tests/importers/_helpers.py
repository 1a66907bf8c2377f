"""Shared helpers of the importer tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.importers import read_traces
from assay.model import InputIssue, Trace

DATA = Path(__file__).resolve().parent.parent / "data" / "importers"


def read_all(path: str | Path, **kwargs: Any) -> list[tuple[str, Trace | InputIssue]]:
    return list(read_traces(str(path), **kwargs))


def traces_of(path: str | Path, **kwargs: Any) -> dict[str, Trace]:
    return {t.id: t for _, t in read_all(path, **kwargs) if isinstance(t, Trace)}


def issues_of(path: str | Path, **kwargs: Any) -> list[InputIssue]:
    return [i for _, i in read_all(path, **kwargs) if isinstance(i, InputIssue)]


def plain(trace: Trace) -> dict[str, Any]:
    """A trace as JSON data, defaults left out: what the tests compare against."""
    return json.loads(trace.model_dump_json())
