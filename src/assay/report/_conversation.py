"""The trace view: the conversation turn by turn, tool calls, and evidence quotes marked up.

Evidence quotes are located in the raw text (exact, then case- and whitespace-insensitive) and
the text is escaped piecewise around them, so a quote can never inject markup either.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..model import Trace, TraceResult, Turn
from . import _diff
from ._html import Markup, esc, fmt, h

MAX_BLOCK = 20_000
"""Characters of one text block or JSON value shown; the rest is cut with a note giving the full length."""
MAX_REASON = 2_000
"""Characters of a metric's reason and of one evidence quote shown."""
MIN_QUOTE = 3


def cut_note(total: int, shown: int) -> Markup:
    return h("span", f" … cut: {shown:,} of {total:,} characters shown", class_="cut")


def clip(text: Any, limit: int = MAX_BLOCK) -> Markup:
    """Escaped ``text`` up to ``limit`` characters, with the full length when cut."""
    s = "" if text is None else str(text)
    return Markup(esc(s[:limit]) + (cut_note(len(s), limit) if len(s) > limit else ""))


def quotes_of(result: TraceResult) -> dict[str, list[str]]:
    """Evidence quote -> names of the metrics that cited it."""
    out: dict[str, list[str]] = {}
    for name, r in result.metrics.items():
        for q in r.evidence:
            if isinstance(q, str) and len(q.strip()) >= MIN_QUOTE:
                out.setdefault(q.strip(), []).append(name)
    return out


def _pattern(quote: str) -> re.Pattern[str]:
    words = quote.split()
    return re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)


def find_spans(text: str, quotes: Mapping[str, Sequence[str]]) -> list[tuple[int, int, list[str]]]:
    """Non-overlapping (start, end, quotes) spans of ``text`` that match evidence quotes."""
    spans: list[tuple[int, int, list[str]]] = []
    for quote in quotes:
        pattern = re.compile(re.escape(quote)) if quote in text else _pattern(quote)
        spans += [(m.start(), m.end(), [quote]) for m in pattern.finditer(text) if m.end() > m.start()]
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: list[tuple[int, int, list[str]]] = []
    for a, b, qs in spans:
        if merged and a < merged[-1][1]:
            pa, pb, pqs = merged[-1]
            merged[-1] = (pa, max(pb, b), pqs + [q for q in qs if q not in pqs])
        else:
            merged.append((a, b, qs))
    return merged


def highlight(text: str | None, quotes: Mapping[str, Sequence[str]], found: set[str] | None = None) -> Markup:
    """``text`` escaped, with evidence spans in ``<mark>``; adds the quotes it matched to ``found``."""
    if not text:
        return Markup("")
    shown = text[:MAX_BLOCK]
    out: list[Any] = []
    pos = 0
    for a, b, qs in find_spans(shown, quotes):
        metrics = sorted({m for q in qs for m in quotes[q]})
        out += [shown[pos:a], h("mark", shown[a:b], title="evidence: " + ", ".join(metrics), data_m=" ".join(metrics))]
        pos = b
        if found is not None:
            found.update(qs)
    out.append(shown[pos:])
    if len(text) > MAX_BLOCK:
        out.append(cut_note(len(text), MAX_BLOCK))
    return Markup("".join(esc(p) for p in out))


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, indent=2, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _tool_call(call: Any, quotes: Mapping[str, Sequence[str]], found: set[str]) -> Markup:
    meta = [f"{call.duration_ms:g} ms" if call.duration_ms is not None else None,
            f"agent {call.agent}" if call.agent else None, call.timestamp]
    body = [h("div", h("span", "tool call", class_="role"), h("code", call.name, class_="tool-name"),
              h("span", "".join(f" · {m}" for m in meta if m), class_="meta"), class_="tool-head"),
            h("pre", highlight(_json_text(call.arguments), quotes, found), class_="args")]
    if call.error:
        body.append(h("div", h("span", "error", class_="role"), h("pre", highlight(call.error, quotes, found)),
                      class_="tool-error"))
    elif call.result is not None:
        body.append(h("div", h("span", "result", class_="role"),
                      h("pre", highlight(_json_text(call.result), quotes, found)), class_="tool-result"))
    return h("div", body, class_="msg tool")


def _turn(i: int, turn: Turn, quotes: Mapping[str, Sequence[str]], found: set[str]) -> Markup:
    meta = []
    if turn.latency_ms is not None:
        meta.append(f"{turn.latency_ms:g} ms")
    if turn.usage is not None and turn.usage.tokens is not None:
        meta.append(f"{turn.usage.tokens} tokens")
    if turn.agent:
        meta.append(f"agent {turn.agent}")
    parts: list[Any] = [h("div", f"Turn {i + 1}", h("span", " · " + " · ".join(meta) if meta else "", class_="meta"),
                          class_="turn-head")]
    if turn.input is not None:
        parts.append(h("div", h("span", "user", class_="role"), h("div", highlight(turn.input, quotes, found),
                                                                  class_="text"), class_="msg user"))
    if turn.context:
        items = [h("li", highlight(c, quotes, found)) for c in turn.context]
        parts.append(h("details", h("summary", f"retrieved context ({len(turn.context)})"), h("ol", items),
                       class_="context", open=any(find_spans(c, quotes) for c in turn.context)))
    if turn.reasoning:
        parts.append(h("details", h("summary", "reasoning"), h("div", highlight(turn.reasoning, quotes, found),
                                                              class_="text"), class_="reasoning"))
    parts += [_tool_call(c, quotes, found) for c in turn.tool_calls]
    if turn.output is not None:
        parts.append(h("div", h("span", "agent", class_="role"), h("div", highlight(turn.output, quotes, found),
                                                                   class_="text"), class_="msg agent"))
    rows = _diff.turn_rows(turn)
    if rows is not None:
        parts.append(_diff.render(rows, title="This turn's tool calls: expected vs actual"))
    if turn.expected is not None:
        parts.append(h("details", h("summary", "expected for this turn"),
                       h("pre", clip(_json_text(turn.expected.model_dump(exclude_none=True)))), class_="expected"))
    return h("div", parts, class_="turn")


def conversation(trace: Trace, quotes: Mapping[str, Sequence[str]], found: set[str]) -> Markup:
    """The whole trace: system prompt, turns, other agents, handoffs, expectations."""
    parts: list[Any] = []
    if trace.system:
        parts.append(h("div", h("span", "system", class_="role"), h("div", highlight(trace.system, quotes, found),
                                                                    class_="text"), class_="msg system"))
    parts += [_turn(i, t, quotes, found) for i, t in enumerate(trace.turns)]
    for name, agent in trace.agents.items():
        inner = [_turn(i, t, quotes, found) for i, t in enumerate(agent.turns)]
        parts.append(h("details", h("summary", f"agent {name}" + (f" ({agent.role})" if agent.role else "")),
                       inner, class_="agent-run"))
    if trace.handoffs:
        rows = [h("li", h("code", f"{x.from_agent} → {x.to_agent}"), f" {x.kind}",
                  (": " + x.message) if x.message else "") for x in trace.handoffs]
        parts.append(h("details", h("summary", f"handoffs ({len(trace.handoffs)})"), h("ul", rows), class_="handoffs"))
    if trace.expected is not None:
        parts.append(h("details", h("summary", "expected"),
                       h("pre", clip(_json_text(trace.expected.model_dump(exclude_none=True)))), class_="expected"))
    if trace.metadata:
        parts.append(h("details", h("summary", "metadata"), h("pre", clip(_json_text(trace.metadata))),
                       class_="expected"))
    return h("div", parts, class_="conversation")


_ORDER = {"fail": 0, "error": 1, "pass": 2, "null": 3}


def unique_evidence(evidence: Sequence[Any]) -> list[Any]:
    """Evidence in first-seen order with repeats (same quote, ignoring surrounding space) dropped."""
    seen: set[str] = set()
    out = []
    for q in evidence:
        key = q.strip() if isinstance(q, str) else repr(q)
        if key not in seen:
            seen.add(key)
            out.append(q)
    return out


def metric_table(result: TraceResult, found: set[str] | None) -> Markup:
    """Each metric's score, threshold, verdict, reason and evidence: failures first, unscored ones folded.

    Quotes not found in the trace are flagged.
    """
    rows, nulls = [], []
    for name, r in sorted(result.metrics.items(), key=lambda kv: _ORDER[status_of(kv[1])]):
        state = status_of(r)
        ev = []
        for q in unique_evidence(r.evidence):
            missing = found is not None and isinstance(q, str) and len(q.strip()) >= MIN_QUOTE and q.strip() not in found
            ev.append(h("li", h("q", clip(q, MAX_REASON)),
                        h("span", " (not found in the trace)", class_="warn") if missing else None))
        row = h("tr",
                h("td", h("code", name)),
                h("td", fmt(r.score), class_=f"num score {state}"),
                h("td", fmt(r.threshold, 2), class_="num"),
                h("td", h("span", state, class_=f"badge {state}")),
                h("td", str(r.warning) if r.warning is not None else ""),
                h("td", h("div", clip(r.reason, MAX_REASON), class_="reason"), h("ul", ev, class_="evidence") if ev else None),
                data_m=name, class_=f"m-{state}")
        (nulls if state == "null" else rows).append(row)
    head = h("tr", [h("th", c) for c in ("metric", "score", "threshold", "verdict", "warning", "reason and evidence")])
    folded = None
    if nulls:
        folded = h("details", h("summary", f"{len(nulls)} metric{'s' if len(nulls) != 1 else ''} without a score"),
                   h("table", h("thead", head), h("tbody", nulls), class_="metric-results"), class_="nulls")
    return Markup((h("table", h("thead", head), h("tbody", rows), class_="metric-results") if rows else "") + (folded or ""))


def status_of(r: Any) -> str:
    """pass / fail / error / null for a metric result."""
    if r.errored:
        return "error"
    if r.score is None:
        return "null"
    return "pass" if r.passed is not False else "fail"


def trace_status(t: TraceResult) -> str:
    """pass / fail / error / null for a trace (an errored metric marks a trace that did not fail)."""
    if t.outcome == "excluded":  # a harness fault: no verdict, shown as excluded
        return "excluded"
    if any(r.errored for r in t.metrics.values()):
        return "error" if t.passed is not False else "fail"
    return "null" if t.passed is None else "pass" if t.passed else "fail"
