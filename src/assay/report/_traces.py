"""The traces table (sortable, and filterable by metric and verdict in the page's script) and the trace views.

The filter applies to the trace views too: a view is shown while its table row is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model import RunResult, Trace, TraceResult
from . import _diff
from ._conversation import conversation, metric_table, quotes_of, status_of, trace_status
from ._html import Markup, fmt, h, join, num

MAX_VIEWS = 300
"""Trace views (conversations) embedded in one report; failed and errored traces are kept first."""

__all__ = ["MAX_VIEWS", "select", "table", "trace_body", "trace_status", "views", "where"]


def select(traces: Sequence[TraceResult], limit: int) -> tuple[list[int], int]:
    """Indexes of the traces to show (failed and errored first when over ``limit``), in input order."""
    if len(traces) <= limit:
        return list(range(len(traces))), 0
    bad = [i for i, t in enumerate(traces) if trace_status(t) in ("fail", "error")]
    rest = [i for i, t in enumerate(traces) if trace_status(t) not in ("fail", "error")]
    keep = sorted((bad + rest)[:limit])
    return keep, len(traces) - len(keep)


def trace_for(t: TraceResult, traces: Mapping[str, Any] | None) -> Trace | None:
    if not traces:
        return None
    found = traces.get(t.source) if t.source else None
    if found is None:
        found = traces.get(t.id)
    if isinstance(found, Mapping):
        try:
            found = Trace.model_validate(found)
        except ValueError:
            return None
    return found if isinstance(found, Trace) else None


def table(result: RunResult, shown: list[int], hidden: int, total: int | None = None) -> Markup:
    names = list(result.summary) or sorted({n for t in result.traces for n in t.metrics})
    options = [h("option", "any metric (trace verdict)", value="")] + [h("option", n, value=n) for n in names]
    statuses = [("", "all"), ("pass", "passed"), ("fail", "failed"), ("error", "errored"), ("null", "no score"),
                ("excluded", "excluded (harness fault)")]
    controls = h("div",
                 h("label", "metric ", h("select", options, id="f-metric")),
                 h("label", "verdict ", h("select", [h("option", lab, value=v) for v, lab in statuses], id="f-status")),
                 h("label", "search ", h("input", type="search", id="f-text", placeholder="trace id or task")),
                 h("span", "", id="f-count", class_="meta", aria_live="polite"),
                 class_="filters")
    def th(label: Any, kind: str, title: str | None = None, cls: str | None = None) -> Markup:
        return h("th", h("button", label, type="button", class_="sort", title=f"sort by {title or label}"),
                 data_sort=kind, aria_sort="none", class_=cls)
    head = h("tr", th("#", "num", "input order"), th("trace", "text"), th("task", "text"), th("trial", "num"),
             th("overall", "num"), th("verdict", "text"),
             [th(n, "num", n, "metric-col") for n in names])
    rows = []
    for i in shown:
        t = result.traces[i]
        st = trace_status(t)
        cells = []
        for n in names:
            r = t.metrics.get(n)
            if r is None:
                cells.append(h("td", "", data_m=n, data_st="absent"))
            else:
                s = status_of(r)
                v = num(r.score)
                cells.append(h("td", fmt(r.score, 2), data_m=n, data_st=s, data_v="" if v is None else f"{v:.6g}",
                               class_=f"num score {s}",
                               title=f"{n}: {s}" + (f" ({r.warning})" if r.warning is not None else "")))
        ov = num(t.overall)
        rows.append(h("tr", h("td", str(i + 1), class_="num meta", data_v=i + 1),
                      h("td", h("a", t.id, href=f"#trace-{i + 1}", class_="trace-link"), class_="id"),
                      h("td", t.task_id, class_="id"),
                      h("td", "" if t.trial is None else str(t.trial), class_="num", data_v=t.trial),
                      h("td", fmt(t.overall), class_="num", data_v="" if ov is None else f"{ov:.6g}"),
                      h("td", h("span", st, class_=f"badge {st}"), data_v=st),
                      cells, data_st=st, data_text=f"{t.id} {t.task_id}".lower(), data_view=f"trace-{i + 1}"))
    note = h("p", f"{hidden} more traces not shown (failed and errored traces are kept first).",
             class_="meta") if hidden else None
    return h("section", h("h2", f"Traces ({len(result.traces) if total is None else total})"), controls, note,
             h("div", h("table", h("thead", head), h("tbody", rows), class_="traces", id="trace-table"),
               class_="scroll"),
             h("p", "Click a column header to sort; the filter also applies to the trace views below.",
               class_="meta"), id="traces")


def pick_views(result: RunResult, shown: Sequence[int], limit: int = MAX_VIEWS) -> list[int]:
    """The shown traces that get a view: all up to ``limit``, else failed and errored ones first."""
    if len(shown) <= limit:
        return list(shown)
    bad = [i for i in shown if trace_status(result.traces[i]) in ("fail", "error")]
    rest = [i for i in shown if trace_status(result.traces[i]) not in ("fail", "error")]
    return sorted((bad + rest)[:limit])


def views(result: RunResult, shown: list[int], traces: Mapping[str, Any] | None, total: int | None = None) -> Markup:
    """One collapsible view per trace in ``shown``: results, the tool-call diff, then the conversation."""
    blocks = []
    missing = 0
    for i in shown:
        t = result.traces[i]
        trace = trace_for(t, traces)
        if trace is None:
            missing += 1
        st = trace_status(t)
        summary = h("summary", h("span", st, class_=f"badge {st}"), " ", h("strong", t.id),
                    h("span", where(t), class_="meta"))
        blocks.append(h("details", summary, trace_body(t, trace), id=f"trace-{i + 1}", class_=f"trace {st}"))
    notes = []
    if total is not None and total > len(shown):
        notes.append(f"{len(shown)} of {total} traces have a view here (failed and errored ones first); "
                     "the table above lists them all.")
    if missing:
        notes.append(f"{missing} of {len(shown)} traces have no conversation (input not available).")
    intro = h("p", " ".join(notes), class_="meta") if notes else None
    return h("section", h("h2", "Trace views"), h("div", h("button", "expand all", type="button", id="expand-all"),
                                                  h("button", "collapse all", type="button", id="collapse-all"),
                                                  h("span", "", id="v-count", class_="meta", aria_live="polite"),
                                                  class_="filters"), intro, blocks, id="trace-views")


def where(t: TraceResult) -> str:
    """`` task T · trial N · file:line`` of a trace's results."""
    return (f" task {t.task_id}" + (f" · trial {t.trial}" if t.trial is not None else "")
            + (f" · {t.source}" if t.source else ""))


def trace_body(t: TraceResult, trace: Trace | None) -> Markup:
    """What one trace shows, in the report's trace views and in ``assay view``'s trace page: the overall
    score and dimensions, each metric's result (failures first, evidence found in the trace or flagged),
    the expected vs actual tool calls, and the conversation with the evidence marked."""
    quotes = quotes_of(t)
    found: set[str] = set()
    convo = conversation(trace, quotes, found) if trace is not None else None
    dims = ", ".join(f"{d} {fmt(s.score, 2)}" + ("" if s.passed else f" < {fmt(s.threshold, 2)}")
                     for d, s in t.dimensions.items())
    outcome = h("p", ("The agent's run failed: a failed trial whatever its metrics say. " if t.outcome == "failed"
                      else "Excluded from every statistic (a harness fault). ") + t.outcome_reason,
                class_="meta") if t.outcome is not None else None
    return join([h("div", "overall ", h("strong", fmt(t.overall)), f" · {dims}" if dims else None, class_="stat"),
                 outcome,
                 metric_table(t, found if trace is not None else None),
                 _trace_diff(trace),
                 convo if convo is not None else h("p", "The input trace is not available: it was not stored "
                                                        "with the run and its input file is gone or changed.",
                                                   class_="meta")])


def _trace_diff(trace: Trace | None) -> Markup | None:
    rows = _diff.trace_rows(trace) if trace is not None else None
    return _diff.render(rows) if rows is not None else None
