"""Report fixtures: the rendered example report, a hostile report, and a headless Chromium.

Browser tests need Playwright and a local Chromium (``apt-get install chromium``; Playwright's
own browser downloads are never used). Without them the tests marked ``browser`` skip, saying why.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


def _chromium() -> str | None:
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@pytest.fixture(scope="module")
def chromium():
    """A headless Chromium driven by Playwright, for one test module at a time.

    Playwright's sync API keeps an event loop running in this thread while it is open, so a
    session-wide browser would make every later ``asyncio.run`` in the worker fail.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser tests need Playwright: pip install playwright (no browser download needed)")
    exe = _chromium()
    if exe is None:
        pytest.skip("browser tests need a local Chromium: apt-get install chromium (or set $CHROMIUM)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


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

