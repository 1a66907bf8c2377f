"""The viewer's pages: runs, a run, a trace, two runs compared.

Whatever the static report also draws (run header, failures, dimensions, metrics, pass@k, judge,
a trace, a comparison) is drawn by ``assay.report``'s own functions; this module lays out pages,
lists and filters around them. Query parameters are the page's state, so every URL can be shared.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import AssayError
from ..model import RunResult, TraceResult
from ..report import ReportDigest
from ..report import _failures, _judge, _passk, _sections, _tasks, _traces
from ..report._charts import legend
from ..report._conversation import clip, status_of, trace_status
from ..report._html import Markup, fmt, h, interval, join, money, pct
from ..store import RunStore, find_runs, load_summary, previous_run, resolve_run, run_info, stored_results, trace_at
from . import _trend
from ._layout import PAGE_SIZE, badge, filters, page, pager, run_url, select, table, text_input, trace_url, url

MAX_FAILURES = 50
"""Failed traces listed at the top of a run page (the traces list, filtered by verdict, has them all)."""
VERDICTS = [("", "any verdict"), ("fail", "fail"), ("error", "error"), ("pass", "pass"), ("null", "unscored")]


class NotFound(Exception):
    """No such page, run or trace (HTTP 404)."""


@dataclass(frozen=True, slots=True)
class Query:
    """A request's query parameters (the first value of each)."""

    params: Mapping[str, str]

    def get(self, key: str) -> str:
        return self.params.get(key, "").strip()

    def page(self) -> int:
        v = self.get("page")
        return max(int(v), 1) if v.isdigit() else 1


def _name(info: Any) -> str | None:
    name = info.config.get("name") if isinstance(info.config, Mapping) else None
    return str(name) if name else None


def _tags(tags: Mapping[str, Any]) -> Markup:
    return h("span", [h("a", f"{k}={v}", href=url("/", tag=f"{k}={v}"), class_="tag") for k, v in tags.items()])


# -- runs ------------------------------------------------------------------------------------------
def runs_page(store: RunStore, q: Query) -> str:
    params = {k: q.get(k) for k in ("q", "name", "tag", "status", "metric")}
    n = q.page()
    found = find_runs(store, name=params["name"] or None, tag=params["tag"] or None, text=params["q"] or None,
                      status=params["status"] or None, offset=(n - 1) * PAGE_SIZE, limit=PAGE_SIZE)
    rows = []
    for r in found.rows:
        i = r.info
        rate, ci, title = _pass_rate(r)
        cost = i.cost_usd if i.cost_usd is not None else (i.judge or {}).get("cost_usd")
        rows.append(h("tr",
                      h("td", h("label", h("input", type="radio", name="a", value=i.id, aria_label=f"baseline {i.id}"),
                                "A", class_="pick-a"),
                        h("label", h("input", type="radio", name="b", value=i.id, aria_label=f"candidate {i.id}"), "B",
                          class_="pick-b"), class_="pick"),
                      h("td", h("a", r.name or i.id, href=run_url(i.id), data_nav=True, class_="run-link"),
                        h("div", h("code", i.id), class_="meta") if r.name else None, data_label="run"),
                      h("td", _tags(r.tags), data_label="tags"),
                      h("td", i.started_at.replace("T", " ")[:19], class_="nowrap", data_label="started"),
                      h("td", badge(i.status), data_label="status"),
                      h("td", f"{i.n_traces:,}", class_="num", data_label="traces"),
                      h("td", pct(rate, 1), " ", h("span", ci, class_="ci"), class_="num", title=title,
                        data_label="pass rate"),
                      h("td", "—" if r.judge_calls is None else f"{r.judge_calls:,}", class_="num",
                        data_label="judge calls"),
                      h("td", money(cost), class_="num", data_label="cost")))
    form = filters("/", [text_input("q", "search", params["q"], "id or name"),
                         select("name", "name", [("", "any name")] + [(x, x) for x in found.names], params["name"]),
                         text_input("tag", "tag", params["tag"], "key or key=value"),
                         select("status", "status", [("", "any status")] + [(s, s) for s in (
                             "completed", "running", "failed", "interrupted", "incomplete")], params["status"])],
                   keep={"metric": params["metric"]})
    listing = h("form", table(["compare", "run", "tags", "started", "status", "traces", "pass@1 [CI]", "judge calls",
                               "cost"], rows, class_="list runs"),
                h("p", h("button", "Compare A → B", type="submit"),
                  h("span", " pick a baseline (A) and a candidate (B)", class_="meta")),
                method="get", action="/compare", id="pick")
    trend = _trend.section(store, params["name"], params["metric"], params) if params["name"] else h(
        "p", "Trend over runs of: ", [[h("a", x, href=url("/", name=x)), " "] for x in found.names[:30]],
        class_="meta") if found.names else None
    note = h("p", "pass@1: the share of each task's trials that passed, averaged over tasks, with its interval "
                  "clustered by task (runs without trials: the share of traces that passed, Wilson interval).",
             class_="meta")
    body = [h("h1", "Runs"), form, pager("/", params, n, found.total, "runs"), listing, note, trend]
    return page("assay · runs", body)


def _pass_rate(r: Any) -> tuple[float | None, str, str]:
    """Pass rate, its interval and how it was computed: the run's pass@1 over tasks when stored, else Wilson."""
    from ..stats import wilson_interval

    p1 = r.pass_at_1
    if p1 and p1.get("pass_at_k") is not None:
        return (p1["pass_at_k"], interval((p1.get("pass_at_k_ci_low"), p1.get("pass_at_k_ci_high")), 2, percent=True),
                f"pass@1 over {p1.get('n_tasks')} tasks, interval clustered by task")
    scored = r.info.n_passed + r.info.n_failed
    ci = wilson_interval(r.info.n_passed, scored) if scored else None
    return (r.info.pass_rate, interval((ci.low, ci.high), 2, percent=True) if ci else "",
            f"{r.info.n_passed} of {scored} scored traces passed (Wilson interval over traces)")


# -- one run -------------------------------------------------------------------------------------------
def _matches(t: TraceResult, verdict: str, metric: str, text: str) -> bool:
    if text and text not in t.id.lower() and text not in str(t.task_id).lower() and text not in str(t.source).lower():
        return False
    if metric:
        r = t.metrics.get(metric)
        if r is None:
            return False
        return not verdict or status_of(r) == verdict
    return not verdict or trace_status(t) == verdict


def _failing(t: TraceResult) -> str:
    return ", ".join(n for n, r in t.metrics.items() if status_of(r) in ("fail", "error"))


_TOPS: OrderedDict[str, tuple[str, list[str], Markup]] = OrderedDict()
"""Run id -> (title, metric names, the page above the traces list) of finished runs (they no longer change)."""
GRID_CELLS = _tasks.MAX_TASKS * _tasks.MAX_TRIALS
"""Traces a run page keeps (without their results) for the per-task grid: what the grid can draw at most
when the run's traces come grouped by task; the figures beside it cover every trace."""
_TOPS_KEPT = 16
_TOPS_LOCK = threading.Lock()


def _run_top(store: RunStore, run_id: str) -> tuple[str, list[str], Markup]:
    """Everything a run page shows above its traces list: it reads the whole run (failures, histograms)."""
    finished = run_info(store, run_id).status != "running"
    with _TOPS_LOCK:
        if run_id in _TOPS:
            _TOPS.move_to_end(run_id)
            return _TOPS[run_id]
    digest = ReportDigest(0)
    bad: list[tuple[int, TraceResult]] = []
    grid: list[tuple[int, TraceResult]] = []  # the per-task grid's cells: each trace without its results

    def each(t: TraceResult) -> None:
        i = digest.n_traces  # this trace's sequence number: the traces come in input order
        digest.add(t)
        if len(bad) < MAX_FAILURES and trace_status(t) in ("fail", "error"):
            bad.append((i, t))
        if len(grid) < GRID_CELLS:
            grid.append((i, t.replace(metrics={}, dimensions={})))

    result = load_summary(store, run_id, each=each)
    shown = RunResult([t for _, t in bad], result.summary, result.run, result.input_issues, result.statistics)
    seqs = [i for i, _ in bad]
    title = str(result.run.get("name") or run_id)
    cards, details = _sections.header_parts(result)
    verdict = "passed" if result.passed else "failed"
    header = h("header", h("h1", f"Run {title} ", badge(verdict)), cards, class_="run-header")
    fails = _failures.failures(shown, [], None, (digest.n_bad, digest.n_traces),
                               href=lambda k: trace_url(run_id, seqs[k]), evidence=True,
                               more=h("p", h("a", f"all {digest.n_bad} failed or errored traces",
                                             href=url(run_url(run_id), verdict="fail") + "#traces"), class_="meta"))
    full = RunResult([], result.summary, result.run, result.input_issues, result.statistics)
    dims, passk, judge = _sections.dimensions(full, digest), _passk.pass_k(full), _judge.judge_section(full)
    cells = RunResult([t for _, t in grid], result.summary, result.run, result.input_issues, result.statistics)
    tasks = _tasks.tasks_section(cells, set(range(len(grid))), href=lambda k: trace_url(run_id, grid[k][0]))
    nav = h("nav", [h("a", label, href=f"#{anchor}") for anchor, label, present in (
        ("failures", "Failures", fails), ("tasks", "Per task", tasks), ("dimensions", "Dimensions", dims),
        ("metrics", "Metrics", True), ("pass-k", "pass@k", passk), ("judge", "Judge", judge),
        ("traces", "Traces", True)) if present], class_="toc")
    about = h("details", h("summary", "Run details: inputs, metrics and their parameters, judge"), details,
              class_="run-details", open=not fails)
    top = join([nav, header, _previous_link(store, run_id, result.run.get("name")), fails, about, tasks, dims,
                _sections.metrics(full, digest), passk, judge])
    out = (title, list(result.summary), top)
    if finished:
        with _TOPS_LOCK:
            _TOPS[run_id] = out
            while len(_TOPS) > _TOPS_KEPT:
                _TOPS.popitem(last=False)
    return out


def _listing(store: RunStore, run_id: str, verdict: str, metric: str, text: str,
             lo: int, hi: int) -> tuple[list[tuple[int, TraceResult]], int]:
    """The traces ``lo``..``hi`` of those matching the filters, and how many match.

    Without filters only the page is decoded; the verdict ``fail`` and the text are decided on the
    stored rows (passed, ids, source), so only the page's traces are decoded then too; the other
    filters decode each candidate."""
    if not (verdict or metric or text):
        listed = []
        for seq, t in stored_results(store, run_id, start=lo):
            if seq >= hi:
                break
            listed.append((seq, t))
        return listed, run_info(store, run_id).n_traces
    exact = not metric and verdict in ("", "fail")  # decided on the stored row alone
    matched = 0

    def where(trace_id: str, task_id: str, source: str | None, passed: int | None) -> bool:
        nonlocal matched
        if text and text not in trace_id.lower() and text not in task_id.lower() and text not in str(source).lower():
            return False
        if not metric and (verdict == "fail" and passed != 0 or verdict == "pass" and passed != 1
                           or verdict == "null" and passed is not None):
            return False
        if exact:
            matched += 1
            return lo < matched <= hi
        return True

    listed = []
    for seq, t in stored_results(store, run_id, where=where):
        if exact:
            listed.append((seq, t))
        elif _matches(t, verdict, metric, text):
            if lo <= matched < hi:
                listed.append((seq, t))
            matched += 1
    return listed, matched


def run_page(store: RunStore, run_ref: str, q: Query) -> str:
    try:
        run_id = resolve_run(store, run_ref)
    except AssayError as exc:
        raise NotFound(str(exc)) from None
    params = {k: q.get(k) for k in ("verdict", "metric", "q")}
    n = q.page()
    title, metric_names, top = _run_top(store, run_id)
    listed, matched = _listing(store, run_id, params["verdict"], params["metric"], params["q"].lower(),
                               (n - 1) * PAGE_SIZE, n * PAGE_SIZE)
    rows = [h("tr", h("td", str(i + 1), class_="num", data_label="#"),
              h("td", h("a", t.id, href=trace_url(run_id, i), data_nav=True), data_label="trace"),
              h("td", str(t.task_id), data_label="task"),
              h("td", "" if t.trial is None else str(t.trial), class_="num", data_label="trial"),
              h("td", badge(trace_status(t)), data_label="verdict"),
              h("td", fmt(t.overall), class_="num", data_label="overall"),
              h("td", _failing(t), class_="meta", data_label="failing")) for i, t in listed]
    form = filters(run_url(run_id), [
        select("verdict", "verdict", VERDICTS, params["verdict"]),
        select("metric", "metric", [("", "any metric")] + [(m, m) for m in metric_names], params["metric"]),
        text_input("q", "search", params["q"], "trace, task or file")])
    traces = h("section", h("h2", "Traces"), form,
               pager(run_url(run_id), params, n, matched, "traces"),
               table(["#", "trace", "task", "trial", "verdict", "overall", "failing metrics"], rows, class_="list traces"),
               id="traces")
    return page(f"assay · {title}", [top, traces], crumbs=[(title, None)])


def _previous_link(store: RunStore, run_id: str, name: str | None) -> Markup | None:
    """A link comparing this run with the previous run of the same name, when there is one."""
    prev = previous_run(store, run_id, name) if name else None
    if prev is None:
        return None
    return h("p", h("a", f"Compare with the previous {name} run ({prev})", href=url("/compare", a=prev, b=run_id)),
             class_="compare-prev")


# -- one trace -----------------------------------------------------------------------------------------
def trace_page(store: RunStore, run_ref: str, seq: int) -> str:
    try:
        run_id = resolve_run(store, run_ref)
    except AssayError as exc:
        raise NotFound(str(exc)) from None
    found = trace_at(store, run_id, seq)
    if found is None:
        raise NotFound(f"run {run_id} has no trace number {seq + 1}")
    t, trace = found
    st = trace_status(t)
    summary = _name(run_info(store, run_id)) or run_id
    steps = h("nav", h("a", "← previous trace", href=trace_url(run_id, seq - 1), rel="prev", data_key="[")
              if seq > 0 else None,
              h("a", "next trace →", href=trace_url(run_id, seq + 1), rel="next", data_key="]")
              if trace_at(store, run_id, seq + 1) is not None else None, class_="steps")
    raw = [h("details", h("summary", h("code", name), f" · {r.judge_calls} judge call{'s' if r.judge_calls != 1 else ''}"
                          if r.judge_calls else None),
             h("pre", clip(json.dumps(r.details, ensure_ascii=False, indent=2, default=str))), class_="raw")
           for name, r in t.metrics.items() if r.details]
    body = [h("h1", badge(st), " ", t.id), h("p", _traces.where(t).strip(), class_="meta"), steps,
            h("section", _traces.trace_body(t, trace), class_=f"trace {st}", id="trace"),
            h("section", h("h2", "The judge's raw verdicts and details"), raw, id="raw") if raw else None]
    return page(f"assay · {t.id}", body, crumbs=[(summary, run_url(run_id)), (t.id, None)])


# -- compare -------------------------------------------------------------------------------------------
_CHANGES = [("", "any change"), ("pass_to_fail", "pass → fail"), ("fail_to_pass", "fail → pass"),
            ("worse", "score down"), ("better", "score up"), ("same", "unchanged")]


def _whole(store: RunStore, run_id: str) -> RunResult:
    traces = [t for _, t in stored_results(store, run_id)]
    result = load_summary(store, run_id)
    result.traces = traces
    return result


def compare_page(store: RunStore, q: Query) -> str:
    from ..analysis._compare import compare_runs

    a_ref, b_ref = q.get("a"), q.get("b")
    if not a_ref or not b_ref:
        return page("assay · compare", [h("h1", "Compare two runs"),
                                        h("p", "Pick a baseline (A) and a candidate (B) on the ", h("a", "runs page", href="/"),
                                          ".")], crumbs=[("compare", None)])
    try:
        a_id, b_id = resolve_run(store, a_ref), resolve_run(store, b_ref)
    except AssayError as exc:
        raise NotFound(str(exc)) from None
    a, b = _whole(store, a_id), _whole(store, b_id)
    dup = q.get("dup") or None
    params = {"a": a_id, "b": b_id, "dup": dup or "", "change": q.get("change"), "metric": q.get("metric"),
              "q": q.get("q")}
    metric = params["metric"] if params["metric"] in b.summary else ""
    try:
        comp = compare_runs(a, b, duplicates=dup if dup in ("first", "last", "mean") else None)
        problem = None
    except AssayError as exc:
        comp, problem = None, h("div", h("p", str(exc), class_="warn"),
                                h("p", "Pair repeated ids by ", [h("a", rule, href=url("/compare", params, dup=rule))
                                                                  for rule in ("first", "last", "mean")], class_="meta"))
    seq_b = {t.id: i for i, t in enumerate(b.traces)}
    section = _sections.comparison(comp, b, a, href=lambda i: trace_url(b_id, i)) if comp else None
    pairs = _pairs(a, b, metric)
    text = params["q"].lower()
    change = params["change"]
    chosen = [p for p in pairs if (not change or p[0] == change) and
              (not text or text in p[1].id.lower() or text in str(p[1].task_id).lower())]
    n = q.page()
    rows = []
    seq_a = {t.id: i for i, t in enumerate(a.traces)}
    what = metric or "overall"
    for kind, ta, tb, delta in chosen[(n - 1) * PAGE_SIZE:n * PAGE_SIZE]:
        rows.append(h("tr", h("td", str(ta.task_id), data_label="task"),
                      h("td", h("a", ta.id, href=trace_url(b_id, seq_b[tb.id]), data_nav=True), data_label="trace"),
                      h("td", h("a", badge(_state(ta, metric)), href=trace_url(a_id, seq_a[ta.id]),
                                aria_label=f"baseline {ta.id}"), " → ", badge(_state(tb, metric)), data_label="verdict"),
                      h("td", fmt(_figures(ta, metric)[0]), class_="num", data_label=f"A {what}"),
                      h("td", fmt(_figures(tb, metric)[0]), class_="num", data_label=f"B {what}"),
                      h("td", "—" if delta is None else f"{delta:+.3f}",
                        class_="num delta " + ("down" if (delta or 0) < 0 else "up" if (delta or 0) > 0 else ""),
                        data_label="Δ"),
                      class_=kind))
    form = filters("/compare", [select("change", "change", _CHANGES, change),
                                select("metric", "metric", [("", "overall (every metric)")] + [
                                    (m, m) for m in b.summary if m in a.summary], metric),
                                text_input("q", "search", params["q"], "trace or task")],
                   keep={"a": a_id, "b": b_id, "dup": dup})
    title = f"{_label(a)} → {_label(b)}"
    body = [h("h1", "Compare ", h("a", _label(a), href=run_url(a_id)), " → ", h("a", _label(b), href=run_url(b_id))),
            h("p", f"baseline (A) {a_id} · candidate (B) {b_id} · ",
              h("a", "swap", href=url("/compare", params, a=b_id, b=a_id)), class_="meta"),
            problem, section,
            h("section", h("h2", "Traces paired by id, regressions first"), form,
              pager("/compare", params, n, len(chosen), "pairs"),
              table(["task", "trace", "verdict A → B", f"A {what}", f"B {what}", f"Δ {what}"], rows,
                    class_="list pairs"),
              legend([("rect", "bar fail", "pass → fail"), ("rect", "bar pass", "fail → pass")]), id="pairs")]
    return page(f"assay · {title}", body, crumbs=[("compare", None)])


def _state(t: TraceResult, metric: str) -> str:
    r = t.metrics.get(metric) if metric else None
    return trace_status(t) if not metric else "null" if r is None else status_of(r)


def _label(r: RunResult) -> str:
    return str(r.run.get("name") or r.run.run_id)


def _figures(t: TraceResult, metric: str) -> tuple[float | None, bool | None]:
    """A trace's overall score and verdict, or with ``metric`` that metric's score and verdict."""
    if not metric:
        return t.overall, t.passed
    r = t.metrics.get(metric)
    return (None, None) if r is None else (r.score, r.passed)


def _pairs(a: RunResult, b: RunResult, metric: str = "") -> list[tuple[str, TraceResult, TraceResult, float | None]]:
    """Traces of both runs paired by id (the last of a repeated id), regressions first, then by score change
    (of the overall score and verdict, or of ``metric``)."""
    before = {t.id: t for t in a.traces}
    out = []
    for tb in b.traces:
        ta = before.get(tb.id)
        if ta is None:
            continue
        (sa, pa), (sb, pb) = _figures(ta, metric), _figures(tb, metric)
        delta = None if sa is None or sb is None else sb - sa
        kind = ("pass_to_fail" if pa is True and pb is False else
                "fail_to_pass" if pa is False and pb is True else
                "worse" if delta is not None and delta < 0 else "better" if delta is not None and delta > 0 else "same")
        out.append((kind, ta, tb, delta))
    order = {"pass_to_fail": 0, "worse": 1, "same": 2, "better": 3, "fail_to_pass": 4}
    out.sort(key=lambda p: (order[p[0]], p[3] if p[3] is not None else 0.0))
    return out


def error_page(status: int, message: str) -> str:
    return page(f"assay · {status}", [h("h1", f"{status}"), h("p", message), h("p", h("a", "all runs", href="/"))])


__all__ = ["NotFound", "Query", "compare_page", "error_page", "run_page", "runs_page", "trace_page"]
