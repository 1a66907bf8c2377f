"""Ctrl-C and SIGTERM during a run or a collection: the first winds down, the second exits."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def stop_on_signals(cancel: threading.Event) -> Iterator[None]:
    """SIGINT / SIGTERM set ``cancel`` (the engine winds down); a second one exits at once (130).

    Outside the main thread (where Python cannot install handlers) nothing is installed.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if cancel.is_set():
            os._exit(130)  # the second Ctrl-C: the user wants out now; finished calls are cached
        cancel.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
