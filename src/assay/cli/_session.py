"""Glue for ``assay run``: build the judge, stream results to the output, drive the progress bar."""

from __future__ import annotations

import json
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..engine import Evaluation
from ..model import InputIssue, RunResult, TraceResult


def count_records(paths: list[str]) -> int | None:
    """Line count of plain files (a progress total); None when unknown (stdin)."""
    total = 0
    for p in paths:
        if p == "-" or not os.path.isfile(p):
            return None
        with open(p, "rb") as f:
            while chunk := f.read(1 << 22):
                total += chunk.count(b"\n")
    return total or None


def _json_default(o: Any) -> Any:
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def dumps(obj: Any, indent: int | None = None) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=indent, default=_json_default)


def run_session(paths: list[str], *, metrics: list[Any] | None, judge: str | None, judge_options: dict[str, Any],
                weights: dict[str, float], thresholds: dict[str, float], input_format: str | None, strict: bool,
                output: str | None, fmt: str, progress: bool) -> RunResult:
    judge_obj = None
    if judge is not None:
        from ..judge import make_judge
        judge_obj = make_judge(judge, **judge_options)
    evaluation = Evaluation(metrics, judge=judge_obj, weights=weights, thresholds=thresholds)
    with ExitStack() as stack:
        sink = None
        if fmt == "jsonl":
            sink = stack.enter_context(open(output, "w", encoding="utf-8")) if output else sys.stdout
        callbacks = []
        if sink is not None:
            def write(item: TraceResult | InputIssue) -> None:
                if isinstance(item, TraceResult):
                    sink.write(dumps(item.to_dict()) + "\n")
            callbacks.append(write)
        if progress:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
            bar = stack.enter_context(Progress(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(),
                                               TimeRemainingColumn(), TextColumn("{task.fields[extra]}"),
                                               transient=True))
            task = bar.add_task("scoring", total=count_records(paths), extra="")
            judge_stats = getattr(judge_obj, "stats", None)

            def tick(item: TraceResult | InputIssue) -> None:
                extra = ""
                if judge_stats is not None:
                    extra = _judge_line(judge_stats)
                bar.update(task, advance=1, extra=extra)
            callbacks.append(tick)

        def on_result(item: TraceResult | InputIssue) -> None:
            for cb in callbacks:
                cb(item)

        result = evaluation.run(paths, input_format=input_format, strict=strict, keep_traces=fmt != "jsonl",
                                on_result=on_result)
        if fmt == "jsonl" and sink is not None:
            tail = result.to_dict()
            tail.pop("traces")
            sink.write(dumps({"summary_record": True, **tail}) + "\n")
        elif fmt == "json":
            text = dumps(result.to_dict(), indent=2)
            if output:
                Path(output).write_text(text + "\n", encoding="utf-8")
            else:
                sys.stdout.write(text + "\n")
    return result


def _judge_line(stats: Any) -> str:
    d = stats.to_dict() if hasattr(stats, "to_dict") else vars(stats)
    parts = [f"calls {d.get('calls', 0)}"]
    tokens = d.get("input_tokens", 0) + d.get("output_tokens", 0)
    parts.append(f"tokens {tokens}")
    if d.get("cost_usd") is not None:
        parts.append(f"${d['cost_usd']:.4f}")
    return "  ".join(parts)
