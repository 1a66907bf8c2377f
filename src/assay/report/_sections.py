"""Report sections about the run as a whole: header, dimensions, metrics, pass@k, comparison."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model import RunResult
from . import _charts
from ._html import Markup, fmt, h, interval, money, num, pct, slug


def _kv(rows: list[tuple[str, Any]]) -> Markup:
    return h("dl", [[h("dt", k), h("dd", v)] for k, v in rows if v not in (None, "", [])], class_="kv")


def totals(result: RunResult) -> dict[str, Any]:
    """Judge calls, tokens and cost over the run (metric summaries, else the judge's own count)."""
    s = result.summary.values()
    calls = sum(x.judge_calls for x in s)
    tokens = sum(x.tokens for x in s)
    costs = [x.cost_usd for x in s if x.cost_usd is not None]
    judge = result.run.get("judge") if isinstance(result.run.get("judge"), dict) else {}
    if not calls and num(judge.get("calls")) is not None:
        calls = judge["calls"]
    if not tokens:
        tokens = sum(v for k in ("input_tokens", "output_tokens") if (v := num(judge.get(k))) is not None)
    cost = sum(costs) if costs else num(judge.get("cost_usd"))
    return {"calls": calls, "tokens": int(tokens), "cost": cost}


def header(result: RunResult, title: str) -> Markup:
    run = result.run
    n, n_pass, n_fail = run.get("n_traces", len(result.traces)), run.get("n_passed"), run.get("n_failed")
    if n_pass is None:
        n_pass = sum(t.passed is True for t in result.traces)
        n_fail = sum(t.passed is False for t in result.traces)
    scored = (n_pass or 0) + (n_fail or 0)
    status = run.get("status")
    verdict = "passed" if result.passed else "failed"
    t = totals(result)
    files = run.get("input_files") or [{"path": p} for p in run.get("inputs") or []]
    inputs = [h("div", h("code", f.get("path")),
                h("span", f" sha256 {str(f['sha256'])[:12]}…", class_="meta", title=f["sha256"]) if f.get("sha256") else None,
                h("span", f" {f['bytes']:,} bytes", class_="meta") if isinstance(f.get("bytes"), int) else None)
              for f in files if isinstance(f, Mapping)]
    metrics = [h("div", h("code", m.get("name")), h("span", " " + ", ".join(f"{k}={v}" for k, v in
                                                                                (m.get("params") or {}).items()),
                                                      class_="meta"))
               for m in run.get("metrics") or [] if isinstance(m, Mapping)]
    judge = run.get("judge")
    judge_line = None
    if isinstance(judge, Mapping):
        judge_line = [h("code", judge.get("model")),
                      h("span", " " + ", ".join(f"{k} {v}" for k, v in judge.items() if k != "model"), class_="meta")]
    cards = h("div",
              _card("traces", str(n), f"{n_pass} passed · {n_fail} failed · {max(n - scored, 0)} unscored"),
              _card("pass rate", pct(n_pass / scored if scored else None), "traces meeting every threshold",
                    state="pass" if scored and n_fail == 0 else "fail" if n_fail else ""),
              _card("judge calls", str(t["calls"]), f"{t['tokens']:,} tokens"),
              _card("cost", money(t["cost"]), f"{run.get('duration_s', '—')} s"),
              class_="cards")
    info = _kv([("run", h("code", run.get("run_id")) if run.get("run_id") else None),
                ("status", h("span", status, class_=f"badge {status}") if status else None),
                ("verdict", h("span", verdict, class_=f"badge {verdict}")),
                ("started", run.get("started_at")), ("duration", f"{run['duration_s']} s" if "duration_s" in run else None),
                ("assay", run.get("assay_version")), ("inputs", inputs), ("metrics", metrics), ("judge", judge_line),
                ("input issues", str(run.get("n_input_issues")) if run.get("n_input_issues") else None),
                ("skipped metrics", _skipped(run.get("skipped_metrics"))),
                ("error", run.get("error"))])
    return h("header", h("h1", title), cards, info, class_="run-header")


def _skipped(skipped: Any) -> list[Markup]:
    """Skipped metrics grouped by reason (usually one: no judge configured)."""
    if not isinstance(skipped, Mapping):
        return []
    by_reason: dict[str, list[str]] = {}
    for name, why in skipped.items():
        by_reason.setdefault(str(why), []).append(str(name))
    return [h("div", h("span", f"{why}: ", class_="meta"), ", ".join(names)) for why, names in by_reason.items()]


def _card(label: str, value: str, note: str, state: str = "") -> Markup:
    return h("div", h("div", label, class_="card-label"), h("div", value, class_="card-value"),
             h("div", note, class_="card-note"), class_=f"card {state}".strip())


def dimensions(result: RunResult) -> Markup | None:
    per: dict[str, list[Any]] = {}
    thresholds: dict[str, Any] = {}
    for t in result.traces:
        for d, s in t.dimensions.items():
            per.setdefault(d, []).append(s.score)
            thresholds[d] = s.threshold
    if not per:
        return None
    overall = [t.overall for t in result.traces if t.overall is not None]
    cards = [_dist_card("overall", "weighted mean over dimensions", overall, None, None, None, None)]
    for d in sorted(per):
        vals = [v for v in per[d] if num(v) is not None]
        mean = sum(vals) / len(vals) if vals else None
        passed = sum(v >= thresholds[d] for v in vals)
        cards.append(_dist_card(d, f"{len(vals)} traces · {passed} at or above {fmt(thresholds[d], 2)}", vals,
                                thresholds[d], mean, None, None))
    return h("section", h("h2", "Dimensions"), h("div", cards, class_="grid"), id="dimensions")


def _dist_card(name: str, note: str, values: list[Any], threshold: Any, mean: Any, ci: Any,
               extra: Any, id_: str | None = None) -> Markup:
    vals = [v for v in values if num(v) is not None]
    m = mean if mean is not None else (sum(vals) / len(vals) if vals else None)
    return h("div", h("h3", name), h("div", note, class_="meta"),
             h("div", "mean ", h("strong", fmt(m)), " ", interval(ci) if ci else None, class_="stat"), extra,
             _charts.histogram(vals, label=name, threshold=threshold, mean=m, ci=ci) if vals else
             h("p", "no scores", class_="meta empty"), class_="dist card", id=id_)


def metrics(result: RunResult) -> Markup:
    scores: dict[str, list[Any]] = {}
    for t in result.traces:
        for name, r in t.metrics.items():
            scores.setdefault(name, []).append(r.score)
    rows, cards = [], []
    for name, s in result.summary.items():
        warn = ", ".join(f"{k} {v}" for k, v in s.warnings.items())
        rows.append(h("tr", h("td", h("a", name, href=f"#metric-{slug(name)}")), h("td", s.dimension),
                      h("td", str(s.n), class_="num"), h("td", str(s.n_null), class_="num"),
                      h("td", str(s.n_errored) if s.n_errored else "", class_="num"),
                      h("td", fmt(s.mean), " ", h("span", interval(s.mean_ci), class_="ci"), class_="num"),
                      h("td", pct(s.pass_rate), " ", h("span", interval(s.pass_rate_ci, 2, percent=True), class_="ci"),
                        class_=f"num {_rate_state(s.pass_rate)}"),
                      h("td", fmt(s.threshold, 2), class_="num"), h("td", warn, class_="meta")))
        extra = h("div", "pass rate ", h("strong", pct(s.pass_rate)), " ", interval(s.pass_rate_ci, 2, percent=True),
                  f" · {s.n_passed}/{s.n} passed", f" · {s.n_null} null" if s.n_null else None,
                  f" ({s.n_errored} errored)" if s.n_errored else None, class_="stat")
        cards.append(_dist_card(name, s.dimension, scores.get(name, []), s.threshold, s.mean, s.mean_ci, extra,
                                id_=f"metric-{slug(name)}"))
    head = h("tr", [h("th", c) for c in ("metric", "dimension", "n", "null", "errored", "mean [CI]",
                                         "pass rate [CI]", "threshold", "warnings")])
    table = h("table", h("thead", head), h("tbody", rows), class_="summary")
    forest_rows = [(n, s.pass_rate, *(s.pass_rate_ci or (None, None))) for n, s in result.summary.items()
                   if s.pass_rate is not None]
    forest = _charts.forest(forest_rows, label="pass rate per metric with intervals") if forest_rows else None
    return h("section", h("h2", "Metrics"), table,
             h("figure", forest, h("figcaption", _interval_note(result.statistics)))
             if forest else None,
             h("div", cards, class_="grid"), id="metrics")


def _interval_note(statistics: Mapping[str, Any]) -> str:
    level, method = num(statistics.get("interval_level")), statistics.get("interval_method")
    if level is None:
        return "Pass rate per metric; whiskers are the intervals when computed."
    return f"Pass rate per metric with {level:.0%} intervals" + (f" ({method})." if method else ".")


def _rate_state(rate: Any) -> str:
    r = num(rate)
    return "" if r is None else "pass" if r == 1 else "fail" if r < 0.5 else "mixed"


def comparison(comp: Mapping[str, Any] | None) -> Markup | None:
    """Per-metric deltas against a baseline with significance, from a comparison dict.

    Shape: ``{"metrics": {name: {"delta", "ci_low", "ci_high", "p_value", "p_adjusted", "significant",
    "regression"}}}``; optional per metric ``mean_a``/``mean_b``/``improvement``, and at the top
    ``baseline``/``candidate`` (or ``a``/``b``), ``alpha``, ``level``, ``correction``, ``n_pairs``.
    """
    if not isinstance(comp, Mapping) or not isinstance(comp.get("metrics"), Mapping) or not comp["metrics"]:
        return None
    items = [(name, d) for name, d in comp["metrics"].items() if isinstance(d, Mapping)]
    means = any("mean_a" in d or "mean_b" in d for _, d in items)
    rows, forest_rows, classes = [], [], []
    for name, d in items:
        state = "fail" if d.get("regression") else "pass" if d.get("significant") else ""
        verdict = ("regression", "fail") if d.get("regression") else ("improvement", "pass") if (
            d.get("improvement") or (d.get("significant") and (num(d.get("delta")) or 0) > 0)) else None
        rows.append(h("tr", h("td", h("code", name)),
                      [h("td", fmt(d.get("mean_a")), class_="num"), h("td", fmt(d.get("mean_b")), class_="num")]
                      if means else None,
                      h("td", _signed(d.get("delta")), class_=f"num {state}".strip()),
                      h("td", interval((d.get("ci_low"), d.get("ci_high")), 3), class_="num ci"),
                      h("td", _p(d.get("p_value")), class_="num"), h("td", _p(d.get("p_adjusted")), class_="num"),
                      h("td", h("span", "yes", class_="badge pass") if d.get("significant") else "no"),
                      h("td", h("span", verdict[0], class_=f"badge {verdict[1]}") if verdict else ""),
                      class_="fail" if d.get("regression") else None))
        forest_rows.append((name, d.get("delta"), d.get("ci_low"), d.get("ci_high")))
        classes.append(state)
    bound = max([abs(v) for r in forest_rows for v in map(num, r[1:]) if v is not None] + [0.05])
    chart = _charts.forest(forest_rows, label="metric deltas with intervals", lo=-bound, hi=bound, zero=0.0,
                           row_classes=classes)
    labels = {"baseline": comp.get("baseline", comp.get("a")), "candidate": comp.get("candidate", comp.get("b")),
              **{k: comp.get(k) for k in ("alpha", "level", "correction", "n_pairs")}}
    meta = [f"{k.replace('_', ' ')}: {v}" for k, v in labels.items() if v is not None]
    cols = ["metric", *(["baseline", "candidate"] if means else []), "delta", "CI", "p", "p adjusted", "significant", ""]
    return h("section", h("h2", "Comparison"), h("div", " · ".join(meta), class_="meta"),
             h("table", h("thead", h("tr", [h("th", c) for c in cols])), h("tbody", rows), class_="summary"),
             h("figure", chart, h("figcaption", "Difference candidate − baseline per metric, with its interval.")),
             id="comparison")


def _signed(x: Any) -> str:
    v = num(x)
    return "—" if v is None else f"{v:+.3f}"


def _p(x: Any) -> str:
    v = num(x)
    return "—" if v is None else ("<0.001" if v < 0.001 else f"{v:.3f}")


def issues(result: RunResult) -> Markup | None:
    if not result.input_issues:
        return None
    return h("section", h("h2", f"Input issues ({len(result.input_issues)})"),
             h("ul", [h("li", h("code", str(i))) for i in result.input_issues[:500]], class_="issues"), id="issues")
