"""The report's judge section: who judged, how reliably, and whether anyone checked.

Shows the judge or jurors with their failure and retry rates, test-retest (``--repeats``), jury
agreement, the pass rates corrected with a judge card, and a visible note when the judge metrics
rest on an uncalibrated or unstable judge. Everything comes from the results file (``run.judge``,
``statistics``, per-trace ``details``), which is untrusted input: numbers go through ``num``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model import RunResult
from ._html import Markup, fmt, h, interval, num, pct

MAX_UNSTABLE = 50
"""Unstable traces listed by id (the count is always complete)."""


def _rate(part: Any, whole: Any) -> str:
    p, w = num(part), num(whole)
    return "—" if p is None or not w else pct(p / w, 1)


def _juror_rows(judge: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    jurors = judge.get("jurors")
    if isinstance(jurors, list) and all(isinstance(j, Mapping) for j in jurors):
        return jurors
    return [judge]


def judge_section(result: RunResult) -> Markup | None:
    judge = result.run.judge
    if not isinstance(judge, Mapping):
        return None
    stats = result.statistics if isinstance(result.statistics, Mapping) else {}
    judged = [m.get("name") for m in result.run.metrics or [] if isinstance(m, Mapping) and m.get("judge_calls")
              not in (None, 0, "0")]
    parts: list[Any] = [h("h2", "Judge")]
    rows = []
    for j in _juror_rows(judge):
        reasons = j.get("error_reasons") if isinstance(j.get("error_reasons"), Mapping) else {}
        top = "; ".join(f"{k} ({v})" for k, v in sorted(reasons.items(), key=lambda kv: -(num(kv[1]) or 0))[:3])
        rows.append(h("tr", h("td", h("code", j.get("model"))),
                      h("td", fmt(j.get("weight"), 2) if "weight" in j else "", class_="num"),
                      h("td", str(j.get("requests", "—")), class_="num"), h("td", str(j.get("calls", "—")), class_="num"),
                      h("td", str(j.get("cached", "—")), class_="num"),
                      h("td", _rate(j.get("errors"), j.get("requests")), class_="num"),
                      h("td", _rate(j.get("retries"), j.get("calls")), class_="num"),
                      h("td", _rate(j.get("reasks"), j.get("calls")), class_="num"), h("td", top, class_="meta")))
    head = h("tr", [h("th", c, title=t) for c, t in (
        ("judge", None), ("weight", "jury weight"), ("requests", None), ("calls", "backend calls made"),
        ("cached", None), ("failed", "requests without a verdict: errors and parse failures"),
        ("retried", "calls repeated after a transient error"), ("re-asked", "calls repeated: reply did not fit the schema"),
        ("why failed", None))])
    parts.append(h("div", h("table", h("thead", head), h("tbody", rows), class_="summary", id="judge-table"),
                   class_="wide"))

    notes = []
    corrections = stats.get("judge_correction") if isinstance(stats.get("judge_correction"), Mapping) else {}
    applied = {n for n, c in corrections.items() if isinstance(c, Mapping) and num(c.get("corrected")) is not None}
    uncalibrated = [n for n in judged if n not in applied]
    if uncalibrated:
        notes.append(h("p", h("strong", "Uncalibrated judge: "),
                       ", ".join(map(str, uncalibrated)),
                       " rest on verdicts no one has checked against human labels; their pass rates are the judge's "
                       "own. Measure it with ", h("code", "assay calibrate"), " and pass ", h("code", "--judge-card"),
                       ".", class_="judge-note", id="judge-uncalibrated"))
    retest = stats.get("test_retest") if isinstance(stats.get("test_retest"), Mapping) else {}
    shaky = [n for n, t in retest.items() if isinstance(t, Mapping) and (num(t.get("unstable")) or 0) > 0]
    if shaky:
        notes.append(h("p", h("strong", "Unstable judge: "), "on ", ", ".join(map(str, shaky)),
                       " the judge's pass/fail verdict flipped between repeats on some traces (listed below); each "
                       "such trace's verdict is the majority of its repeats.", class_="judge-note",
                       id="judge-unstable"))
    parts += notes

    if corrections:
        crow = []
        for name, c in corrections.items():
            if not isinstance(c, Mapping):
                continue
            if num(c.get("corrected")) is None:
                crow.append(h("tr", h("td", name), h("td", h("code", c.get("card"))),
                              h("td", "not corrected: ", c.get("refused"), colspan="5", class_="meta")))
                continue
            crow.append(h("tr", h("td", name), h("td", h("code", c.get("card"))),
                          h("td", pct(c.get("raw"), 1), class_="num"),
                          h("td", h("strong", pct(c.get("corrected"), 1)), " ",
                            h("span", interval(c.get("ci"), 3, percent=True), class_="ci"), class_="num"),
                          h("td", fmt(c.get("tpr")), class_="num"), h("td", fmt(c.get("tnr")), class_="num"),
                          h("td", str(c.get("n_labelled", "—")), class_="num")))
        chead = h("tr", [h("th", c) for c in ("metric", "judge card", "pass rate (judge)", "corrected [CI]", "TPR",
                                              "TNR", "labels")])
        parts += [h("h3", "Agreement with human labels"),
                  h("div", h("table", h("thead", chead), h("tbody", crow), class_="summary", id="judge-correction"),
                    class_="wide"),
                  h("p", "Corrected: (raw + TNR - 1) / (TPR + TNR - 1) with the card's rates; the interval carries the "
                         "run's sampling and the card's own uncertainty.", class_="meta")]

    if retest:
        rrow = []
        for name, t in retest.items():
            if not isinstance(t, Mapping):
                continue
            rrow.append(h("tr", h("td", name), h("td", str(t.get("n", "—")), class_="num"),
                          h("td", str(t.get("unstable", "—")), " (", pct(t.get("unstable_share"), 0), ")", class_="num"),
                          h("td", str(t.get("flips", "—")), class_="num"),
                          h("td", fmt(t.get("self_alpha")), class_="num"),
                          h("td", pct(t.get("position_agreement"), 1), class_="num")))
        rhead = h("tr", [h("th", c, title=tt) for c, tt in (
            ("metric", None), ("traces", "traces with two or more repeats"),
            ("unstable", "traces whose pass/fail verdict flips between repeats"),
            ("flips", "repeats that disagree with their trace's majority"),
            ("self-agreement α", "Krippendorff's alpha across repeats"),
            ("position agreement", "same label from two repeats that listed the options in different orders"))])
        parts += [h("h3", f"Test-retest ({result.run.get('repeats')} repeats)"),
                  h("div", h("table", h("thead", rhead), h("tbody", rrow), class_="summary", id="judge-retest"),
                    class_="wide")]
        unstable = [(t.id, n, r.details.get("flips")) for t in result.traces for n, r in t.metrics.items()
                    if r.details.get("unstable")]
        if unstable:
            items = [h("li", h("code", tid), f" {n}: {flips} flip(s)") for tid, n, flips in unstable[:MAX_UNSTABLE]]
            more = len(unstable) - MAX_UNSTABLE
            parts.append(h("ul", items, h("li", f"... and {more} more") if more > 0 else None, class_="unstable",
                           id="judge-unstable-traces"))

    jury = stats.get("jury") if isinstance(stats.get("jury"), Mapping) else {}
    if jury:
        jrow = []
        for name, j in jury.items():
            if not isinstance(j, Mapping):
                continue
            failures = j.get("juror_failures") if isinstance(j.get("juror_failures"), Mapping) else {}
            jrow.append(h("tr", h("td", name), h("td", str(j.get("n", "—")), class_="num"),
                          h("td", fmt(j.get("alpha")), " ", h("span", j.get("alpha_level"), class_="meta"), class_="num"),
                          h("td", str(j.get("disagreements", "—")), class_="num"),
                          h("td", "; ".join(f"{k}: {v}" for k, v in failures.items()), class_="meta")))
        jhead = h("tr", [h("th", c) for c in ("metric", "traces", "α across jurors", "disagreements",
                                              "juror failures (dropped, weight shared out)")])
        parts += [h("h3", "Jury agreement"),
                  h("div", h("table", h("thead", jhead), h("tbody", jrow), class_="summary", id="judge-jury"),
                    class_="wide")]
    return h("section", parts, id="judge")
