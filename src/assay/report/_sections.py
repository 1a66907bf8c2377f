"""Report sections about the run as a whole: header, dimensions, metrics, pass@k, comparison."""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
    judge = result.run.judge if isinstance(result.run.judge, dict) else {}
    if not calls and num(judge.get("calls")) is not None:
        calls = judge["calls"]
    if not tokens:
        tokens = sum(v for k in ("input_tokens", "output_tokens") if (v := num(judge.get(k))) is not None)
    cost = sum(costs) if costs else num(judge.get("cost_usd"))
    return {"calls": calls, "tokens": int(tokens), "cost": cost}


def header(result: RunResult, title: str) -> Markup:
    cards, info = header_parts(result)
    return h("header", h("h1", title), cards, info, class_="run-header")


def header_parts(result: RunResult) -> tuple[Markup, Markup]:
    """The run header's figure cards (traces, pass rate, judge calls, cost) and its details list."""
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
    return cards, info


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


def dimensions(result: RunResult, scores: Any = None) -> Markup | None:
    """Score distributions per dimension; ``scores`` (a ``ReportDigest``) has them for a streamed run."""
    per: dict[str, Any] = {}
    thresholds: dict[str, Any] = {}
    if scores is not None:
        per, thresholds, overall = scores.dimension_scores, scores.dimension_thresholds, list(scores.overall)
    else:
        for t in result.traces:
            for d, s in t.dimensions.items():
                per.setdefault(d, []).append(s.score)
                thresholds[d] = s.threshold
        overall = [t.overall for t in result.traces if t.overall is not None]
    if not per:
        return None
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


def _tasks(n: int) -> str:
    return f"{n} task{'s' if n != 1 else ''}"


HIST_LEGEND = [("rect", "bar pass", "scores at or above the threshold"), ("rect", "bar fail", "below it"),
               ("rect", "bar mixed", "bin spans the threshold"), ("line", "threshold-line", "threshold"),
               ("line", "mean-line", "mean"), ("rect", "ci-band", "interval of the mean")]


def metrics(result: RunResult, digest: Any = None) -> Markup:
    """The metric table, pass-rate forest and score histograms; ``digest`` has the scores of a streamed run."""
    scores: dict[str, Any] = {}
    tasks: dict[str, set[str]] = {}
    if digest is not None:
        scores, tasks = digest.metric_scores, digest.metric_tasks
    for t in result.traces if digest is None else ():
        for name, r in t.metrics.items():
            scores.setdefault(name, []).append(r.score)
            if r.score is not None:
                tasks.setdefault(name, set()).add(t.task_id)
    rows, cards = [], []
    for name, s in result.summary.items():
        warn = ", ".join(f"{k} {v}" for k, v in s.warnings.items())
        n_tasks = s.n_tasks if s.n_tasks is not None else len(tasks.get(name, ()))
        behind = f" · {_tasks(n_tasks)}" if s.n else ""
        rows.append(h("tr", h("td", h("a", name, href=f"#metric-{slug(name)}")), h("td", s.dimension),
                      h("td", str(s.n), class_="num"), h("td", str(n_tasks), class_="num"),
                      h("td", str(s.n_null), class_="num"), h("td", str(s.n_errored), class_="num"),
                      h("td", fmt(s.mean), " ", h("span", interval(s.mean_ci), class_="ci"), class_="num"),
                      h("td", pct(s.pass_rate), " ", h("span", interval(s.pass_rate_ci, 2, percent=True), class_="ci"),
                        class_=f"num {_rate_state(s.pass_rate)}"),
                      h("td", fmt(s.threshold, 2), class_="num"), h("td", warn, class_="meta")))
        extra = h("div", "pass rate ", h("strong", pct(s.pass_rate)), " ", interval(s.pass_rate_ci, 2, percent=True),
                  f" · {s.n_passed}/{s.n} passed", behind, f" · {s.n_null} null" if s.n_null else None,
                  f" ({s.n_errored} errored)" if s.n_errored else None, class_="stat")
        cards.append(_dist_card(name, s.dimension, list(scores.get(name, ())), s.threshold, s.mean, s.mean_ci, extra,
                                id_=f"metric-{slug(name)}"))
    head = h("tr", [h("th", c, title=t) for c, t in (
        ("metric", None), ("dimension", None), ("n", "traces with a score"),
        ("tasks", "distinct tasks with a score: what the intervals rest on"), ("null", "traces without a score"),
        ("errored", "traces where the metric or its judge failed"), ("mean [CI]", None), ("pass rate [CI]", None),
        ("threshold", None), ("warnings", None))])
    table = h("div", h("table", h("thead", head), h("tbody", rows), class_="summary"), class_="wide")
    forest_rows = []
    for n, s in result.summary.items():
        if s.pass_rate is not None:
            forest_rows.append((f"{n} ({s.n_tasks if s.n_tasks is not None else len(tasks.get(n, ()))}t)", s.pass_rate, *(s.pass_rate_ci or (None, None))))
    forest = _charts.forest(forest_rows, label="pass rate per metric with intervals", width=620) if forest_rows else None
    forest_legend = _charts.legend([("circle", "point", "pass rate"), ("line", "whisker", "its interval")])
    return h("section", h("h2", "Metrics"), table,
             h("figure", forest, forest_legend, h("figcaption", _interval_note(result.statistics),
                                                  " (Nt) after a name: the number of tasks behind it."))
             if forest else None,
             _charts.legend(HIST_LEGEND) if cards else None,
             h("div", cards, class_="grid"), id="metrics")


def _interval_note(statistics: Mapping[str, Any]) -> str:
    level, method = num(statistics.get("interval_level")), statistics.get("interval_method")
    if level is None:
        return "Pass rate per metric; whiskers are the intervals when computed."
    return f"Pass rate per metric with {level:.0%} intervals" + (f" ({method})." if method else ".")


def _rate_state(rate: Any) -> str:
    r = num(rate)
    return "" if r is None else "pass" if r == 1 else "fail" if r < 0.5 else "mixed"


def run_name(run: Mapping[str, Any]) -> str | None:
    """What a run is called: its name, else its id, else when it started."""
    for key in ("name", "run_id", "started_at"):
        if run.get(key):
            return str(run[key])
    return None


def flips(baseline: RunResult, candidate: RunResult) -> dict[str, list[str]]:
    """Trace ids (paired by id) whose verdict went pass -> fail and fail -> pass."""
    before = {t.id: t.passed for t in baseline.traces}
    out: dict[str, list[str]] = {"pass_to_fail": [], "fail_to_pass": []}
    for t in candidate.traces:
        was = before.get(t.id)
        if was is True and t.passed is False:
            out["pass_to_fail"].append(t.id)
        elif was is False and t.passed is True:
            out["fail_to_pass"].append(t.id)
    return out


MAX_FLIPS = 200
"""Trace ids listed per direction in the comparison (the rest are counted)."""


def _flip_list(title: str, ids: Any, state: str, anchors: Mapping[str, str]) -> Markup:
    ids = [str(i) for i in ids] if isinstance(ids, (list, tuple)) else []
    items = [h("li", h("a", i, href=anchors[i]) if i in anchors else h("code", i)) for i in ids[:MAX_FLIPS]]
    more = h("li", f"… and {len(ids) - MAX_FLIPS} more", class_="meta") if len(ids) > MAX_FLIPS else None
    return h("div", h("h3", h("span", title, class_=f"badge {state}"), f" {len(ids)} trace{'s' if len(ids) != 1 else ''}"),
             h("ul", items, more, class_="flips") if ids else h("p", "none", class_="meta"), class_="card")


def comparison(comp: Mapping[str, Any] | None, result: RunResult | None = None,
               baseline: RunResult | None = None, *, href: Callable[[int], str] | None = None) -> Markup | None:
    """Per-metric deltas against a baseline with significance, from a comparison dict.

    Shape: ``{"metrics": {name: {"delta", "ci_low", "ci_high", "p_value", "p_adjusted", "significant",
    "regression"}}}``; optional per metric ``mean_a``/``mean_b``/``improvement``, and at the top
    ``baseline``/``candidate`` (or ``a``/``b``), ``alpha``, ``level``, ``correction``, ``n_pairs``,
    ``pass_to_fail``/``fail_to_pass`` (trace ids; computed from ``baseline`` and ``result`` when given);
    ``href``: where the candidate's trace ``i`` links to (default: its trace view in the report).
    Deltas are coloured by direction (higher scores are better); significant ones are bold.
    """
    if not isinstance(comp, Mapping) or not isinstance(comp.get("metrics"), Mapping) or not comp["metrics"]:
        return None
    items = [(name, d) for name, d in comp["metrics"].items() if isinstance(d, Mapping)]
    means = any("mean_a" in d or "mean_b" in d for _, d in items)
    name_a = (run_name(baseline.run) if baseline is not None else None) or comp.get("baseline", comp.get("a"))
    name_b = (run_name(result.run) if baseline is not None and result is not None else None) or comp.get(
        "candidate", comp.get("b"))
    rows, forest_rows, classes = [], [], []
    for name, d in items:
        state = "fail" if d.get("regression") else "pass" if d.get("significant") else ""
        delta = num(d.get("delta"))
        direction = "" if not delta else "up" if delta > 0 else "down"
        verdict = ("regression", "fail") if d.get("regression") else ("improvement", "pass") if (
            d.get("improvement") or (d.get("significant") and (delta or 0) > 0)) else None
        rows.append(h("tr", h("td", h("code", name)),
                      [h("td", fmt(d.get("mean_a")), class_="num"), h("td", fmt(d.get("mean_b")), class_="num")]
                      if means else None,
                      h("td", _signed(d.get("delta")),
                        class_=" ".join(c for c in ("num delta", direction, "sig" if d.get("significant") else "") if c)),
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
    labels = {"baseline": name_a, "candidate": name_b,
              **{k: comp.get(k) for k in ("alpha", "level", "correction", "n_pairs")}}
    meta = [f"{k.replace('_', ' ')}: {v}" for k, v in labels.items() if v is not None and k not in ("baseline", "candidate")]
    names = h("div", h("span", "baseline ", class_="meta"), h("strong", name_a or "—"), h("span", " → candidate ", class_="meta"),
              h("strong", name_b or "—"), class_="run-names")
    cols = ["metric", *(["baseline", "candidate"] if means else []), "delta", "CI", "p", "p adjusted", "significant", ""]
    moved = flips(baseline, result) if baseline is not None and result is not None else comp
    flip_cards = None
    if baseline is not None or "pass_to_fail" in comp or "fail_to_pass" in comp:
        link = href or (lambda i: f"#trace-{i + 1}")
        anchors = {t.id: link(i) for i, t in enumerate(result.traces)} if result is not None else {}
        flip_cards = h("div", _flip_list("pass → fail", moved.get("pass_to_fail"), "fail", anchors),
                       _flip_list("fail → pass", moved.get("fail_to_pass"), "pass", anchors), class_="grid flips")
    return h("section", h("h2", "Comparison"), names, h("div", " · ".join(meta), class_="meta"),
             h("table", h("thead", h("tr", [h("th", c) for c in cols])), h("tbody", rows), class_="summary"),
             h("figure", chart, _charts.legend([("circle", "point", "difference candidate − baseline"),
                                                ("line", "whisker", "its interval"),
                                                ("circle", "point fail", "significant regression"),
                                                ("circle", "point pass", "significant improvement"),
                                                ("line", "zero-line", "no change")]),
               h("figcaption", "Difference candidate − baseline per metric, with its interval.")),
             flip_cards, id="comparison")


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
