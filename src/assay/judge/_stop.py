"""Stopping a run's judge calls: once the run's stop event is set, no new backend call starts.

The engine runs each trace's task in a context that carries the run's stop event; the layer that
sits right on the transport (``Metered``) checks it before every call, retries and re-asks
included, so a call queued behind the concurrency limit never starts after an interrupt while the
calls already in flight finish (and are cached) within the engine's grace period.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading

_STOP: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("assay_stop", default=None)


def stop_context(event: threading.Event) -> contextvars.Context:
    """A copy of the current context in which ``check_stop`` watches ``event``."""
    ctx = contextvars.copy_context()
    ctx.run(_STOP.set, event)
    return ctx


def check_stop() -> None:
    """Raise CancelledError when this task's run was told to stop (the call is never sent)."""
    event = _STOP.get()
    if event is not None and event.is_set():
        raise asyncio.CancelledError("the run was interrupted: no new judge call")
