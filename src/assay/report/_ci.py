"""CI outputs: JUnit XML and CSV, one test case (row) per trace x metric (CSV streamed by trace).

JUnit: a failed threshold is a ``<failure>``, a judge or metric error an ``<error>``, a result
without a score (missing data, not applicable, not evaluated) ``<skipped>``. Input records that
could not be read become ``<error>`` cases of an ``assay.inputs`` suite, and each trace x dimension
is a case of an ``assay.dimensions`` suite (a trace can fail on a dimension threshold alone).
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from typing import Any

from ..model import MetricResult, RunResult, TraceResult
from ..model._status import apart

_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

CSV_COLUMNS = ("trace_id", "task_id", "trial", "source", "metric", "dimension", "score", "threshold", "passed",
               "status", "warning", "reason", "judge_calls", "tokens", "cost_usd")


def _x(text: Any) -> str:
    """Text XML 1.0 can carry (control characters dropped; ElementTree escapes the rest)."""
    return _XML_BAD.sub("", "" if text is None else str(text))


def _status(r: MetricResult) -> str:
    if r.errored:
        return "error"
    if r.score is None:
        return "skipped"
    return "failed" if r.passed is False else "passed"


def _score(x: float | None, digits: int = 3) -> str:
    return "null" if x is None else f"{x:.{digits}f}"


def _below(score: float | None, threshold: float | None) -> str:
    """"0.500 < threshold 0.70"; more digits where those would not differ (0.6999 < threshold 0.700)."""
    if score is None or threshold is None:
        return f"{_score(score)} < threshold {_score(threshold, 2)}"
    a, b = apart(score, threshold, 3, 2)
    return f"{a} < threshold {b}"


def to_junit(result: RunResult, *, name: str = "assay") -> str:
    """JUnit XML: a test suite per metric, a test case per trace."""
    root = ET.Element("testsuites", name=name)
    by_metric: dict[str, list[tuple[Any, MetricResult]]] = {m: [] for m in result.summary}
    for t in result.traces:
        for m, r in t.metrics.items():
            by_metric.setdefault(m, []).append((t, r))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for metric, cases in by_metric.items():
        suite = ET.SubElement(root, "testsuite", name=_x(f"{name}.{metric}"))
        counts = {"tests": len(cases), "failures": 0, "errors": 0, "skipped": 0}
        for t, r in cases:
            case = ET.SubElement(suite, "testcase", classname=_x(f"{name}.{metric}"), name=_x(t.id), time="0")
            if t.source:
                case.set("file", _x(t.source))
            st = _status(r)
            why = f": {r.reason}" if r.reason else ""
            if st == "failed":
                counts["failures"] += 1
                msg = f"{metric} scored {_below(r.score, r.threshold)}{why}"
                el = ET.SubElement(case, "failure", message=_x(msg), type="threshold")
                el.text = _x("\n".join([msg, *(f"evidence: {q}" for q in r.evidence)]))
            elif st == "error":
                counts["errors"] += 1
                ET.SubElement(case, "error", message=_x(f"{metric} {r.warning}{why}"), type=_x(r.warning)).text = _x(r.reason)
            elif st == "skipped":
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=_x(f"no score ({r.warning}){why}"))
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
    dim_cases = [(t, d, v) for t in result.traces for d, v in t.dimensions.items()]
    if dim_cases:  # a trace also fails on a dimension below its threshold: say so, as a test case
        suite = ET.SubElement(root, "testsuite", name=f"{name}.dimensions")
        failures = 0
        for t, d, ds in dim_cases:
            case = ET.SubElement(suite, "testcase", classname=_x(f"{name}.dimension.{d}"), name=_x(t.id), time="0")
            if ds.passed is False:
                failures += 1
                msg = (f"dimension {d} scored {_below(ds.score, ds.threshold)} "
                       f"(mean of {ds.n} metric{'s' if ds.n != 1 else ''})")
                ET.SubElement(case, "failure", message=_x(msg), type="dimension_threshold").text = _x(msg)
        for k, val in (("tests", len(dim_cases)), ("failures", failures), ("errors", 0), ("skipped", 0)):
            suite.set(k, str(val))
        totals["tests"] += len(dim_cases)
        totals["failures"] += failures
    trials = [t for t in result.traces if t.outcome is not None]
    if trials:  # a failed run fails as itself (a judge metric may have had nothing to score); a harness fault is skipped
        suite = ET.SubElement(root, "testsuite", name=f"{name}.trials")
        failed = sum(t.outcome == "failed" for t in trials)
        for t in trials:
            case = ET.SubElement(suite, "testcase", classname=_x(f"{name}.trial"), name=_x(t.id), time="0")
            if t.outcome == "failed":
                ET.SubElement(case, "failure", message=_x(t.outcome_reason), type="failed_run").text = _x(t.outcome_reason)
            else:
                ET.SubElement(case, "skipped", message=_x(f"excluded (harness fault): {t.outcome_reason}"))
        for k, val in (("tests", len(trials)), ("failures", failed), ("errors", 0), ("skipped", len(trials) - failed)):
            suite.set(k, str(val))
        totals["tests"] += len(trials)
        totals["failures"] += failed
        totals["skipped"] += len(trials) - failed
    if result.input_issues:
        suite = ET.SubElement(root, "testsuite", name=f"{name}.inputs", tests=str(len(result.input_issues)),
                              failures="0", errors=str(len(result.input_issues)), skipped="0")
        for issue in result.input_issues:
            case = ET.SubElement(suite, "testcase", classname=f"{name}.inputs", name=_x(str(issue).split(": ")[0]),
                                 time="0")
            ET.SubElement(case, "error", message=_x(str(issue)), type="input")
        totals["tests"] += len(result.input_issues)
        totals["errors"] += len(result.input_issues)
    for k, v in totals.items():
        root.set(k, str(v))
    if "duration_s" in result.run:
        root.set("time", str(result.run.duration_s))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


_FORMULA = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet reads as the start of a formula (OWASP's CSV injection list)."""


def _text(value: Any) -> str:
    """A text cell a spreadsheet shows as text: a leading ``'`` before a formula character (OWASP)."""
    text = "" if value is None else str(value)
    return f"'{text}" if text.startswith(_FORMULA) else text


def _writer(buf: io.StringIO) -> Any:
    # CRLF (RFC 4180) also makes the csv module quote a field holding a lone CR, as it does LF
    return csv.writer(buf, lineterminator="\r\n")


def csv_header() -> bytes:
    buf = io.StringIO()
    _writer(buf).writerow(CSV_COLUMNS)
    return buf.getvalue().encode("utf-8")


def csv_rows(t: TraceResult, dims: dict[str, str]) -> bytes:
    """The rows of one trace (one per metric), so ``-o x.csv`` streams as ``-o x.jsonl`` does."""
    buf = io.StringIO()
    w = _writer(buf)
    for m, r in t.metrics.items():
        w.writerow([_text(t.id), _text(t.task_id), "" if t.trial is None else t.trial, _text(t.source), _text(m),
                    _text(dims.get(m, "")), "" if r.score is None else r.score,
                    "" if r.threshold is None else r.threshold, "" if r.passed is None else str(r.passed).lower(),
                    _status(r), _text(r.warning), _text(r.reason), r.judge_calls or "", r.tokens or "",
                    "" if r.cost_usd is None else r.cost_usd])
    return buf.getvalue().encode("utf-8")


def to_csv(result: RunResult) -> str:
    """CSV with a header and one row per trace x metric; text cells that a spreadsheet would run as
    formulas start with ``'``, and every field with a CR or LF is quoted."""
    dims = {name: s.dimension for name, s in result.summary.items()}
    return b"".join([csv_header(), *(csv_rows(t, dims) for t in result.traces)]).decode("utf-8")
