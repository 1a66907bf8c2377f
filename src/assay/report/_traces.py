"""The traces table (filterable by metric and verdict in the page's script) and the trace views."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model import RunResult, Trace, TraceResult
from ._conversation import conversation, metric_table, quotes_of, status_of
from ._html import Markup, fmt, h


def trace_status(t: TraceResult) -> str:
    if any(r.errored for r in t.metrics.values()):
        return "error" if t.passed is not False else "fail"
    return "null" if t.passed is None else "pass" if t.passed else "fail"


def select(traces: Sequence[TraceResult], limit: int) -> tuple[list[int], int]:
    """Indexes of the traces to show (failed and errored first when over ``limit``), in input order."""
    if len(traces) <= limit:
        return list(range(len(traces))), 0
    bad = [i for i, t in enumerate(traces) if trace_status(t) in ("fail", "error")]
    rest = [i for i, t in enumerate(traces) if trace_status(t) not in ("fail", "error")]
    keep = sorted((bad + rest)[:limit])
    return keep, len(traces) - len(keep)


def _trace_for(t: TraceResult, traces: Mapping[str, Any] | None) -> Trace | None:
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


def table(result: RunResult, shown: list[int], hidden: int) -> Markup:
    names = list(result.summary) or sorted({n for t in result.traces for n in t.metrics})
    options = [h("option", "any metric (trace verdict)", value="")] + [h("option", n, value=n) for n in names]
    statuses = [("", "all"), ("pass", "passed"), ("fail", "failed"), ("error", "errored"), ("null", "no score")]
    controls = h("div",
                 h("label", "metric ", h("select", options, id="f-metric")),
                 h("label", "verdict ", h("select", [h("option", lab, value=v) for v, lab in statuses], id="f-status")),
                 h("label", "search ", h("input", type="search", id="f-text", placeholder="trace id or task")),
                 h("span", "", id="f-count", class_="meta", aria_live="polite"),
                 class_="filters")
    head = h("tr", h("th", "#"), h("th", "trace"), h("th", "task"), h("th", "trial"), h("th", "overall"),
             h("th", "verdict"), [h("th", n, class_="metric-col", title=n) for n in names])
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
                cells.append(h("td", fmt(r.score, 2), data_m=n, data_st=s, class_=f"num score {s}",
                               title=f"{n}: {s}" + (f" ({r.warning})" if r.warning is not None else "")))
        rows.append(h("tr", h("td", str(i + 1), class_="num meta"),
                      h("td", h("a", t.id, href=f"#trace-{i + 1}", class_="trace-link"), class_="id"),
                      h("td", t.task_id, class_="id"), h("td", "" if t.trial is None else str(t.trial), class_="num"),
                      h("td", fmt(t.overall), class_="num"), h("td", h("span", st, class_=f"badge {st}")),
                      cells, data_st=st, data_text=f"{t.id} {t.task_id}".lower()))
    note = h("p", f"{hidden} more traces not shown (failed and errored traces are kept first).",
             class_="meta") if hidden else None
    return h("section", h("h2", f"Traces ({len(result.traces)})"), controls, note,
             h("div", h("table", h("thead", head), h("tbody", rows), class_="traces", id="trace-table"),
               class_="scroll"), id="traces")


def views(result: RunResult, shown: list[int], traces: Mapping[str, Any] | None) -> Markup:
    """One collapsible view per shown trace: results, then the conversation when the trace is known."""
    blocks = []
    missing = 0
    for i in shown:
        t = result.traces[i]
        trace = _trace_for(t, traces)
        quotes = quotes_of(t)
        found: set[str] = set()
        convo = conversation(trace, quotes, found) if trace is not None else None
        if trace is None:
            missing += 1
        st = trace_status(t)
        dims = ", ".join(f"{d} {fmt(s.score, 2)}" + ("" if s.passed else f" < {fmt(s.threshold, 2)}")
                         for d, s in t.dimensions.items())
        summary = h("summary", h("span", st, class_=f"badge {st}"), " ", h("strong", t.id),
                    h("span", f" task {t.task_id}" + (f" · trial {t.trial}" if t.trial is not None else "")
                      + (f" · {t.source}" if t.source else ""), class_="meta"))
        blocks.append(h("details", summary,
                        h("div", "overall ", h("strong", fmt(t.overall)), f" · {dims}" if dims else None, class_="stat"),
                        metric_table(t, found if trace is not None else None),
                        convo if convo is not None else h("p", "The input trace is not available: it was not stored "
                                                               "with the run and its input file is gone or changed.",
                                                          class_="meta"),
                        id=f"trace-{i + 1}", class_=f"trace {st}"))
    intro = h("p", f"{missing} of {len(shown)} traces have no conversation (input not available).",
              class_="meta") if missing else None
    return h("section", h("h2", "Trace views"), h("div", h("button", "expand all", type="button", id="expand-all"),
                                                  h("button", "collapse all", type="button", id="collapse-all"),
                                                  class_="filters"), intro, blocks, id="trace-views")
