"""``assay versus`` as a self-contained HTML page: the two replies side by side with the judge's reasons.

The same rules as the run report: everything from the evaluated data is escaped (``h``), the page
loads nothing (a CSP forbids any network access), and its style and script run under a nonce.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._files import write_atomic
from .._version import __version__
from ._html import esc, fmt, h, join, pct, slug
from ._page import _PAGE
from ._page import csp

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
main{max-width:1200px;margin:0 auto;padding:16px 24px}
h1{font-size:20px;margin:8px 0}
.summary{background:#fff;border:1px solid #d8dce3;border-radius:6px;padding:10px 14px;margin:10px 0}
.summary table{border-collapse:collapse}.summary td,.summary th{padding:2px 10px;text-align:right}
.verdict{font-weight:600}.worse{color:#b42318}.better{color:#067647}
.controls{margin:12px 0}
article.pair{background:#fff;border:1px solid #d8dce3;border-left:4px solid #98a2b3;border-radius:6px;
  margin:10px 0;padding:8px 12px}
article.pair[data-winner=b]{border-left-color:#12b76a}article.pair[data-winner=a]{border-left-color:#f04438}
.side{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.reply{background:#f9fafb;border:1px solid #eaecf0;border-radius:4px;padding:6px 8px;white-space:pre-wrap;
  overflow-wrap:anywhere}
.reply.won{outline:2px solid #12b76a}
.label{font-size:12px;color:#475467;margin:4px 0}
.reasons li{margin:4px 0}.badge{font-size:12px;padding:1px 6px;border-radius:8px;background:#eaecf0}
.flip{background:#fef0c7}
footer{color:#667085;font-size:12px;margin:20px 0}
"""

_JS = """
(function(){
  var sel=document.getElementById('f-winner'), count=document.getElementById('f-count');
  var pairs=Array.prototype.slice.call(document.querySelectorAll('article.pair'));
  function apply(){var v=sel.value, n=0;
    pairs.forEach(function(p){var show=!v||(v==='differ'?(p.dataset.winner==='a'||p.dataset.winner==='b'):
      v==='flip'?p.dataset.flip==='1':p.dataset.winner===v);p.hidden=!show;if(show)n++;});
    count.textContent=n+' of '+pairs.length+' pairs';}
  sel.addEventListener('change',apply);apply();
})();
"""


_WHO = {"a": "A better", "b": "B better", "tie": "tie", None: "not judged"}


def _summary(r: Mapping[str, Any]) -> Any:
    pi = r.get("position_inconsistency") or {}
    ci = f" [{fmt(r.get('ci_low'), 2)}, {fmt(r.get('ci_high'), 2)}]" if r.get("ci_low") is not None else ""
    verdict_class = "verdict worse" if r.get("b_worse") else "verdict better" if r.get("b_better") else "verdict"
    rows = h("table", h("tr", *(h("th", c) for c in ("pairs judged", "B wins", "ties", "B losses",
                                                      "win rate of B", "p"))),
             h("tr", h("td", r.get("n_judged")), h("td", r.get("wins_b")), h("td", r.get("ties")),
               h("td", r.get("losses_b")), h("td", fmt(r.get("win_rate_b")) + ci), h("td", fmt(r.get("p_value"), 4))),
             id="record")
    lines = [h("p", f"{r.get('test')}; interval: {r.get('interval')} over {r.get('n_tasks')} tasks; "
                    "a tie counts half a win.")]
    if pi.get("pairs_judged_both_orders"):
        lines.append(h("p", f"Position inconsistency: {pi.get('inconsistent')} of {pi.get('pairs_judged_both_orders')} "
                            f"pairs ({pct(pi.get('rate'))}) changed verdict when the candidates swapped places "
                            "(counted as ties).", id="inconsistency"))
    return h("section", rows, *lines, h("p", r.get("exit_reason"), class_=verdict_class, id="verdict"),
             class_="summary")


def _pair(p: Mapping[str, Any], names: tuple[str, str]) -> Any:
    winner = p.get("winner")
    flip = p.get("position_consistent") is False
    reasons = [h("li", h("span", f"{str(v.get('candidate_a', '?')).upper()}'s reply shown as candidate A", class_="badge"),
                 f" judge said {v.get('label')} ({_WHO.get(v.get('winner'), '?')}): ", v.get("reasoning"))
               for v in p.get("verdicts") or []]
    if not reasons and p.get("reason"):
        reasons = [h("li", p.get("reason"))]
    sides = [h("div", h("div", f"A: {names[0]}", class_="label"),
               h("div", p.get("reply_a") if p.get("reply_a") is not None else "(no reply)",
                 class_="reply won" if winner == "a" else "reply")),
             h("div", h("div", f"B: {names[1]}", class_="label"),
               h("div", p.get("reply_b") if p.get("reply_b") is not None else "(no reply)",
                 class_="reply won" if winner == "b" else "reply"))]
    head = h("h3", p.get("id"), " ", h("span", _WHO.get(winner, "?"), class_="badge"),
             h("span", " verdict changed with the order: counted as a tie", class_="badge flip") if flip else None)
    return h("article", head,
             h("div", "User: ", p.get("input"), class_="label") if p.get("input") else None,
             h("div", *sides, class_="side"), h("ul", *reasons, class_="reasons"),
             class_="pair", id=f"pair-{slug(str(p.get('id')))}", data_winner=winner or "none",
             data_flip="1" if flip else "0")


def render_versus(r: Mapping[str, Any], title: str | None = None) -> str:
    names = (str(r.get("a")), str(r.get("b")))
    title = title or f"assay versus · {names[1]} vs {names[0]}"
    controls = h("div", h("label", "Show ", h("select",
                                              h("option", "all pairs", value=""),
                                              h("option", "pairs with a winner", value="differ"),
                                              h("option", "B better", value="b"), h("option", "A better", value="a"),
                                              h("option", "ties", value="tie"),
                                              h("option", "verdict changed with the order", value="flip"),
                                              id="f-winner")),
                 " ", h("span", id="f-count"), class_="controls")
    metric = r.get("metric") or {}
    body = join([h("h1", title),
                 h("p", f"Judge {(r.get('judge') or {}).get('model')}, rubric {metric.get('rubric')}. "
                        f"A = {names[0]}, B = {names[1]}; the judge saw the candidates anonymised, in random order."),
                 _summary(r), controls, h("section", *(_pair(p, names) for p in r.get("pairs") or []), id="pairs")])
    nonce = secrets.token_urlsafe(18)
    return _PAGE.substitute(csp=esc(csp(nonce)), title=esc(title), nonce=esc(nonce), css=_CSS, js=_JS, body=body,
                            version=esc(__version__))


def write_versus(path: str | os.PathLike[str], r: Mapping[str, Any], title: str | None = None) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(p, render_versus(r, title))


def _colour(rate: float) -> str:
    """Red (0) through grey (0.5) to green (1)."""
    if rate >= 0.5:
        t = (rate - 0.5) * 2
        r, g, b = (round(234 + (18 - 234) * t), round(236 + (183 - 236) * t), round(240 + (106 - 240) * t))
    else:
        t = (0.5 - rate) * 2
        r, g, b = (round(234 + (240 - 234) * t), round(236 + (68 - 236) * t), round(240 + (56 - 240) * t))
    return f"#{r:02x}{g:02x}{b:02x}"


def win_matrix_chart(players: list[str], matrix: list[list[Any]]) -> Any:
    """An SVG heatmap: cell (i, j) is row i's win rate over column j, with the pairs behind it."""
    n = len(players)
    cell, left, top = 56, 150, 24
    parts = []
    for k, name in enumerate(players):
        parts.append(h("text", f"{k + 1}. {name[:18]}", x=left - 6, y=top + k * cell + cell / 2 + 4,
                       text_anchor="end", class_="row-label"))
        parts.append(h("text", str(k + 1), x=left + k * cell + cell / 2, y=top - 8, text_anchor="middle"))
    for i in range(n):
        for j in range(n):
            x, y = left + j * cell, top + i * cell
            c = matrix[i][j] if i != j else None
            if i == j or c is None:
                parts.append(h("rect", x=x, y=y, width=cell - 2, height=cell - 2, fill="#f2f4f7", class_="cell empty"))
                continue
            rate = float(c["win_rate"])
            parts.append(h("rect", h("title", f"{players[i]} over {players[j]}: {rate:.2f} of {c['n']} pairs"),
                           x=x, y=y, width=cell - 2, height=cell - 2, fill=_colour(rate), class_="cell",
                           data_row=i, data_col=j, data_rate=f"{rate:.4f}"))
            parts.append(h("text", f"{rate:.2f}", x=x + cell / 2 - 1, y=y + cell / 2 + 4, text_anchor="middle"))
    width, height = left + n * cell + 10, top + n * cell + 10
    return h("svg", *parts, xmlns="http://www.w3.org/2000/svg", width=width, height=height,
             viewBox=f"0 0 {width} {height}", class_="chart win-matrix", role="img",
             aria_label="win rate of each row run over each column run")


_SCHEDULE = {"all": "All-pairs", "swiss": "Swiss"}


def render_tournament(r: Mapping[str, Any], title: str | None = None) -> str:
    players = [str(p) for p in r.get("players") or []]
    title = title or f"assay tournament · {len(players)} runs"
    bt = r.get("bradley_terry") or {}
    head = h("tr", *(h("th", c) for c in ("rank", "run", "strength", f"{pct(bt.get('level', 0.95))} interval",
                                         "expected win rate", "wins", "ties", "losses")))
    rows = [h("tr", h("td", row.get("rank")), h("td", row.get("name")), h("td", fmt(row.get("theta"), 2)),
              h("td", f"[{fmt(row.get('ci_low'), 2)}, {fmt(row.get('ci_high'), 2)}]"),
              h("td", fmt(row.get("expected_win_rate"))), h("td", row.get("wins")), h("td", row.get("ties")),
              h("td", row.get("losses")))
            for row in r.get("ranking") or []]
    pi = r.get("position_inconsistency") or {}
    metric = r.get("metric") or {}
    matches = [m for m in r.get("matches") or [] if not m.get("bye")]
    body = join([
        h("h1", title),
        h("p", f"{_SCHEDULE.get(str(r.get('schedule')), r.get('schedule'))} schedule, {len(matches)} matches judged by {(r.get('judge') or {}).get('model')} "
               f"(rubric {metric.get('rubric')}); candidates anonymised and judged in random order."),
        h("section", h("h2", "Ranking"), h("table", head, *rows, id="ranking"),
          h("p", f"Strength: Bradley-Terry log-strength, centred on 0; intervals from {bt.get('n_boot')} resamples of "
                 f"{bt.get('n_tasks')} tasks. Expected win rate: against the average of the others."
                 + (f" Note: {bt['prior']}." if bt.get("prior") else "")),
          class_="summary"),
        h("section", h("h2", "Win matrix"), h("p", "Row run's win rate over the column run (a tie is half a win)."),
          win_matrix_chart(players, r.get("win_matrix") or []), class_="summary", id="win-matrix"),
        h("p", f"Position inconsistency: {pi.get('inconsistent')} of {pi.get('pairs_judged_both_orders')} pairs "
               f"({pct(pi.get('rate'))}) changed verdict when the candidates swapped places.", id="inconsistency")
        if pi.get("pairs_judged_both_orders") else None,
    ])
    nonce = secrets.token_urlsafe(18)
    css = _CSS + ".win-matrix text{font-size:12px;fill:#1d2330}.summary th,.summary td{text-align:left}"
    return _PAGE.substitute(csp=esc(csp(nonce)), title=esc(title), nonce=esc(nonce), css=css, js="", body=body,
                            version=esc(__version__))


def write_tournament(path: str | os.PathLike[str], r: Mapping[str, Any], title: str | None = None) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(p, render_tournament(r, title))
