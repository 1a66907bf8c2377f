"""The pass@k section: pass@k and pass^k over k, with interval bands.

Two shapes are read from ``RunResult.statistics``:

* ``"trials"`` (what the engine writes when tasks have repeated trials): ``{"family", "about",
  "n_tasks", "trials_per_task", "trace_passed": [row, ...], "by_metric": {name: [row, ...]}}``
  where a row is ``{"k", "pass_at_k", "pass_at_k_ci_low", "pass_at_k_ci_high", "pass_pow_k",
  "pass_pow_k_ci_low", "pass_pow_k_ci_high", "n_tasks", "n_undefined", ...}``;
* ``"pass_k"``: one curve, or a list, in columns: ``{"label", "family", "mode", "ci_level",
  "n_tasks", "k": [...], "pass_at_k": [...], "pass_pow_k": [...], "pass_at_k_ci_low": [...],
  "pass_at_k_ci_high": [...], "pass_pow_k_ci_low": [...], "pass_pow_k_ci_high": [...]}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model import RunResult
from . import _charts
from ._html import Markup, fmt, h, interval

_KEYS = ("pass_at_k", "pass_at_k_ci_low", "pass_at_k_ci_high", "pass_pow_k", "pass_pow_k_ci_low",
         "pass_pow_k_ci_high", "n_tasks")


def _columns(rows: Sequence[Any]) -> dict[str, list[Any]]:
    """Row-per-k records as the column form."""
    good = [r for r in rows if isinstance(r, Mapping) and "k" in r]
    out: dict[str, list[Any]] = {"k": [r["k"] for r in good]}
    for key in _KEYS:
        out[key] = [r.get(key) for r in good]
    return out


def curves_of(statistics: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(title, note, curve in column form) for every curve in the statistics."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    trials = statistics.get("trials")
    if isinstance(trials, Mapping):
        family = str(trials.get("family") or "")
        if isinstance(trials.get("trace_passed"), list) and trials["trace_passed"]:
            out.append(("traces passing every threshold", family, _columns(trials["trace_passed"])))
        for name, rows in (trials.get("by_metric") or {}).items():
            if isinstance(rows, list) and rows:
                out.append((f"{name} passed", family, _columns(rows)))
    items = statistics.get("pass_k")
    for c in items if isinstance(items, list) else [items]:
        if isinstance(c, Mapping) and isinstance(c.get("k"), list):
            title = str(c.get("label") or "pass@k")
            note = " · ".join(str(c[k]) for k in ("family", "mode") if c.get(k))
            out.append((title, note, dict(c)))
    return out


def _series(c: Mapping[str, Any]) -> list[tuple[str, str, Any, Any, Any]]:
    return [(name, cls, c[key], c.get(f"{key}_ci_low"), c.get(f"{key}_ci_high"))
            for key, name, cls in (("pass_at_k", "pass@k", "s1"), ("pass_pow_k", "pass^k", "s2"))
            if isinstance(c.get(key), list)]


def _at(values: Any, i: int) -> Any:
    return values[i] if isinstance(values, list) and i < len(values) else None


def _table(c: Mapping[str, Any]) -> Markup:
    tasks = isinstance(c.get("n_tasks"), list)
    rows = []
    for i, k in enumerate(c["k"]):
        cells = [h("td", str(k), class_="num")]
        for key in ("pass_at_k", "pass_pow_k"):
            ci = (_at(c.get(f"{key}_ci_low"), i), _at(c.get(f"{key}_ci_high"), i))
            cells.append(h("td", fmt(_at(c.get(key), i)), " ", h("span", interval(ci, 3), class_="ci"), class_="num"))
        if tasks:
            cells.append(h("td", str(_at(c["n_tasks"], i) if _at(c["n_tasks"], i) is not None else "—"), class_="num"))
        rows.append(h("tr", cells))
    head = [h("th", "k"), h("th", "pass@k"), h("th", "pass^k"), h("th", "tasks") if tasks else None]
    return h("table", h("thead", h("tr", head)), h("tbody", rows), class_="small")


FEW_TASKS = 5
"""Below this many tasks the bands are outlines: the intervals are honest but wide, and would hide the lines."""


def _n_tasks(c: Mapping[str, Any], default: Any) -> int | None:
    counts = [v for v in c.get("n_tasks") if isinstance(v, int)] if isinstance(c.get("n_tasks"), list) else []
    if counts:
        return max(counts)
    n = c.get("n_tasks", default)
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _legend(cls_few: str) -> Markup:
    return _charts.legend([("line", "series s1", "pass@k"), ("line", "series s2", "pass^k"),
                           ("rect", f"band s1{cls_few}", "pass@k interval"), ("rect", f"band s2{cls_few}", "pass^k interval")])


def pass_k(result: RunResult) -> Markup | None:
    """The section, or None when the run has no pass@k statistics."""
    found = curves_of(result.statistics)
    if not found:
        return None
    trials = result.statistics.get("trials") if isinstance(result.statistics.get("trials"), Mapping) else {}
    meta = []
    if trials.get("n_tasks") is not None:
        meta.append(f"{trials['n_tasks']} tasks")
    per = trials.get("trials_per_task")
    if isinstance(per, Mapping):
        meta.append(f"{per.get('min')}–{per.get('max')} trials per task")
    if trials.get("about"):
        meta.append(str(trials["about"]))
    (title, note, first), rest = found[0], found[1:]

    def tasks_note(c: Mapping[str, Any]) -> tuple[bool, str]:
        n = _n_tasks(c, trials.get("n_tasks"))
        few = n is not None and n < FEW_TASKS
        return few, ("" if n is None else f"{n} task{'s' if n != 1 else ''}" + (
            ": few, so the intervals are wide (drawn as outlines)" if few else ""))

    few, tnote = tasks_note(first)
    main = h("div", h("h3", title), h("div", " · ".join(x for x in (note, tnote) if x), class_="meta"),
             h("div", h("div", _charts.curves(first["k"], _series(first), label=f"pass@k and pass^k: {title}", few=few),
                        _legend(" few" if few else "")), _table(first), class_="row"), class_="card")
    small = []
    for t, n, c in rest:
        few_c, tn = tasks_note(c)
        small.append(h("div", h("h3", t), h("div", " · ".join(x for x in (n, tn) if x), class_="meta"),
                       _charts.curves(c["k"], _series(c), label=f"pass@k and pass^k: {t}", width=360, height=180,
                                      few=few_c),
                       h("details", h("summary", "values"), _table(c)), class_="card"))
    return h("section", h("h2", "pass@k and pass^k"),
             h("p", "pass@k: the chance that at least one of k attempts succeeds; pass^k: that all k do. "
                    "Bands are the intervals.", h("br"), " · ".join(meta), class_="meta"),
             main, h("div", small, class_="grid") if small else None, id="pass-k")
