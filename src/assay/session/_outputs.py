"""Where a run's results are written: JSON, JSON Lines, CSV, JUnit, the table and the HTML report,
as :class:`~assay.engine.RunSink` objects that ``assay run``, ``assay.evaluate(outputs=...)`` and
the pytest plugin share.

A file is written atomically once the run is done (a streamed format goes to a temporary file
renamed into place), and not at all when the run is interrupted or fails.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .._files import atomic_write, check_writable, write_atomic
from ..engine._sinks import ContextSink, Sink
from ..engine._spec import RunSpec
from ..errors import ConfigError
from ..model import (
    InputIssue, RunResult, TraceResult, encode_run, encode_summary_record, encode_trace, encode_trace_into,
)

# The report package (HTML templates, CSV and JUnit writers) is imported where a report or one of
# those formats is written: most runs write none, and it is a tenth of `assay run`'s start-up.

FORMATS = ("table", "json", "jsonl", "junit", "csv", "html")
SUFFIX_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".xml": "junit", ".csv": "csv", ".json": "json",
                  ".html": "html", ".htm": "html", ".txt": "table"}
"""The format a file's suffix names."""
DOCUMENTS = ("json", "junit", "table")
"""Outputs written whole once the run is done (jsonl and csv stream; html is the report)."""

Output = tuple[str, str, str]
"""A file to write: ``(path, format, the flag that named it)``."""


def _json_default(o: Any) -> Any:
    if isinstance(o, (set, tuple)):
        return list(o)
    if hasattr(o, "to_dict"):  # a typed analysis result
        return o.to_dict()
    return str(o)


def dumps(obj: Any, indent: int | None = None) -> str:
    """JSON of an analysis result or a listing (non-ASCII kept, tuples as lists, other values as text)."""
    return json.dumps(obj, ensure_ascii=False, indent=indent, default=_json_default)


def plan_outputs(outputs: Iterable[str], fmt: str | None, html: str | None = None,
                 quiet: bool = False) -> tuple[str | None, list[Output]]:
    """What goes to stdout (a format, or None) and the files to write as ``(path, format, flag)``.

    Each ``-o`` takes its format from its suffix; ``-f`` names the format of files whose suffix
    names none, and contradicting a suffix is an error (nothing is scored). Without ``-o`` stdout
    gets ``-f`` (default: the table); with ``-o`` it gets the table unless ``quiet``.
    """
    outputs = [str(o) for o in outputs]
    if fmt is not None and fmt not in FORMATS:
        raise ConfigError.unknown("output format", fmt, FORMATS)
    if fmt == "html" and not outputs:
        raise ConfigError("-f html writes a file: give -o report.html (or --html report.html)")
    files: list[Output] = []
    seen: dict[str, str] = {}
    for flag, path in [*(("-o", o) for o in outputs), *((("--html", html),) if html else ())]:
        suffix = Path(path).suffix.lower()
        implied = "html" if flag == "--html" else SUFFIX_FORMATS.get(suffix)
        if fmt and implied and implied != fmt and flag == "-o":
            raise ConfigError(f"-f {fmt} contradicts -o {path!r}: a {suffix} file gets {implied}; "
                              f"drop -f, or give the file a suffix that names {fmt}")
        key = os.path.abspath(path)
        if key in seen:
            raise ConfigError(f"{flag} {path!r}: the same file is already an output ({seen[key]}); "
                              "give each output its own file")
        seen[key] = f"{flag} {path}"
        files.append((path, implied or fmt or "json", flag))
    if not outputs:
        return (None if quiet and (fmt or "table") == "table" else fmt or "table"), files
    return (None if quiet else "table"), files


def output_sinks(files: Iterable[Output], fmt: str | None = None, *, dimensions: dict[str, str] | None = None,
                 table: Callable[[RunResult], str] | None = None, inputs: Iterable[Any] = ()) -> list[Sink]:
    """The sinks writing ``files`` and stdout (``fmt``: json, jsonl, junit or csv; table or None:
    nothing here), in the order they must finish: whole documents first, then the streamed files
    renamed into place, then the HTML report. Every path is checked for writing first.

    ``dimensions``: metric name -> dimension (the CSV's column); ``table``: renders the table
    as text (``-o results.txt``; the CLI's renderer); ``inputs``: the run's input files, which no output
    may be.
    """
    files = list(files)
    inputs = list(inputs)
    for path, _, flag in files:  # before any scoring or judge spending
        check_writable(path, flag, uses=inputs)
    dims = dimensions or {}
    sinks: list[Sink] = [DocumentSink(path, f, table=table) for path, f, _ in files if f in DOCUMENTS]
    if fmt in ("json", "junit"):
        sinks.append(DocumentSink(None, fmt))
    sinks += [jsonl_sink(path) for path, f, _ in files if f == "jsonl"]
    sinks += [csv_sink(path, dims) for path, f, _ in files if f == "csv"]
    if fmt == "jsonl":
        sinks.append(jsonl_sink(None))
    elif fmt == "csv":
        sinks.append(csv_sink(None, dims))
    html = [path for path, f, _ in files if f == "html"]
    if html:
        sinks.append(ReportSink(html))
    return sinks


def keeps_traces(files: Iterable[Output], fmt: str | None) -> bool:
    """Whether per-trace results must stay in memory: only for whole-document outputs (the report has
    its digest; the table reads summaries and the first failed traces)."""
    return bool(({f for _, f, _ in files} | {fmt}) & {"json", "junit"})


class StreamSink(Sink):
    """Results written as they come (JSON Lines, CSV) into a file, renamed into place when the run is done
    (nothing on abort), or stdout (``path`` None): a header, lines per trace, a footer."""

    def __init__(self, path: str | None, lines: Callable[[TraceResult], bytes], header: bytes = b"",
                 footer: Callable[[RunResult], bytes] | None = None) -> None:
        self.file = ContextSink(atomic_write(path)) if path is not None else None
        self.lines, self.header, self.footer = lines, header, footer

    def begin(self, spec: RunSpec) -> None:
        if self.file is not None:
            self.file.begin(spec)
        self.out = self.file.value if self.file is not None else sys.stdout.buffer
        if self.header:
            self.out.write(self.header)

    def add(self, item: TraceResult | InputIssue) -> None:
        if isinstance(item, TraceResult):
            self.out.write(self.lines(item))

    def finish(self, result: RunResult) -> None:
        if self.footer is not None:
            self.out.write(self.footer(result))
        self.out.flush()
        if self.file is not None:
            self.file.finish(result)

    def abort(self, reason: str) -> None:
        if self.file is not None:
            self.file.abort(reason)


def jsonl_sink(path: str | None) -> StreamSink:
    """JSON Lines: one line per trace result, then the summary record."""
    return _JsonLines(path, lambda item: encode_trace(item) + b"\n",
                      footer=lambda result: encode_summary_record(result) + b"\n")


class _JsonLines(StreamSink):
    """The JSON Lines sink: each line encoded into one reused buffer (no bytes object per line)."""

    def begin(self, spec: RunSpec) -> None:
        super().begin(spec)
        self.buffer = bytearray()

    def add(self, item: TraceResult | InputIssue) -> None:
        if type(item) is TraceResult or isinstance(item, TraceResult):
            buffer = self.buffer
            encode_trace_into(item, buffer)
            buffer.append(10)  # "\n"
            self.out.write(buffer)


def csv_sink(path: str | None, dimensions: dict[str, str]) -> StreamSink:
    """CSV streamed as JSON Lines is (one row per trace x metric): memory does not grow with the run."""
    from .. import report  # the package's writer, looked up when used
    return StreamSink(path, lambda item: report.csv_rows(item, dimensions), header=report.csv_header())


class DocumentSink(Sink):
    """A whole-run output (json, junit, the table) into a file, atomically, or stdout (``path`` None)."""

    def __init__(self, path: str | None, fmt: str, table: Callable[[RunResult], str] | None = None) -> None:
        if fmt == "table" and table is None:
            raise ConfigError(f"{path}: the table is the command line's: write .json, .jsonl, .csv, .xml or .html")
        self.path, self.fmt, self.table = path, fmt, table

    def finish(self, result: RunResult) -> None:
        data = self.table(result).encode("utf-8") if self.table is not None and self.fmt == "table" \
            else document(result, self.fmt)
        if self.path is not None:
            write_atomic(self.path, data)
            return
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def document(result: RunResult, fmt: str) -> bytes:
    """A whole-run output: json or junit."""
    if fmt == "json":
        return encode_run(result, indent=2) + b"\n"
    from ..report import to_junit
    return to_junit(result).encode("utf-8")


class ReportSink(Sink):
    """The HTML report: a digest of the stream (memory follows what the page shows, not the run's size)
    and the input traces worth showing (the evaluation must attach them), written once the run is done."""

    def __init__(self, paths: list[str]) -> None:
        from ..report import MAX_TRACES, ReportDigest
        self.paths, self.digest, self.traces = paths, ReportDigest(MAX_TRACES), {}

    def add(self, item: TraceResult | InputIssue) -> None:
        if isinstance(item, TraceResult):
            self.digest.add(item)
            if item.trace is not None and _worth_keeping(item, self.traces):
                self.traces[item.source or item.id] = item.trace

    def finish(self, result: RunResult) -> None:
        from ..report import write_report
        shown = self.digest.result(result)
        for path in self.paths:
            write_report(path, shown, traces=self.traces, scores=self.digest)


def _worth_keeping(item: TraceResult, kept: dict[str, Any]) -> bool:
    """Input traces held in memory for --html: as many as the report has views for, plus failed ones up to
    twice that (the report shows failed traces first), so memory follows what is shown, not the run's size."""
    from ..report import MAX_VIEWS
    return len(kept) < MAX_VIEWS or (item.passed is not True and len(kept) < 2 * MAX_VIEWS)
