"""An event loop that outlives one ``stream``: a Dask worker scores all its shards of a run on it.

A new loop per shard would rebuild every loop-bound part of the judge for each shard: its HTTP
connections, its slots and its rpm/tpm buckets (which would start full again, so a worker could
exceed its share of the rate limit at every shard boundary).
"""

from __future__ import annotations

import asyncio
import threading


def start_loop() -> asyncio.AbstractEventLoop:
    """A new event loop running in a daemon thread of its own (give it work with run_coroutine_threadsafe)."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="assay-shard-loop", daemon=True).start()
    return loop


def stop_loop(loop: asyncio.AbstractEventLoop | None) -> None:
    """Cancel what is left on *loop* (a judge closes its connections then) and stop it."""
    if loop is None or loop.is_closed():
        return

    async def cancel_rest() -> None:
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in rest:
            task.cancel()
        await asyncio.gather(*rest, return_exceptions=True)
    try:
        asyncio.run_coroutine_threadsafe(cancel_rest(), loop).result(timeout=10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
