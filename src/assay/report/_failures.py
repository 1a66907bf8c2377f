"""The Failures section at the top of the report: each failed trace, what failed, and why, in one line each."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..model import RunResult, TraceResult
from ..model._status import apart
from . import _diff
from ._conversation import status_of, trace_status, unique_evidence
from ._traces import trace_for
from ._html import Markup, fmt, h

MAX_FAILURES = 200
"""Failed traces listed; the rest are counted (the traces table filter finds them all)."""
MAX_QUOTES = 3
"""Evidence quotes listed per failed result when asked (``assay view``)."""
MAX_LINE = 240
"""Characters of one reason shown here (the trace view has the whole reason)."""


def _line(text: str) -> str:
    first = " ".join(str(text).split())
    return first if len(first) <= MAX_LINE else first[:MAX_LINE - 1] + "…"


def _quotes(r: Any) -> Markup | None:
    """The evidence a result quotes, one short line each (the trace page marks them in the conversation)."""
    quotes = [q for q in unique_evidence(r.evidence) if isinstance(q, str) and q.strip()][:MAX_QUOTES]
    return h("ul", [h("li", h("q", _line(q))) for q in quotes], class_="evidence") if quotes else None


def _items(t: TraceResult, trace: Any, evidence: bool = False) -> list[Markup]:
    out = []
    for name, r in t.metrics.items():
        st = status_of(r)
        if st == "fail":
            score, threshold = (fmt(r.score, 2), fmt(r.threshold, 2)) if r.score is None or r.threshold is None \
                else apart(r.score, r.threshold)
            out.append(h("li", h("code", name), " ", h("strong", score, class_="fail"), f" < {threshold}", h("span", f" — {_line(r.reason)}", class_="why") if r.reason else None,
                         _quotes(r) if evidence else None))
        elif st == "error":
            out.append(h("li", h("code", name), " ", h("span", "error", class_="badge error"),
                         f" {r.warning}" if r.warning is not None else None,
                         h("span", f" — {_line(r.reason)}", class_="why") if r.reason else None))
    for d, s in t.dimensions.items():
        if s.passed is False:
            out.append(h("li", "dimension ", h("code", d), " ", h("strong", fmt(s.score, 2), class_="fail"),
                         f" < {fmt(s.threshold, 2)}", h("span", f" (mean of {s.n} metric{'s' if s.n != 1 else ''})",
                                                         class_="why")))
    if trace is not None:
        rows = _diff.trace_rows(trace) or []
        phrases = _diff.summary(rows) + [p for turn in trace.turns for p in _diff.summary(_diff.turn_rows(turn) or [])]
        if phrases:
            shown = phrases[:6]
            out.append(h("li", "tool calls: ", h("span", "; ".join(shown), class_="diff-line"),
                         f" (+{len(phrases) - len(shown)} more)" if len(phrases) > len(shown) else None))
    return out


def failures(result: RunResult, viewed: Sequence[int], traces: Mapping[str, Any] | None,
             counts: tuple[int, int] | None = None, *, href: Callable[[int], str | None] | None = None,
             more: Markup | None = None, evidence: bool = False) -> Markup | None:
    """The section, or None when no trace failed or errored; links go to the trace views in ``viewed``.

    ``counts``: (failed or errored, all) traces of the run when ``result`` holds only some of them.
    ``href``: where trace ``i`` of ``result`` links to, instead (``assay view``: its trace page);
    ``more``: what replaces the note on failures not listed; ``evidence``: list each failed result's quotes."""
    bad = [i for i, t in enumerate(result.traces) if trace_status(t) in ("fail", "error")]
    n_bad, n_all = counts or (len(bad), len(result.traces))
    if not bad:
        return None
    viewable = set(viewed)
    entries = []
    for i in bad[:MAX_FAILURES]:
        t = result.traces[i]
        st = trace_status(t)
        where = f"task {t.task_id}" + (f" · trial {t.trial}" if t.trial is not None else "") + (
            f" · {t.source}" if t.source else "")
        url = href(i) if href is not None else f"#trace-{i + 1}" if i in viewable else None
        link = (h("a", t.id, href=url, class_="failure-link") if url
                else h("span", t.id, title="trace view not included (over the report's limit)"))
        entries.append(h("li", h("div", h("span", st, class_=f"badge {st}"), " ", h("strong", link), " ",
                                  h("span", where, class_="meta"), class_="failure-head"),
                         h("p", t.outcome_reason, class_="meta") if t.outcome == "failed" else None,
                         h("ul", _items(t, trace_for(t, traces), evidence), class_="failure-items"), class_="failure", data_i=i + 1))
    n_more = n_bad - len(entries)
    note = (more or h("p", f"{n_more} more failed traces not listed; filter the traces table by verdict to see them.",
                      class_="meta")) if n_more > 0 else None
    return h("section", h("h2", f"Failures ({n_bad} of {n_all} traces)"),
             h("ol", entries, class_="failures"), note, id="failures")
