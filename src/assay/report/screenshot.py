"""Render a report page to PNG in headless Chromium: ``python -m assay.report.screenshot report.html out.png``.

Uses Playwright when it is installed (full-page shots), else the ``chromium --screenshot``
command line. Either way only a local Chromium is used (``$CHROMIUM``, else chromium or
google-chrome on PATH); no browser is downloaded, and the page's CSP keeps it offline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .._files import write_atomic
from ..errors import ConfigError

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                  "--disable-dev-shm-usage")
"""Flags for a headless Chromium that runs as root in a container and talks to no server."""


def find_chromium() -> str | None:
    """A local Chromium executable, or None."""
    env = os.environ.get("CHROMIUM")
    if env and Path(env).is_file():
        return env
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(html_path: str | os.PathLike[str], png_path: str | os.PathLike[str], *, width: int = 1280,
               height: int = 900, full_page: bool = True, open_traces: int = 1) -> Path:
    """Save a PNG of the page; with Playwright the first ``open_traces`` trace views are expanded."""
    exe = find_chromium()
    if exe is None:
        raise ConfigError("no Chromium found: install it (apt-get install chromium) or set $CHROMIUM")
    url = Path(html_path).resolve().as_uri()
    out = Path(png_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        import playwright.sync_api  # noqa: F401 - optional: full-page shots
    except ImportError:
        return _cli_shot(exe, url, out, width, height if not full_page else max(height, 4000))
    # In a thread of its own: Playwright's sync API refuses to start where an event loop runs
    # (a notebook, or a test session that already drives a browser).
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(_playwright_shot, exe, url, out, width, height, full_page, open_traces).result()


def _playwright_shot(exe: str, url: str, out: Path, width: int, height: int, full_page: bool,
                     open_traces: int) -> Path:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=list(CHROMIUM_FLAGS[1:]))
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(url)
            page.evaluate("n => document.querySelectorAll('details.trace').forEach((d, i) => { d.open = i < n; })",
                          open_traces)
            write_atomic(out, page.screenshot(full_page=full_page))  # never half a PNG
        finally:
            browser.close()
    return out


def _cli_shot(exe: str, url: str, out: Path, width: int, height: int) -> Path:
    with tempfile.TemporaryDirectory(prefix="assay-chromium-") as profile:
        shot = Path(profile) / "shot.png"  # chromium writes here; the PNG is then moved in atomically
        cmd = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
               f"--screenshot={shot}", url]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if not shot.exists():
            raise ConfigError(f"chromium made no screenshot (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
        write_atomic(out, shot.read_bytes())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m assay.report.screenshot", description=__doc__.splitlines()[0])
    ap.add_argument("html", help="report HTML file (from `assay report` or `assay run --html`)")
    ap.add_argument("png", help="PNG to write")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=900, help="viewport height (the shot is full-page)")
    args = ap.parse_args(argv)
    try:
        path = screenshot(args.html, args.png, width=args.width, height=args.height)
    except ConfigError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
