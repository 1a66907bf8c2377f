"""Report fixtures: the rendered example report, a hostile report, and a headless Chromium.

Browser tests need Playwright and a local Chromium (``apt-get install chromium``; Playwright's
own browser downloads are never used). Without them the tests marked ``browser`` skip, saying why.
"""

from __future__ import annotations

from pathlib import Path

import pytest


class Page:
    """A page that records console errors, page errors, CSP violations and every request."""

    def __init__(self, browser) -> None:
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.page.set_default_timeout(15_000)
        self.console_errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.console_errors.append(m.text))
        self.page.on("pageerror", lambda e: self.console_errors.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.add_init_script(
            "window.__csp = []; document.addEventListener('securitypolicyviolation',"
            " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));")

    def open(self, path: Path):
        self.page.goto(path.resolve().as_uri())
        return self.page


@pytest.fixture()
def open_page(chromium):
    pages: list[Page] = []

    def make() -> Page:
        pages.append(Page(chromium))
        return pages[-1]

    yield make
    for p in pages:
        p.context.close()

