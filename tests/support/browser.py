"""A headless Chromium for the browser tests (the HTML report's and ``assay view``'s).

Playwright drives the system Chromium (``apt-get install chromium``, or ``$CHROMIUM``); Playwright's
own browser downloads are never used. Without either, the tests that use ``chromium`` skip, saying why.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


def chromium_path() -> str | None:
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
    exe = chromium_path()
    if exe is None:
        pytest.skip("browser tests need a local Chromium: apt-get install chromium (or set $CHROMIUM)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
