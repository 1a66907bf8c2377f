"""The viewer's page shell, URLs, filter forms and pagers.

Pages link only to the viewer itself; style and script are the package's own files served from
``/static/`` under a Content-Security-Policy that allows nothing else (``CSP``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import quote, urlencode

from .._version import __version__
from ..report._html import Markup, esc, h, join

CSP = ("default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'none'; "
       "font-src 'none'; media-src 'none'; object-src 'none'; frame-src 'none'; worker-src 'none'; "
       "manifest-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
"""Only the viewer's own style sheets and script; no inline script or style, no other origin."""

PAGE_SIZE = 50
"""Rows per page of every list."""

STATIC = {"report.css": ("assay.report", "text/css"), "view.css": ("assay.view", "text/css"),
          "view.js": ("assay.view", "text/javascript")}
"""Files under ``/static/``: the report's style sheet (the same drawing) and the viewer's own."""


BIDI_CONTROLS = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_SHOW_BIDI = {c: f"\u27e8U+{c:04X}\u27e9" for c in BIDI_CONTROLS}
"""Bidirectional controls (embeddings, overrides, isolates, marks) shown as ``⟨U+202E⟩``: evaluated data
cannot reorder what a page shows (``safe\u202etxt.exe`` would read as ``safeexe.txt``). Plain text, no
quotes or angle brackets, so it is safe wherever in the page the character was."""


@cache
def asset(name: str) -> bytes:
    package, _ = STATIC[name]
    return resources.files(package).joinpath("assets", name).read_bytes()


def url(path: str, params: Mapping[str, Any] | None = None, **more: Any) -> str:
    """``path`` with the non-empty query parameters (``params`` updated by ``more``)."""
    merged = {**(params or {}), **more}
    query = urlencode([(k, str(v)) for k, v in merged.items() if v not in (None, "", 0) or (k == "seq" and v == 0)])
    return path + ("?" + query if query else "")


def run_url(run_id: str) -> str:
    return "/runs/" + quote(run_id, safe="")


def trace_url(run_id: str, seq: int) -> str:
    return f"{run_url(run_id)}/traces/{seq}"


def page(title: str, body: Any, crumbs: Sequence[tuple[str, str | None]] = ()) -> str:
    """A whole page: skip link, breadcrumbs (label, href; the last one is this page), ``body``."""
    trail = [h("a", "assay runs", href="/", class_="home")]
    for label, href in crumbs:
        trail += [h("span", " › ", class_="sep", aria_hidden="true"),
                  h("a", label, href=href) if href else h("span", label, aria_current="page")]
    return ("<!DOCTYPE html>\n" + h(
        "html",
        h("head", h("meta", charset="utf-8"), h("meta", name="viewport", content="width=device-width, initial-scale=1"),
          h("meta", name="referrer", content="no-referrer"), h("meta", name="generator", content=f"assay {__version__}"),
          h("title", title), h("link", rel="stylesheet", href="/static/report.css"),
          h("link", rel="stylesheet", href="/static/view.css"), h("script", src="/static/view.js", defer=True)),
        h("body", h("a", "Skip to content", href="#content", class_="skip"),
          h("nav", trail, class_="crumbs", aria_label="breadcrumbs"),
          h("main", body, id="content", tabindex="-1"),
          h("footer", f"assay view {__version__} · read-only · keys: j / k move through a list, / searches",
            class_="meta")),
        lang="en") + "\n").translate(_SHOW_BIDI)


def select(name: str, label: str, options: Iterable[tuple[str, str]], current: str | None) -> Markup:
    return h("label", h("span", label, class_="lbl"),
             h("select", [h("option", text, value=value, selected=(value == (current or ""))) for value, text in options],
               name=name))


def text_input(name: str, label: str, current: str | None, placeholder: str = "") -> Markup:
    return h("label", h("span", label, class_="lbl"),
             h("input", type="search", name=name, value=current or "", placeholder=placeholder, data_search=True))


def filters(action: str, fields: Sequence[Markup], keep: Mapping[str, Any] | None = None) -> Markup:
    """A GET form (its URL is shareable) with the filter ``fields`` and hidden ``keep`` parameters."""
    hidden = [h("input", type="hidden", name=k, value=v) for k, v in (keep or {}).items() if v not in (None, "")]
    return h("form", hidden, fields, h("button", "Apply", type="submit"),
             h("a", "clear", href=url(action, keep), class_="clear"),
             method="get", action=action, class_="filters view-filters", role="search")


def pager(path: str, params: Mapping[str, Any], page_no: int, total: int, what: str,
          size: int | None = None) -> Markup:
    """``what 51–100 of 230`` with previous / next links (the page is the ``page`` parameter, from 1)."""
    size = size or PAGE_SIZE
    last = max((total + size - 1) // size, 1)
    first, end = (page_no - 1) * size + 1, min(page_no * size, total)
    shown = f"{what} {first:,}–{end:,} of {total:,}" if total else f"no {what}"
    prev = h("a", "← previous", href=url(path, params, page=page_no - 1 if page_no > 2 else None), rel="prev") \
        if page_no > 1 else None
    nxt = h("a", "next →", href=url(path, params, page=page_no + 1), rel="next") if page_no < last else None
    return h("div", h("span", shown, class_="meta", aria_live="polite"), prev, nxt,
             h("span", f"page {page_no} of {last}", class_="meta") if last > 1 else None, class_="pager")


def badge(state: Any) -> Markup:
    return h("span", state, class_=f"badge {state}")


def table(head: Sequence[str], rows: Sequence[Markup], class_: str = "list") -> Markup:
    return h("div", h("table", h("thead", h("tr", [h("th", c, scope="col") for c in head])), h("tbody", rows),
                      class_=class_), class_="wide")


__all__ = ["CSP", "PAGE_SIZE", "Markup", "badge", "esc", "filters", "join", "page", "pager", "run_url", "select",
           "table", "text_input", "trace_url", "url"]
