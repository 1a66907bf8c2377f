"""``assay view`` in a real headless Chromium: click-through at desktop and phone sizes, live updates,
no request leaving 127.0.0.1, hostile trace content inert."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from view_data import EXAMPLES, store_with_runs

pytestmark = pytest.mark.browser

SIZES = {"desktop": (1440, 900), "phone": (390, 844)}


class Session:
    """A browser context that routes every request: 127.0.0.1 goes through, anything else is recorded and refused."""

    def __init__(self, browser, origin: str, size: tuple[int, int]) -> None:
        self.origin = origin
        self.context = browser.new_context(viewport={"width": size[0], "height": size[1]})
        self.requests: list[str] = []
        self.refused: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.set_default_timeout(20_000)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("dialog", lambda d: (self.errors.append(f"dialog {d.message}"), d.dismiss()))
        self.page.add_init_script(
            "window.__csp = []; document.addEventListener('securitypolicyviolation',"
            " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));")

    def _route(self, route) -> None:
        url = route.request.url
        self.requests.append(url)
        if urlsplit(url).hostname == "127.0.0.1":
            route.continue_()
        else:
            self.refused.append(url)
            route.abort()

    def goto(self, path: str):
        self.page.goto(self.origin + path)
        return self.page

    def close(self) -> None:
        self.context.close()


@pytest.fixture()
def session(chromium):
    opened: list[Session] = []

    def make(origin: str, size: str = "desktop") -> Session:
        opened.append(Session(chromium, origin, SIZES[size]))
        return opened[-1]

    yield make
    for s in opened:
        s.close()


def no_overflow(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_runs_to_failing_trace_and_back_then_compare(demo, serve, session, size):
    store, ids = demo
    v = serve(store)
    s = session(v.origin, size)
    page = s.goto("/")
    assert page.title() == "assay · runs"
    assert page.locator("table.runs tbody tr").count() == 3
    assert no_overflow(page)
    # runs -> the run "demo" (the newest)
    page.locator("a.run-link", has_text="demo").first.click()
    page.wait_for_url(f"**/runs/{ids['demo']}")
    assert page.locator("h1").first.inner_text() == "Run demo failed"  # the verdict beside the name
    assert page.locator("#failures li.failure").count() == 4
    assert no_overflow(page)
    # the run -> its failing trace support-refund-2: the reasons are shown
    page.locator("#failures a.failure-link", has_text="support-refund-2").click()
    page.wait_for_url(f"**/runs/{ids['demo']}/traces/2")
    assert "support-refund-2" in page.locator("h1").inner_text()
    row = page.locator("table.metric-results tr[data-m='tool_selection_accuracy']")
    assert row.locator(".badge").inner_text() == "fail"
    reason = row.locator(".reason")
    assert reason.is_visible() and reason.inner_text().strip() != ""
    box = reason.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + min(box["width"], 40) <= SIZES[size][0]  # on screen
    assert page.locator(".conversation .msg.user").count() >= 2
    assert no_overflow(page)
    # back to the run
    page.go_back()
    page.wait_for_url(f"**/runs/{ids['demo']}")
    assert page.locator("#failures li.failure").count() == 4
    # compare two runs: back to the list, pick A (older) and B (demo)
    page.locator("nav.crumbs a.home").click()
    page.wait_for_url(v.origin + "/")
    page.check(f"input[name=a][value='{ids['older']}']")
    page.check(f"input[name=b][value='{ids['demo']}']")
    page.get_by_role("button", name="Compare A → B").click()
    page.wait_for_url("**/compare?*")
    assert page.locator("#comparison table.summary tbody tr").count() >= 5
    first = page.locator("#pairs table.pairs tbody tr").first
    assert first.get_attribute("class") == "pass_to_fail" and "support-refund-2" in first.inner_text()
    assert no_overflow(page)
    assert s.errors == [] and page.evaluate("window.__csp") == []
    assert s.refused == []


def test_keyboard_moves_through_lists_and_search(demo, serve, session):
    store, ids = demo
    v = serve(store)
    s = session(v.origin)
    page = s.goto("/")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.name") == "q"
    page.keyboard.type("evil")
    page.keyboard.press("Enter")
    page.wait_for_url("**/?q=evil*")
    assert page.locator("table.runs tbody tr").count() == 1
    page.goto(v.origin + f"/runs/{ids['demo']}")
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.evaluate("document.activeElement.textContent") == "support-refund-1"
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/runs/{ids['demo']}/traces/1")
    page.keyboard.press("]")
    page.wait_for_url(f"**/runs/{ids['demo']}/traces/2")
    assert s.errors == []


def test_a_run_written_by_another_process_appears_on_reload(tmp_path, serve, session):
    store, _ = store_with_runs(tmp_path)
    v = serve(store)
    s = session(v.origin)
    page = s.goto("/")
    assert page.locator("a.run-link", has_text="fresh").count() == 0
    env = {"ASSAY_STORE": str(store.path), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    done = subprocess.run([sys.executable, "-m", "assay", "run", str(EXAMPLES), "--name", "fresh", "-m",
                           "tool_selection_accuracy"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "stored in" in done.stderr  # 1: two traces fail the metric
    page.reload()
    assert page.locator("a.run-link", has_text="fresh").count() == 1
    page.locator("a.run-link", has_text="fresh").click()
    assert page.locator("h1").first.inner_text().startswith("Run fresh ")


def test_no_request_leaves_127_0_0_1_and_hostile_content_runs_nothing(demo, serve, session):
    store, ids = demo
    v = serve(store)
    for size in SIZES:
        s = session(v.origin, size)
        for path in ("/", f"/runs/{ids['hostile']}", f"/runs/{ids['hostile']}/traces/0", "/?name=demo",
                     f"/compare?a={ids['older']}&b={ids['demo']}", f"/runs/{ids['demo']}/traces/2"):
            page = s.goto(path)
            assert page.evaluate("window.__pwned") is None, path
            assert page.evaluate("document.querySelectorAll('script:not([src])').length") == 0, path
        page = s.goto(f"/runs/{ids['hostile']}/traces/0")
        text = page.locator(".conversation").inner_text()
        assert "<script>window.__pwned=1</script>" in text and 'onerror="window.__pwned=1"' in text
        assert page.locator(".conversation img, .conversation script, .conversation style").count() == 0
        assert page.locator("body").is_visible()  # the trace's <style> did not hide the page
        assert s.refused == [], "a page asked for something beyond 127.0.0.1"
        assert all(urlsplit(u).hostname == "127.0.0.1" for u in s.requests) and len(s.requests) >= 6
        assert s.errors == []
