"""Glue for ``assay run``, ``assay runs`` and ``assay report``: judge, outputs, progress, store, report.

The store and the report are independent layers (neither imports the other); this module is
where they meet: a run streams into the store while it is scored, and reports load runs from it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..engine import Evaluation
from ..engine._compare import compare_runs
from ..errors import ConfigError, DataError
from ..model import InputIssue, RunResult, TraceResult, encode_run, encode_summary_record, encode_trace
from ..report import MAX_TRACES, MAX_VIEWS, to_csv, to_junit, write_report
from ..report.screenshot import screenshot as take_screenshot
from ..store import InputTap, RunStore, default_store_path, load_run, load_traces


def _json_default(o: Any) -> Any:
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def dumps(obj: Any, indent: int | None = None) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=indent, default=_json_default)


def store_path(store: str | None, no_store: bool) -> Path | None:
    """The run store file for ``--store`` / ``--no-store`` (default: $ASSAY_STORE or the user data dir)."""
    if store and no_store:
        raise ConfigError("give --store PATH or --no-store, not both")
    if no_store:
        return None
    return Path(store).expanduser() if store else default_store_path()


def open_store(store: str | None) -> RunStore:
    """The run store named by --store, else the default one; ConfigError when it is off or missing."""
    path = Path(store).expanduser() if store else default_store_path()
    if path is None:
        raise ConfigError("the run store is off (ASSAY_STORE=off); pass --store PATH")
    if not path.exists():
        raise ConfigError(f"no run store at {str(path)!r} yet: `assay run` creates it (or pass --store PATH)")
    return RunStore(path)


def run_session(paths: list[str], *, metrics: list[Any] | None, judge: str | None, judge_options: dict[str, Any],
                weights: dict[str, float], thresholds: dict[str, float], input_format: str | None, strict: bool,
                output: str | None, fmt: str, progress: bool, store: Path | None = None,
                html: str | None = None, repeats: int = 1, intervals: bool = True) -> RunResult:
    """Score ``paths``, streaming into ``store`` (when given) and the chosen output; ``html`` writes a report."""
    judge_obj = None
    if judge is not None:
        from ..judge import make_judge
        judge_obj = make_judge(judge, **judge_options)
    evaluation = Evaluation(metrics, judge=judge_obj, weights=weights, thresholds=thresholds, repeats=repeats,
                            attach_traces=store is not None or bool(html))
    for p in paths:  # before the store records a run that cannot start
        if p != "-" and not os.path.exists(p):
            raise DataError("no such file", source=p)
    tap = InputTap(paths)  # hashes and sizes taken while the inputs are scored: each is read once
    inputs = [{"path": p, "sha256": None, "bytes": None} for p in tap.paths]
    with ExitStack() as stack:
        recorder = None
        if store is not None:
            recorder = stack.enter_context(RunStore(store).start(
                inputs=inputs, metrics=_metric_specs(evaluation), judge=_judge_model(judge_obj),
                config=_run_config(evaluation, input_format, strict)))
        report_traces: dict[str, Any] = {}
        stored_inputs = {"passed": 0, "other": 0}
        sink = None
        if fmt == "jsonl":
            sink = stack.enter_context(open(output, "wb")) if output else sys.stdout.buffer
        callbacks = []
        if evaluation.attach_traces:
            def keep(item: TraceResult | InputIssue) -> None:
                trace = item.trace if isinstance(item, TraceResult) else None
                if recorder is not None:
                    recorder.add(item, trace if trace is not None and _store_input(item, stored_inputs) else None)
                if html and trace is not None and _worth_keeping(item, report_traces):  # type: ignore[arg-type]
                    report_traces[item.source or item.id] = trace  # type: ignore[union-attr]
            callbacks.append(keep)
        if sink is not None:
            def write(item: TraceResult | InputIssue) -> None:
                if isinstance(item, TraceResult):
                    sink.write(encode_trace(item) + b"\n")
            callbacks.append(write)
        if progress:
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn
            bar = stack.enter_context(Progress(TextColumn("scoring"), BarColumn(), TaskProgressColumn(),
                                               TimeRemainingColumn(), TextColumn("{task.fields[extra]}"),
                                               transient=True))
            task = bar.add_task("scoring", total=tap.total_bytes(), extra="")
            judge_stats = getattr(judge_obj, "stats", None)
            seen = [0]

            def tick(item: TraceResult | InputIssue) -> None:
                seen[0] += 1
                if seen[0] % 64 and judge_stats is None:  # the bar redraws ~10 times a second anyway
                    return
                extra = f"{seen[0]:,} records"
                if judge_stats is not None:
                    extra += "  " + _judge_line(judge_stats)
                bar.update(task, completed=tap.bytes_read(), extra=extra)
            callbacks.append(tick)

        def on_result(item: TraceResult | InputIssue) -> None:
            for cb in callbacks:
                cb(item)

        # per-trace results are kept only for whole-document outputs (and a report with no store to
        # read them back from); the table reads summaries and the first failed traces
        keep = fmt in ("json", "junit", "csv") or (bool(html) and store is None)
        result = evaluation.run(paths, input_format=input_format, strict=strict, keep_traces=keep,
                                intervals=intervals, on_result=on_result, tap=tap)
        inputs = tap.info()
        result.run["input_files"] = inputs
        if input_format:
            result.run["input_format"] = input_format
        if recorder is not None:
            result.run["run_id"] = recorder.run_id
            recorder.finish(result)
        if fmt == "jsonl" and sink is not None:
            sink.write(encode_summary_record(result) + b"\n")
            sink.flush()
        elif fmt in ("json", "junit", "csv"):
            data = encode_run(result, indent=2) + b"\n" if fmt == "json" else (
                to_junit(result) if fmt == "junit" else to_csv(result)).encode("utf-8")
            if output:
                Path(output).write_bytes(data)
            else:
                sys.stdout.flush()
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
    if html:
        shown = result
        if not result.traces and store is not None and result.run.get("run_id"):
            shown = RunStore(store).load(result.run["run_id"])  # -f jsonl kept no traces in memory
        write_report(html, shown, traces=report_traces)
    return result


STORED_INPUTS_PASSED, STORED_INPUTS_OTHER = 1000, 10_000
"""Input traces written to the run store per run: the first passing ones and the failed or unscored
ones, so a report of a stored run can show what went wrong without the store growing by the full
input size on every run (results are always stored)."""


def _store_input(item: TraceResult, counts: dict[str, int]) -> bool:
    key, cap = ("passed", STORED_INPUTS_PASSED) if item.passed is True else ("other", STORED_INPUTS_OTHER)
    if counts[key] >= cap:
        return False
    counts[key] += 1
    return True


def _worth_keeping(item: TraceResult, kept: dict[str, Any]) -> bool:
    """Input traces held in memory for --html: as many as the report has views for, plus failed ones up to
    twice that (the report shows failed traces first), so memory follows what is shown, not the run's size."""
    return len(kept) < MAX_VIEWS or (item.passed is not True and len(kept) < 2 * MAX_VIEWS)


def _metric_specs(evaluation: Evaluation) -> list[dict[str, Any]]:
    return [{"name": m.spec.name, "version": m.spec.version, "dimension": m.spec.dimension,
             "params": {f.name: getattr(m, f.name) for f in dataclasses.fields(m) if f.init}}
            for m in evaluation.metrics]


def _run_config(evaluation: Evaluation, input_format: str | None, strict: bool) -> dict[str, Any]:
    dims = sorted(set(evaluation.dimension_of.values()))
    return {"dimension_weights": {d: evaluation.dims.weight(d) for d in dims},
            "dimension_thresholds": {d: evaluation.dims.threshold(d) for d in dims},
            "skipped_metrics": dict(evaluation.skipped), "input_format": input_format, "strict": strict}


def _judge_model(judge: Any) -> dict[str, Any] | None:
    return None if judge is None else {"model": getattr(judge, "model", type(judge).__name__)}


def make_report(ref: str, output: str, *, store: str | None = None, comparison: str | None = None,
                baseline: str | None = None, title: str | None = None, max_traces: int = MAX_TRACES,
                screenshot: str | None = None) -> RunResult:
    """``assay report``: load the run (id, prefix, latest, results file) and its traces; write HTML (and PNG).

    The comparison section comes from ``comparison`` (a JSON file) or is computed against ``baseline``.
    """
    if comparison and baseline:
        raise ConfigError("give --comparison FILE or --baseline RUN, not both")
    result = load_run(ref, store=store)
    traces = load_traces(result, store=store)
    comp = base_run = None
    if baseline:
        base_run = load_run(baseline, store=store)
        comp = compare_runs(base_run, result)
    if comparison:
        try:
            comp = json.loads(Path(comparison).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--comparison {comparison!r}: cannot read a JSON comparison: {exc}") from None
    write_report(output, result, traces=traces, comparison=comp, title=title, max_traces=max_traces,
                 baseline=base_run)
    if screenshot:
        take_screenshot(output, screenshot)
    return result


def _judge_line(stats: Any) -> str:
    d = stats.to_dict() if hasattr(stats, "to_dict") else vars(stats)
    parts = [f"calls {d.get('calls', 0)}"]
    tokens = d.get("input_tokens", 0) + d.get("output_tokens", 0)
    parts.append(f"tokens {tokens}")
    if d.get("cost_usd") is not None:
        parts.append(f"${d['cost_usd']:.4f}")
    return "  ".join(parts)
