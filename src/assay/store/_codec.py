"""RunResult <-> JSON: the results files ``assay run --output`` writes, read back."""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..model import InputIssue, MetricSummary, RunResult, TraceResult

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def new_run_id(now: float | None = None) -> str:
    """A short id that sorts by creation time: 9 base-32 digits of milliseconds + 4 random ones."""
    ms = int((time.time() if now is None else now) * 1000)
    head = "".join(_CROCKFORD[(ms >> (5 * i)) & 31] for i in reversed(range(9)))
    return head + "".join(secrets.choice(_CROCKFORD) for _ in range(4))


def summary_from_dict(name: str, d: dict[str, Any]) -> MetricSummary:
    def ci(v: Any) -> tuple[float, float] | None:
        return None if v is None else (float(v[0]), float(v[1]))

    return MetricSummary(
        name=d.get("name", name), dimension=d.get("dimension", "custom"), threshold=d.get("threshold"),
        n=d.get("n", 0), n_null=d.get("n_null", 0), n_errored=d.get("n_errored", 0), n_passed=d.get("n_passed", 0),
        mean=d.get("mean"), pass_rate=d.get("pass_rate"), mean_ci=ci(d.get("mean_ci")),
        pass_rate_ci=ci(d.get("pass_rate_ci")), warnings=dict(d.get("warnings") or {}),
        judge_calls=d.get("judge_calls", 0), tokens=d.get("tokens", 0), cost_usd=d.get("cost_usd"))


def issue_from_dict(d: dict[str, Any]) -> InputIssue:
    return InputIssue(d.get("source", ""), d.get("line"), d.get("field"), d.get("message", ""))


def result_from_dict(d: dict[str, Any], traces: list[TraceResult] | None = None) -> RunResult:
    """The inverse of ``RunResult.to_dict`` (``traces`` given separately when streamed)."""
    if traces is None:
        traces = [TraceResult.from_dict(t) for t in d.get("traces") or []]
    return RunResult(traces=traces,
                     summary={k: summary_from_dict(k, v) for k, v in (d.get("summary") or {}).items()},
                     run=dict(d.get("run") or {}),
                     input_issues=[issue_from_dict(i) for i in d.get("input_issues") or []],
                     statistics=dict(d.get("statistics") or {}))


def read_results_file(path: str | os.PathLike[str]) -> RunResult:
    """A results file from ``assay run --output``: JSON (``-f json``) or JSON Lines (``-f jsonl``)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot read results file: {exc.strerror}", source=str(path)) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return _read_jsonl(text, str(path))
    if not isinstance(doc, dict) or "summary" not in doc or "run" not in doc:
        raise DataError("not an assay results file (expected an object with 'run' and 'summary')", source=str(path))
    try:
        return result_from_dict(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"malformed results file: {type(exc).__name__}: {exc}", source=str(path)) from None


def _read_jsonl(text: str, source: str) -> RunResult:
    traces: list[TraceResult] = []
    tail: dict[str, Any] | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if rec.get("summary_record"):
                tail = rec
            else:
                traces.append(TraceResult.from_dict(rec))
        except (json.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError) as exc:
            raise DataError(f"not an assay results record: {exc}", source=source, line=lineno) from None
    if tail is None:
        raise DataError("no summary record: an unfinished JSON Lines results file?", source=source)
    return result_from_dict(tail, traces)


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=_default)


def _default(o: Any) -> Any:
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)
