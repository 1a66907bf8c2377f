"""Viewer fixtures: a run store with the example runs (and a hostile one), a live viewer, a headless Chromium.

Browser tests use Playwright with the system Chromium (``apt-get install chromium``; Playwright's
own browser downloads are never used); without them the tests marked ``browser`` skip, saying why.
"""

from __future__ import annotations

import threading

import pytest

from view_data import store_with_runs

from assay.store import RunStore
from assay.view import ViewServer

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


