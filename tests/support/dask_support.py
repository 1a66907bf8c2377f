"""Helpers the Dask tests' workers import (they live in other processes, so not in a test module).

The metric is not registered: it must not join the catalog the README is checked against."""

from __future__ import annotations

import time
from dataclasses import dataclass

from assay.metrics import metric
from assay.metrics._base import MetricContext


@metric("slow_echo", dimension="custom", register=False, summary="metadata.score, after a short sleep (a slow metric for the tests)")
@dataclass(frozen=True, kw_only=True)
class SlowEcho:
    """Sleeps, then scores ``metadata.score``: a shard takes long enough to kill its worker mid-way."""

    threshold: float = 0.5
    seconds: float = 0.02

    def score(self, ctx: MetricContext):
        time.sleep(self.seconds)
        return ctx.result(float(ctx.trace.metadata.get("score", 0.0)), "echoed")
