"""Viewer fixtures: a run store with the example runs (and a hostile one), a live viewer, a headless Chromium.

Browser tests use Playwright with the system Chromium (``apt-get install chromium``; Playwright's
own browser downloads are never used); without them the tests marked ``browser`` skip, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

import assay
from assay.store import RunStore
from assay.view import ViewServer

EXAMPLES = Path(__file__).parents[2] / "examples" / "traces.jsonl"
SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'
FAR_IMG = '<img src="http://203.0.113.9/pixel.png">'
BIDI = "safe\u202etxt.exe"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


def hostile_trace() -> dict:
    text = f"{SCRIPT} {IMG} {FAR_IMG} {BIDI} <style>body{{display:none}}</style>"
    return {"id": f"evil-{SCRIPT}", "task_id": "evil",
            "turns": [{"input": text, "output": text,
                       "tool_calls": [{"name": f"lookup{IMG}", "arguments": {"q": SCRIPT}, "result": FAR_IMG}]}],
            "expected": {"tool_calls": [{"name": "other_tool", "arguments": {}}]}}


def store_with_runs(tmp_path: Path) -> tuple[RunStore, dict[str, str]]:
    """Two runs of the examples called "demo" (the older one with a changed trace) and a hostile run."""
    store = RunStore(tmp_path / "runs.sqlite3")
    lines = EXAMPLES.read_text(encoding="utf-8").splitlines()
    older = [json.loads(x) for x in lines]
    for t in older:  # in the baseline support-refund-2 passed: the calls it made were the expected ones, and fast
        if t["id"] == "support-refund-2":
            t["expected"]["tool_calls"] = [{"name": c["name"], "arguments": c["arguments"]}
                                           for turn in t["turns"] for c in turn.get("tool_calls", [])]
            for turn in t["turns"]:
                turn["latency_ms"] = 100
    base = tmp_path / "older.jsonl"
    base.write_text("\n".join(json.dumps(t) for t in older) + "\n", encoding="utf-8")
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text(json.dumps(hostile_trace()) + "\n", encoding="utf-8")
    ids = {}
    ids["older"] = assay.evaluate(str(base), store=str(store.path), name="demo", tags={"env": "ci"}).run.run_id
    ids["hostile"] = assay.evaluate(str(hostile), ["tool_selection_accuracy"], store=str(store.path),
                                    name=f"evil{SCRIPT}", tags={"x": IMG}).run.run_id
    ids["demo"] = assay.evaluate(str(EXAMPLES), store=str(store.path), name="demo", tags={"env": "nightly"}).run.run_id
    return store, ids


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return store_with_runs(tmp_path_factory.mktemp("view"))


class Viewer:
    """A ViewServer serving in a thread."""

    def __init__(self, store: RunStore, **kwargs) -> None:
        self.server = ViewServer(store, "127.0.0.1", 0, **kwargs)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture()
def serve():
    started: list[Viewer] = []

    def start(store: RunStore, **kwargs) -> Viewer:
        started.append(Viewer(store, **kwargs))
        return started[-1]

    yield start
    for v in started:
        v.close()


def _chromium() -> str | None:
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@pytest.fixture(scope="module")
def chromium():
    """A headless Chromium driven by Playwright, one per test module (see tests/report/conftest.py)."""
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
