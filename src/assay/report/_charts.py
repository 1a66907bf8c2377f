"""Inline SVG charts, drawn in Python: histograms, interval (forest) plots and pass@k curves.

Coordinates are computed numbers; labels go through ``h`` (escaped). Colours come from CSS
classes, so the charts follow the page's light or dark theme.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._html import Markup, h, num


def _f(x: float) -> str:
    return f"{x:.1f}"


def _svg(width: int, height: int, label: str, *children: Any, class_: str = "chart") -> Markup:
    return h("svg", *children, xmlns="http://www.w3.org/2000/svg", width=width, height=height,
             viewBox=f"0 0 {width} {height}", role="img", aria_label=label, class_=class_)


def histogram(values: Sequence[Any], *, label: str, threshold: Any = None, mean: Any = None, ci: Any = None,
              bins: int = 10, width: int = 300, height: int = 120) -> Markup:
    """Score distribution over [0, 1] with the threshold, the mean and its interval."""
    vals = [v for v in (num(x) for x in values) if v is not None]
    counts = [0] * bins
    for v in vals:
        counts[min(bins - 1, max(0, int(min(max(v, 0.0), 1.0) * bins)))] += 1
    left, right, top, bottom = 28, 8, 10, 22
    pw, ph = width - left - right, height - top - bottom
    peak = max(counts) or 1
    x = lambda s: left + pw * min(max(s, 0.0), 1.0)
    thr = num(threshold)
    parts: list[Any] = [h("title", f"{label}: {len(vals)} scores")]
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and num(ci[0]) is not None and num(ci[1]) is not None:
        lo, hi = sorted((num(ci[0]), num(ci[1])))  # type: ignore[type-var]
        parts.append(h("rect", h("title", f"interval [{lo:.3f}, {hi:.3f}]"), x=_f(x(lo)), y=top,
                       width=_f(max(x(hi) - x(lo), 1.0)), height=ph, class_="ci-band"))
    bw = pw / bins
    for i, c in enumerate(counts):
        lo_edge, hi_edge = i / bins, (i + 1) / bins
        bh = ph * c / peak
        state = "bar" if thr is None else ("bar pass" if lo_edge >= thr else "bar fail" if hi_edge <= thr else "bar mixed")
        parts.append(h("rect", h("title", f"{lo_edge:.1f}–{hi_edge:.1f}: {c}"), x=_f(left + i * bw + 1),
                       y=_f(top + ph - bh), width=_f(bw - 2), height=_f(bh), class_=state))
    m = num(mean)
    if m is not None:
        parts.append(h("line", h("title", f"mean {m:.3f}"), x1=_f(x(m)), x2=_f(x(m)), y1=top - 4, y2=top + ph,
                       class_="mean-line"))
    if thr is not None:
        parts.append(h("line", h("title", f"threshold {thr:.2f}"), x1=_f(x(thr)), x2=_f(x(thr)), y1=top - 4,
                       y2=top + ph, class_="threshold-line"))
    parts += _axis_x(left, pw, top + ph, ["0", "0.5", "1"], [0.0, 0.5, 1.0])
    parts.append(h("text", str(peak), x=left - 4, y=top + 8, class_="tick", text_anchor="end"))
    parts.append(h("text", "0", x=left - 4, y=top + ph, class_="tick", text_anchor="end"))
    return _svg(width, height, f"{label}: histogram of {len(vals)} scores", parts)


def _axis_x(left: float, pw: float, y: float, labels: Sequence[str], at: Sequence[float]) -> list[Markup]:
    out = [h("line", x1=_f(left), x2=_f(left + pw), y1=_f(y), y2=_f(y), class_="axis")]
    for lab, pos in zip(labels, at):
        out.append(h("text", lab, x=_f(left + pw * pos), y=_f(y + 14), class_="tick", text_anchor="middle"))
    return out


def forest(rows: Sequence[tuple[str, Any, Any, Any]], *, label: str, width: int = 520, lo: float = 0.0,
           hi: float = 1.0, zero: float | None = None, row_classes: Sequence[str] | None = None) -> Markup:
    """One row per item: a point with its interval whisker. ``rows`` = (name, value, ci_low, ci_high)."""
    longest = max((len(str(r[0])) for r in rows), default=0)
    left, right, top, row_h = int(min(300, max(120, 16 + 6.6 * min(longest, 44)))), 16, 8, 22
    height = top + row_h * len(rows) + 24
    pw = width - left - right
    span = (hi - lo) or 1.0
    x = lambda v: left + pw * (min(max(v, lo), hi) - lo) / span
    parts: list[Any] = [h("title", label)]
    if zero is not None:
        parts.append(h("line", x1=_f(x(zero)), x2=_f(x(zero)), y1=top, y2=top + row_h * len(rows), class_="zero-line"))
    for i, (name, value, c_lo, c_hi) in enumerate(rows):
        cy = top + row_h * i + row_h / 2
        cls = row_classes[i] if row_classes else ""
        name_s = str(name)
        parts.append(h("text", name_s if len(name_s) <= 44 else name_s[:43] + "…", x=left - 8, y=_f(cy + 4),
                       class_="label", text_anchor="end"))
        v, a, b = num(value), num(c_lo), num(c_hi)
        if a is not None and b is not None:
            parts.append(h("line", x1=_f(x(a)), x2=_f(x(b)), y1=_f(cy), y2=_f(cy), class_=f"whisker {cls}".strip()))
        if v is not None:
            tip = f"{name_s}: {v:.3f}" + (f" [{a:.3f}, {b:.3f}]" if a is not None and b is not None else "")
            parts.append(h("circle", h("title", tip), cx=_f(x(v)), cy=_f(cy), r=4, class_=f"point {cls}".strip()))
    ticks = [lo, (lo + hi) / 2, hi]
    parts += _axis_x(left, pw, top + row_h * len(rows), [f"{t:g}" for t in ticks], [(t - lo) / span for t in ticks])
    return _svg(width, height, label, parts)


def curves(k: Sequence[Any], series: Sequence[tuple[str, str, Sequence[Any], Sequence[Any] | None, Sequence[Any] | None]],
           *, label: str, width: int = 520, height: int = 240, few: bool = False) -> Markup:
    """Lines over k with interval bands. ``series`` = (name, css class, values, ci_low, ci_high).

    ``few``: the intervals rest on few tasks and are wide, so bands are drawn as outlines that do
    not cover the lines.
    """
    ks = [num(v) for v in k]
    left, right, top, bottom = 36, 110, 10, 28
    pw, ph = width - left - right, height - top - bottom
    valid = [v for v in ks if v is not None]
    k_lo, k_hi = (min(valid), max(valid)) if valid else (1.0, 1.0)
    kspan = (k_hi - k_lo) or 1.0
    x = lambda v: left + pw * (v - k_lo) / kspan
    y = lambda v: top + ph * (1.0 - min(max(v, 0.0), 1.0))
    parts: list[Any] = [h("title", label)]
    for frac in (0.0, 0.5, 1.0):
        parts.append(h("line", x1=left, x2=left + pw, y1=_f(y(frac)), y2=_f(y(frac)), class_="grid"))
        parts.append(h("text", f"{frac:g}", x=left - 6, y=_f(y(frac) + 4), class_="tick", text_anchor="end"))
    for name, cls, values, c_lo, c_hi in series:
        if c_lo is not None and c_hi is not None:
            upper = [(x(kk), y(b)) for kk, b in zip(ks, (num(v) for v in c_hi)) if kk is not None and b is not None]
            lower = [(x(kk), y(a)) for kk, a in zip(ks, (num(v) for v in c_lo)) if kk is not None and a is not None]
            if len(upper) >= 1 and len(upper) == len(lower):
                pts = upper + lower[::-1]
                parts.append(h("polygon", points=" ".join(f"{_f(a)},{_f(b)}" for a, b in pts),
                               class_=f"band {cls}" + (" few" if few else "")))
        pts = [(kk, v) for kk, v in zip(ks, (num(v) for v in values)) if kk is not None and v is not None]
        if pts:
            parts.append(h("polyline", points=" ".join(f"{_f(x(a))},{_f(y(b))}" for a, b in pts),
                           class_=f"series {cls}"))
            for a, b in pts:
                parts.append(h("circle", h("title", f"{name}, k={a:g}: {b:.3f}"), cx=_f(x(a)), cy=_f(y(b)), r=3,
                               class_=f"point {cls}"))
    for i, (name, cls, *_rest) in enumerate(series):
        ly = top + 14 + 18 * i
        parts.append(h("line", x1=left + pw + 12, x2=left + pw + 30, y1=ly - 4, y2=ly - 4, class_=f"series {cls}"))
        parts.append(h("text", name, x=left + pw + 34, y=ly, class_="label"))
    tick_ks = sorted(set(valid))
    if len(tick_ks) > 8:
        step = max(1, len(tick_ks) // 8)
        tick_ks = tick_ks[::step] + ([tick_ks[-1]] if tick_ks[-1] not in tick_ks[::step] else [])
    parts += _axis_x(left, pw, top + ph, [f"{t:g}" for t in tick_ks], [(t - k_lo) / kspan for t in tick_ks])
    parts.append(h("text", "k", x=_f(left + pw / 2), y=height - 2, class_="tick", text_anchor="middle"))
    return _svg(width, height, label, parts)


def legend(items: Sequence[tuple[str, str, str]]) -> Markup:
    """A row of swatches explaining a chart: ``(shape, css classes, text)``; shape is rect, line or circle.

    The swatches carry the charts' own classes, so they follow the same colours and theme.
    """
    out = []
    for shape, cls, text in items:
        if shape == "rect":
            mark = h("rect", x=1, y=2, width=16, height=10, class_=cls)
        elif shape == "circle":
            mark = h("circle", cx=9, cy=7, r=4, class_=cls)
        else:
            mark = h("line", x1=1, x2=17, y1=7, y2=7, class_=cls)
        out.append(h("span", h("svg", mark, xmlns="http://www.w3.org/2000/svg", width=18, height=14,
                               viewBox="0 0 18 14", aria_hidden="true", class_="swatch"), text, class_="legend-item"))
    return h("div", out, class_="legend")


def trend(points: Sequence[tuple[str, Any, Any, Any, str]], *, label: str, width: int = 720,
          height: int = 200) -> Markup:
    """A value over runs (oldest left): each point with its interval; ``state`` ``fail`` / ``pass`` marks a
    significant fall / rise from the run before it."""
    left, right, top, bottom = 36, 12, 12, 26
    pw, ph = width - left - right, height - top - bottom
    n = len(points)
    x = lambda i: left + (pw * (i + 0.5) / n if n else 0)
    y = lambda v: top + ph * (1 - min(max(v, 0.0), 1.0))
    parts: list[Any] = [h("title", label)]
    for tick in (0.0, 0.5, 1.0):
        parts += [h("line", x1=left, x2=left + pw, y1=_f(y(tick)), y2=_f(y(tick)), class_="grid-line"),
                  h("text", f"{tick:g}", x=left - 4, y=_f(y(tick) + 4), class_="tick", text_anchor="end")]
    line = [(x(i), y(val)) for i, p in enumerate(points) if (val := num(p[1])) is not None]
    if len(line) > 1:
        parts.append(h("polyline", points=" ".join(f"{_f(a)},{_f(b)}" for a, b in line), class_="series"))
    for i, (name, v, lo, hi, state) in enumerate(points):
        v, lo, hi = num(v), num(lo), num(hi)
        if v is None:
            continue
        what = f"{name}: {v:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else "") + (
            " · significant fall" if state == "fail" else " · significant rise" if state == "pass" else "")
        if lo is not None and hi is not None:
            parts.append(h("line", x1=_f(x(i)), x2=_f(x(i)), y1=_f(y(lo)), y2=_f(y(hi)), class_="whisker"))
        parts.append(h("circle", h("title", what), cx=_f(x(i)), cy=_f(y(v)), r=6 if state else 3.5,
                       class_=f"point {state}".strip()))
    step = max(1, n // 6)
    parts += [h("text", str(points[i][0])[:12], x=_f(x(i)), y=height - 8, class_="tick", text_anchor="middle")
              for i in range(0, n, step)]
    return _svg(width, height, label, parts, class_="chart trend")
