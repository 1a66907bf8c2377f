"""Progress of ``assay run`` that tells the truth: judge calls done of those planned, not traces.

Judge calls of all traces interleave (a window of traces is in flight), so finished traces say
little about how far a judge run is; the planned calls (per metric and trace) do. They are counted
as the run reads its input (judging starts at once): until the input is read to its end the total
is estimated from the share of the input read so far (``~1000``), or, when that share is not known
(a pipe, or a file read whole into the reader's buffer), shown as what is planned so far
(``256+``, no ETA). On a terminal: one rich bar; elsewhere (CI logs): a plain line every ``interval`` s.
The numbers are read from the judge's shared counters by a small thread, so the display never
touches the engine.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from collections.abc import Callable
from typing import Any, TextIO


def _clock(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return "-:--:--"
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _not_answering(stats: Any) -> bool:
    """Whether the judge's breaker has skipped calls (``assay.judge._breaker``): the rest will not run."""
    from ..judge._stats import NOT_ANSWERING  # loaded already: there is a judge

    return bool(getattr(stats, "skipped_reasons", {}).get(NOT_ANSWERING))


class RunProgress:
    """``with RunProgress(...) as p: ... p.trace_done()``; ``stats`` is the judge's JudgeStats or None."""

    def __init__(self, *, stats: Any = None, model: str | None = None, planned_calls: Any = None,
                 read: tuple[Callable[[], int], int | None] | None = None, tty: bool = False,
                 interval: float = 10.0, stream: TextIO | None = None) -> None:
        self.stats, self.model = stats, model
        self.planned_calls = planned_calls
        """The planned judge calls: a number, or a plan counted as the input is read (``total``, ``complete``)."""
        self.estimated = ""
        """How the total last shown is known: "" exactly, "~" estimated, "+" at least (the plan is not complete yet)."""
        self.read = read
        """Without a judge: (bytes of input read so far, total bytes), for the bar's position."""
        self.tty, self.interval = tty, interval
        self.stream = stream if stream is not None else sys.stderr
        self.traces = 0
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None
        self._task: Any = None

    def trace_done(self) -> None:
        self.traces += 1

    # -- what is shown ------------------------------------------------------------------------
    def counts(self) -> tuple[str, int, int | None]:
        """(unit, done, total): judge calls when a judge is counting, else input bytes read."""
        if self.stats is not None:
            return "judge calls", self.stats.requests, self._planned_total()
        if self.read is not None and self.read[1]:
            return "bytes", self.read[0](), self.read[1]
        return "traces", self.traces, None

    def _planned_total(self) -> int | None:
        plan = self.planned_calls
        self.estimated = ""
        if plan is None or isinstance(plan, int):
            return plan
        total = plan.total
        if plan.complete:
            return total
        if self.read is not None and self.read[1]:  # still reading: scale what is planned by the share read
            share = self.read[0]() / self.read[1]
            if 0 < share < 1:
                self.estimated = "~"
                return max(round(total / share), total)
        self.estimated = "+"
        return total or None

    def describe(self) -> str:
        unit, done, total = self.counts()
        elapsed = max(time.monotonic() - self._started, 1e-9)
        rate = done / elapsed
        if unit == "bytes":
            parts = [f"traces {self.traces:,}", f"{done / total:.0%} of the input" if total else "",
                     f"{self.traces / elapsed:,.0f} traces/s"]
        else:
            mark = self.estimated
            parts = [f"{unit} {done}/{'~' if mark == '~' else ''}{total}{'+' if mark == '+' else ''}" if total
                     else f"{unit} {done}", f"{rate:.1f}/s"]
        s = self.stats
        if total and s is not None and _not_answering(s):
            parts.append("judge not answering: its remaining calls are skipped")  # no ETA for calls that will not run
        elif total and self.estimated != "+":  # (no ETA against a total that is only a lower bound)
            parts.append(f"ETA {_clock((total - done) / rate if rate > 0 else None) if done < total else _clock(0)}")
        if s is not None:
            parts.append(f"errors {s.errors}")
            parts.append(f"tokens {s.input_tokens + s.output_tokens:,}")
            if s.unpriced_calls and not s.cost_usd:
                parts.append(f"cost unknown for {self.model}")
            elif s.calls or s.cost_usd:
                parts.append(f"${s.cost_usd:.4f}" + (f" (+{s.unpriced_calls} unpriced)" if s.unpriced_calls else ""))
        return "  ".join(parts)

    # -- lifecycle ----------------------------------------------------------------------------
    def __enter__(self) -> RunProgress:
        self._started = time.monotonic()
        if self.tty:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn

            self._bar = Progress(BarColumn(), TextColumn("{task.description}"), transient=True,
                                 console=Console(file=self.stream))
            self._bar.start()
            unit, done, total = self.counts()
            self._task = self._bar.add_task(self.describe(), total=total, completed=done)
        self._thread = threading.Thread(target=self._loop, name="assay-progress", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        period = 0.1 if self.tty else self.interval
        while not self._stop.wait(period):
            self.show()

    def show(self) -> None:
        """One update: the bar on a terminal, else one plain line."""
        if self._bar is not None:
            _, done, total = self.counts()
            self._bar.update(self._task, description=self.describe(), completed=done, total=total)
        else:
            self.stream.write(f"progress: {self.describe()}\n")
            self.stream.flush()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.stop()


def progress_display(progress: bool | None, every: float) -> Callable[..., RunProgress] | None:
    """What ``--progress/--no-progress`` and ``--progress-every`` ask of a run: a bar on a terminal, a line
    every ``every`` seconds elsewhere; None with --no-progress."""
    if progress is False:
        return None

    def make(**watch: Any) -> RunProgress:
        return RunProgress(tty=sys.stderr.isatty(), interval=every, **watch)

    return make
