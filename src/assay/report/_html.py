"""Strict HTML building: every value is escaped unless it is already ``Markup``.

Report code never formats evaluated data into HTML strings by hand; it calls ``h()``, whose
text children and attribute values go through ``html.escape`` (quotes included). ``Markup``
marks HTML this module produced, so it is not escaped twice.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from typing import Any

_VOID = frozenset({"area", "br", "col", "hr", "img", "input", "link", "meta", "source", "wbr"})


class Markup(str):
    """A string of trusted HTML (built by ``h`` or ``esc``)."""

    __slots__ = ()


def esc(value: Any) -> Markup:
    """``value`` as HTML text: escaped unless it is Markup; None becomes empty."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("")
    return Markup(html.escape(str(value), quote=True))


def join(parts: Iterable[Any], sep: str = "") -> Markup:
    return Markup(esc(sep).join(_flatten(parts)))


def _flatten(children: Iterable[Any]) -> Iterable[Markup]:
    for c in children:
        if c is None or c is False:
            continue
        if isinstance(c, (list, tuple)) or (hasattr(c, "__iter__") and not isinstance(c, (str, bytes, dict))):
            yield from _flatten(c)
        else:
            yield esc(c)


def h(tag: str, *children: Any, **attrs: Any) -> Markup:
    """``<tag attrs>children</tag>``; ``class_=`` for class, ``data_x=`` for data-x; None/False omit."""
    parts = [tag]
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        name = name.rstrip("_").replace("_", "-")
        parts.append(name if value is True else f'{name}="{esc(value)}"')
    opening = "<" + " ".join(parts) + ">"
    if tag in _VOID:
        return Markup(opening)
    return Markup(opening + "".join(_flatten(children)) + f"</{tag}>")


def num(x: Any) -> float | None:
    """A finite float, or None for anything else (results files are untrusted input)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def fmt(x: Any, digits: int = 3) -> str:
    v = num(x)
    return "—" if v is None else f"{v:.{digits}f}"


def pct(x: Any, digits: int = 0) -> str:
    v = num(x)
    return "—" if v is None else f"{100 * v:.{digits}f}%"


def interval(ci: Any, digits: int = 2, percent: bool = False) -> str:
    if not isinstance(ci, (list, tuple)) or len(ci) != 2:
        return ""
    lo, hi = num(ci[0]), num(ci[1])
    if lo is None or hi is None:
        return ""
    if percent:
        return f"[{pct(lo, max(digits - 2, 0))}, {pct(hi, max(digits - 2, 0))}]"
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def money(x: Any) -> str:
    v = num(x)
    if v is None:
        return "—"
    return f"${v:.4f}" if v < 1 else f"${v:,.2f}"


def slug(text: str) -> str:
    """A safe id fragment (ids also go through esc; this keeps them readable in URLs)."""
    out = "".join(c if c.isalnum() or c in "-_" else "-" for c in str(text))
    return out[:80] or "x"
