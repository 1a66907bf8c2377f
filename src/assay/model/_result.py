"""Result types: typed msgspec Structs, one codec (``_codec``) for every results format.

A score is in [0, 1] or None. None never counts as 0: it is excluded from averages and
counted, and ``warning`` says why it is missing.

Per-trace results (``MetricResult``, ``DimensionScore``, ``TraceResult``) are frozen: a metric
creates its result once (``ctx.result`` / ``ctx.null``), the engine never stamps it afterwards,
and a run can produce millions of them, so they are also untracked by the garbage collector.
Run-level types (``MetricSummary``, ``RunResult``) are few and filled in as a run finishes.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

import msgspec

from ..errors import DataError
from . import _frames
from ._record import RunRecord
from ._status import run_status


class Warning(StrEnum):  # noqa: A001 - UAEF's name for the field
    """Why a metric produced no score (or a score to read with care)."""

    MISSING_DATA = "missing_data"
    INVALID_DATA = "invalid_data"
    NOT_APPLICABLE = "not_applicable"
    JUDGE_ERROR = "judge_error"
    """The judge failed or its verdict did not validate: an error, counted in n_errored."""
    METRIC_ERROR = "metric_error"
    """The metric raised: an error, counted in n_errored."""
    NOT_EVALUATED = "not_evaluated"
    """Not attempted: budget reached, dry run, or no judge configured."""


ERROR_WARNINGS = frozenset({Warning.JUDGE_ERROR, Warning.METRIC_ERROR})


class MetricResult(msgspec.Struct, frozen=True, gc=False):
    """One metric on one trace. Immutable: derive a changed copy with ``replace``."""

    name: str = ""
    score: float | None = None
    passed: bool | None = None
    threshold: float | None = None
    reason: str = ""
    evidence: list[str] = []
    warning: Warning | None = None
    details: dict[str, Any] = {}
    judge_calls: int = 0
    tokens: int = 0
    cost_usd: float | None = None

    @property
    def errored(self) -> bool:
        return self.warning in ERROR_WARNINGS

    def replace(self, **changes: Any) -> "MetricResult":
        """A copy with ``changes`` applied (the result itself is frozen)."""
        return msgspec.structs.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The results-file form (the name is the key it is filed under)."""
        return msgspec.to_builtins(_metric_out(self), enc_hook=_enc_hook)

    @classmethod
    def from_dict(cls, name: str, d: dict[str, Any]) -> "MetricResult":
        r = msgspec.convert(d, cls)
        msgspec.structs.force_setattr(r, "name", name)
        return r


class DimensionScore(msgspec.Struct, frozen=True, gc=False):
    """Mean of the non-null metric scores of one dimension."""

    score: float | None
    passed: bool | None
    threshold: float
    weight: float
    n: int
    """Metrics that contributed a score."""


class TraceResult(msgspec.Struct, frozen=True):
    """Every metric on one trace, grouped by dimension, with an overall verdict."""

    id: str
    task_id: str
    trial: int | None
    metrics: dict[str, MetricResult]
    dimensions: dict[str, DimensionScore] = {}
    overall: float | None = None
    passed: bool | None = None
    source: str | None = None
    """Where the trace came from: ``file:line``."""
    trace: Any = None
    """The input Trace, when the engine was asked to attach it (``attach_traces``); never serialised."""
    outcome: str | None = None
    """``"failed"``: the agent's run failed (a failed trial, ``passed`` False whatever its metrics say);
    ``"excluded"``: the harness failed (no metric scored, ``passed`` None, left out of every statistic);
    None: the run went normally (``assay.model._outcome``)."""
    outcome_reason: str = ""
    """Why the trial failed or was excluded."""

    def __repr__(self) -> str:
        return (f"TraceResult(id={self.id!r}, task_id={self.task_id!r}, trial={self.trial!r}, "
                f"overall={self.overall!r}, passed={self.passed!r}, metrics={sorted(self.metrics)!r})")

    def replace(self, **changes: Any) -> "TraceResult":
        return msgspec.structs.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return msgspec.to_builtins(_trace_out(self), enc_hook=_enc_hook)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TraceResult":
        if "task_id" not in d and "id" in d:
            d = {**d, "task_id": d["id"]}
        return _named(msgspec.convert(d, cls))


class MetricSummary(msgspec.Struct, kw_only=True):
    """Run-level aggregate of one metric."""

    name: str
    dimension: str
    threshold: float | None
    n: int = 0
    """Traces with a score."""
    n_null: int = 0
    """Traces without a score (any warning), errors included."""
    n_errored: int = 0
    """Of n_null, those that errored (judge or metric error)."""
    n_passed: int = 0
    mean: float | None = None
    pass_rate: float | None = None
    mean_ci: tuple[float, float] | None = None
    pass_rate_ci: tuple[float, float] | None = None
    warnings: dict[str, int] = {}
    judge_calls: int = 0
    tokens: int = 0
    cost_usd: float | None = None
    n_tasks: int | None = None
    """Distinct tasks among the scored traces: what the intervals rest on (None when not computed)."""
    null_reason: str = ""
    """Why the first result without a score had none (the table says it when a metric scored nothing)."""

    def to_dict(self) -> dict[str, Any]:
        return msgspec.to_builtins(self, enc_hook=_enc_hook)


class InputIssue(msgspec.Struct, frozen=True):
    """A line of input that could not be used, and why."""

    source: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = ":".join(str(p) for p in (self.source, self.line) if p is not None)
        return ": ".join(p for p in (where, self.field, self.message) if p)


class ReadingWarning(InputIssue, frozen=True):
    """Input that was read, or skipped on purpose, but that a person should look at: a turn whose
    text still looks like an unparsed payload, a record that is no conversation. Not a lost record:
    ``assay validate`` prints it as a warning and does not fail for it. Written with ``"warning":
    true`` (results files, the store), so it reads back as a warning, not as a skipped record."""

    warning: bool = True
    is_warning: ClassVar[bool] = True


class _IssueDoc(msgspec.Struct, frozen=True):
    """How an input issue is read back: a ``ReadingWarning`` when it was written with ``warning``."""

    source: str
    line: int | None
    field: str | None
    message: str
    warning: bool = False

    def issue(self) -> InputIssue:
        return (ReadingWarning if self.warning else InputIssue)(self.source, self.line, self.field, self.message)


class RunResult(msgspec.Struct):
    """A whole evaluation: per-trace results, per-metric summaries, run information."""

    traces: list[TraceResult]
    summary: dict[str, MetricSummary]
    run: RunRecord = msgspec.field(default_factory=RunRecord)
    """What the run was and how it went (a dict given here becomes a RunRecord)."""
    input_issues: list[InputIssue] = []
    statistics: dict[str, Any] = {}
    """pass@k families and other run-level statistics, when computed."""
    failed: list[TraceResult] = []
    """The first failed traces, when a streamed run kept no per-trace results (``traces`` empty)."""

    def __post_init__(self) -> None:
        if type(self.run) is not RunRecord:
            self.run = RunRecord.from_dict(self.run)

    @property
    def status(self) -> str:
        """The run's verdict, the same as the CLI's exit status: ``passed`` (0), ``failed`` (1),
        ``invalid_input`` (2), ``could_not_evaluate`` (3: nothing scored, or more errored or
        unevaluated results than ``run.max_errors`` tolerates, default none) or ``interrupted``."""
        return run_status(self)[0]

    @property
    def passed(self) -> bool:
        """True only when ``status`` is ``passed``: no threshold failed and the evaluation happened."""
        return self.status == "passed"

    def __repr__(self) -> str:
        """One line (the dataclass repr of a run runs to kilobytes): counts, verdict, pass rate per metric."""
        n_pass = sum(t.passed is True for t in self.traces)
        n_fail = sum(t.passed is False for t in self.traces)
        rates = [f"{n} {s.pass_rate:.2f}" if s.pass_rate is not None else f"{n} null" for n, s in self.summary.items()]
        shown = ", ".join(rates[:4]) + (f", +{len(rates) - 4} more" if len(rates) > 4 else "")
        run_id = self.run.run_id
        return (f"<RunResult{' ' + str(run_id) if run_id else ''} {self.status}: "
                f"{len(self.traces)} traces ({n_pass} passed, {n_fail} failed), "
                f"{len(self.summary)} metrics" + (f" (pass rate {shown})" if rates else "")
                + (f", {len(self.input_issues)} input issues" if self.input_issues else "") + ">")

    def to_pandas(self) -> Any:
        """A pandas DataFrame, one row per trace x metric (columns: ``assay.model._frames.COLUMNS``); needs pandas."""
        return _frames.to_pandas(self)

    def to_polars(self) -> Any:
        """The same table as a polars DataFrame; needs polars."""
        return _frames.to_polars(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunResult":
        """Inverse of ``to_dict`` (results files written by ``assay run --output``)."""
        return run_from_builtins(d)

    def to_dict(self) -> dict[str, Any]:
        return msgspec.to_builtins(_RunDoc(self.run.to_dict(), self.summary, self.statistics, self.input_issues,
                                           [_trace_out(t) for t in self.traces]), enc_hook=_enc_hook)


# --------------------------------------------------------------------------- the one codec
# Every writer (``-o`` json / jsonl, the run store) and every reader (``load_run``, ``compare``,
# ``report``, ``runs show``) goes through these functions; the file format is unchanged from the
# hand-written codecs they replace. Encoding builds light "out" Structs (a trace's metrics are
# keyed by name, so the name is not repeated) and lets msgspec write the bytes in one call.

class _MetricOut(msgspec.Struct, gc=False):
    score: float | None
    passed: bool | None
    threshold: float | None
    warning: Warning | None
    reason: str
    evidence: list[str] | msgspec.UnsetType = msgspec.UNSET
    details: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    judge_calls: int | msgspec.UnsetType = msgspec.UNSET
    """Judge accounting: written (all three) for judged results only."""
    tokens: int | msgspec.UnsetType = msgspec.UNSET
    cost_usd: float | None | msgspec.UnsetType = msgspec.UNSET


class _TraceOut(msgspec.Struct, gc=False):
    id: str
    task_id: str
    trial: int | None
    source: str | None
    overall: float | None
    passed: bool | None
    dimensions: dict[str, DimensionScore]
    metrics: dict[str, _MetricOut]
    outcome: str | msgspec.UnsetType = msgspec.UNSET
    outcome_reason: str | msgspec.UnsetType = msgspec.UNSET


class _RunDoc(msgspec.Struct):
    run: dict[str, Any] = {}
    summary: dict[str, MetricSummary] = {}
    statistics: dict[str, Any] = {}
    input_issues: list[_IssueDoc] = []  # InputIssue written, _IssueDoc read back
    traces: list[TraceResult] = []


class _SummaryRecord(msgspec.Struct):
    """The last line of a JSON Lines results file: everything but the traces."""

    summary_record: bool
    run: dict[str, Any]
    summary: dict[str, MetricSummary]
    statistics: dict[str, Any]
    input_issues: list[InputIssue]


def _enc_hook(o: Any) -> Any:
    item = getattr(o, "item", None)  # numpy scalars
    if callable(item):
        return item()
    return str(o)


def _metric_out(r: MetricResult, unset: Any = msgspec.UNSET) -> _MetricOut:
    if r.judge_calls:
        return _MetricOut(r.score, r.passed, r.threshold, r.warning, r.reason, r.evidence or unset,
                          r.details or unset, r.judge_calls, r.tokens, r.cost_usd)
    return _MetricOut(r.score, r.passed, r.threshold, r.warning, r.reason, r.evidence or unset, r.details or unset)


def _trace_out(t: TraceResult) -> _TraceOut:
    metrics: dict[str, _MetricOut] = {}
    unset = msgspec.UNSET
    for k, r in t.metrics.items():  # _metric_out, inlined: it runs for every result written
        if r.judge_calls:
            metrics[k] = _metric_out(r)
        else:
            metrics[k] = _MetricOut(r.score, r.passed, r.threshold, r.warning, r.reason, r.evidence or unset,
                                    r.details or unset)
    if t.outcome is not None:
        return _TraceOut(t.id, t.task_id, t.trial, t.source, t.overall, t.passed, t.dimensions, metrics,
                         t.outcome, t.outcome_reason)
    return _TraceOut(t.id, t.task_id, t.trial, t.source, t.overall, t.passed, t.dimensions, metrics)


def _named(t: TraceResult) -> TraceResult:
    """Decoded metric results get their name from the key they are filed under."""
    for k, r in t.metrics.items():
        if r.name != k:
            msgspec.structs.force_setattr(r, "name", k)
    return t


_encoder = msgspec.json.Encoder(enc_hook=_enc_hook)
_trace_decoder = msgspec.json.Decoder(TraceResult)
_doc_decoder = msgspec.json.Decoder(_RunDoc)
_issue_decoder = msgspec.json.Decoder(_IssueDoc)


def encode(obj: Any) -> bytes:
    """Any JSON-ready value (run information, configuration) in the codec's encoding."""
    return _encoder.encode(obj)


def encode_trace(t: TraceResult) -> bytes:
    """One trace's results: a line of a JSON Lines results file, a row of the run store."""
    return _encoder.encode(_trace_out(t))


def encode_trace_into(t: TraceResult, buffer: bytearray) -> None:
    """``encode_trace`` into ``buffer`` (replacing what it held): for writers that reuse one buffer."""
    _encoder.encode_into(_trace_out(t), buffer)


def encode_run(result: RunResult, *, indent: int | None = None) -> bytes:
    """A whole results file (``-f json``)."""
    data = _encoder.encode(_RunDoc(result.run.to_dict(), result.summary, result.statistics, result.input_issues,
                                   [_trace_out(t) for t in result.traces]))  # type: ignore[misc]
    return data if indent is None else msgspec.json.format(data, indent=indent)


def encode_summary_record(result: RunResult) -> bytes:
    """The last line of a JSON Lines results file (summaries, statistics, run information)."""
    return _encoder.encode(_SummaryRecord(True, result.run.to_dict(), result.summary, result.statistics, result.input_issues))


def decode_trace(data: bytes | str) -> TraceResult:
    """Inverse of ``encode_trace``; raises ``msgspec.DecodeError`` (a ValueError) on bad data."""
    return _named(_trace_decoder.decode(data))


def decode_issue(data: bytes | str) -> InputIssue:
    return _issue_decoder.decode(data).issue()


def decode_run(data: bytes | str, traces: list[TraceResult] | None = None) -> RunResult:
    """Inverse of ``encode_run`` / ``encode_summary_record`` (``traces`` given when stored apart)."""
    return _run_from_doc(_doc_decoder.decode(data), traces)


def run_from_builtins(d: dict[str, Any], traces: list[TraceResult] | None = None) -> RunResult:
    """Inverse of ``RunResult.to_dict`` (``traces`` given when stored apart)."""
    return _run_from_doc(msgspec.convert(d, _RunDoc), traces)


def _run_from_doc(doc: _RunDoc, traces: list[TraceResult] | None) -> RunResult:
    if traces is None:
        traces = [_named(t) for t in doc.traces]
    summary = {k: s if s.name else msgspec.structs.replace(s, name=k) for k, s in doc.summary.items()}
    issues = [i.issue() if isinstance(i, _IssueDoc) else i for i in doc.input_issues]
    return RunResult(traces, summary, RunRecord.from_dict(doc.run), issues, doc.statistics)


def read_results(data: bytes, source: str) -> RunResult:
    """A results file from ``assay run --output``, JSON (``-f json``) or JSON Lines (``-f jsonl``)."""
    try:
        doc = _doc_decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise DataError(f"not an assay results file: {exc}", source=source) from None
    except msgspec.DecodeError:
        return _read_jsonl(data, source)
    if not doc.run and not doc.summary:
        try:
            _trace_decoder.decode(data)
        except msgspec.DecodeError:
            pass
        else:  # one trace record and nothing else
            return _read_jsonl(data, source)
        raise DataError("not an assay results file (expected an object with 'run' and 'summary')", source=source)
    return _run_from_doc(doc, None)


def _read_jsonl(data: bytes, source: str) -> RunResult:
    traces: list[TraceResult] = []
    tail: _RunDoc | None = None
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            if b'"summary_record"' in line[:32]:
                tail = _doc_decoder.decode(line)
            else:
                traces.append(_named(_trace_decoder.decode(line)))
        except msgspec.DecodeError as exc:  # ValidationError included
            raise DataError(f"not an assay results record: {exc}", source=source, line=lineno) from None
    if tail is None:
        raise DataError("no summary record: an unfinished JSON Lines results file?", source=source)
    return _run_from_doc(tail, traces)
