"""``assay serve``: the receiver, the journal and the scorer, as one live run in the run store.

Spans go to the journal (``_journal``) before the exporter gets its ``200``; the scorer thread
takes the traces that are complete - their root span has ended, or no span came for ``quiet_s``
(said in each result's ``source``: ``otlp TRACE_ID: root span ended``) - rebuilds each from its journalled spans (read once, on arrival, by
``importers._otlp.otlp_spans``) with ``importers._spans.assemble``, as ``assay run`` reads OTLP
files, scores them through the engine (``Evaluation.stream``) and
writes the results to the run store as one run, ``running`` while the server is up. Judge metrics
are scored on a sample of the traces (``sample``: a share, decided by the trace id, so a restart
decides the same); deterministic metrics on all of them.

A restart with the same journal goes on with the same run: traces the scorer had taken but not
written are found by looking for them in the run, so each trace is written once.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine import Evaluation
from ..engine._run import _shutdown
from ..engine._spec import RunSpec
from ..errors import ConfigError, DataError
from ..importers._spans import assemble
from ..importers.openinference import OpenInferenceConvention
from ..importers.otel import OtelConvention
from ..model import InputIssue, Trace, TraceResult
from ..store import RunStore
from ..store._recording import InputBudget, metric_specs, run_config
from ..view import is_loopback
from ._alerts import PassRateAlert
from ._journal import OPEN, SCORED, SCORING, Journal
from ._receiver import Limits, Receiver, load_span

_OTEL, _OPENINFERENCE = OtelConvention(), OpenInferenceConvention()


@dataclass
class Settings:
    host: str = "127.0.0.1"
    port: int = 4318
    token: str | None = None
    sample: float = 1.0
    """Share of traces the judge metrics score (deterministic metrics score every trace)."""
    quiet_s: float = 30.0
    """A trace whose root span has not arrived is scored this long after its last span."""
    batch: int = 256
    """Traces scored per pass of the scorer."""
    tick_s: float = 0.5
    limits: Limits | None = None
    alert_baseline: str | None = None
    """A stored run (id, prefix, ``latest~N``): alert when the live pass rate falls below its pass rate."""
    alert_alpha: float = 0.05
    alert_webhook: str | None = None


def sampled(trace_id: str, rate: float) -> bool:
    """Whether ``trace_id`` is in the judged sample: the same answer in every process."""
    if rate >= 1:
        return True
    if rate <= 0:
        return False
    h = int.from_bytes(hashlib.blake2b(trace_id.encode(), digest_size=8).digest(), "big")
    return h / 2**64 < rate


def rebuild(trace_id: str, bodies: list[str]) -> Trace:
    """One trace from its journalled spans, assembled as the OTLP importers assemble a file's."""
    spans = [load_span(body, i) for i, body in enumerate(bodies)]
    conv = _OPENINFERENCE if any("openinference.span.kind" in s.attrs for s in spans) else _OTEL
    return assemble(trace_id, spans, conv)


class Server:
    """``assay serve`` as a library: ``start()``, then ``serve_forever()`` or ``stop()``."""

    def __init__(self, spec: RunSpec, store: str | Path, journal: str | Path, settings: Settings | None = None,
                 *, log: Any = None) -> None:
        self.settings = s = settings or Settings()
        if not 0 <= s.sample <= 1:
            raise ConfigError(f"--sample must be between 0 and 1, got {s.sample!r}")
        if s.token is None and not is_loopback(s.host):
            s.token = secrets.token_urlsafe(24)
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.full = Evaluation.from_spec(spec, attach_traces=True)
        judged = {n for n, m in self.full.instances.items() if m.spec.needs_judge}
        self.plain: Evaluation | None = self.full
        if judged and s.sample < 1:
            plain = {n: m for n, m in self.full.instances.items() if n not in judged}
            self.plain = Evaluation(plain, weights=spec.weights, thresholds=spec.thresholds,
                                    attach_traces=True) if plain else None
        self.loop: asyncio.AbstractEventLoop | None = None
        if self.full.plan.is_async:  # one loop for the server's life: the judge stack's clients live on it
            self.loop = asyncio.new_event_loop()
            self._loop_thread = threading.Thread(target=self._run_loop, name="assay-serve-judge", daemon=True)
            self._loop_thread.start()
            self.full.loop = self.loop
        self.store = RunStore(store)
        self.journal = Journal(journal)
        self.keep_input = InputBudget()
        self.recorder: Any = None
        """Written by the scorer thread only (an SQLite connection stays in its thread)."""
        try:  # the port first: a busy one leaves no run behind
            self.receiver = Receiver(self.journal, s.host, s.port, token=s.token, limits=s.limits,
                                     pending=self._pending, on_spans=self._on_spans, describe=self.status,
                                     log=self.log)
        except BaseException:
            self.close()
            raise
        self.alert: PassRateAlert | None = None
        try:
            baseline = self.store.info(s.alert_baseline) if s.alert_baseline is not None else None  # before a run
            self.run_id = self._run(spec)
            if baseline is not None:
                self.alert = self._alert(s, baseline)
        except BaseException:
            self.receiver.server_close()
            self.close()
            raise
        self._pending_spans = self.journal.counts()["pending_spans"]
        self._count_lock = threading.Lock()
        self.wake, self.stopping = threading.Event(), threading.Event()
        self.scored = 0
        self.issues = 0
        self._threads: list[threading.Thread] = []
        self._final: dict[str, Any] | None = None

    # ------------------------------------------------------------ the run and recovery

    def _run(self, spec: RunSpec) -> str:
        """The live run's id: this journal's run when the store has it (recovered), else a new one."""
        run_id = self.journal.get("run_id")
        if run_id is not None:
            running = [r for r in self.store.runs() if r.id == run_id and r.status == "running"]
            if running:  # its process is alive: two scorers on one journal would score traces twice
                raise ConfigError(f"the journal {str(self.journal.path)!r} is in use by a running assay serve "
                                  f"(run {run_id}); stop it, or pass another --journal")
            try:
                self.store.resume(run_id).close()
            except KeyError:
                self.log(f"assay serve: run {run_id} of this journal is not in {self.store.path}: starting a new run "
                         "(with the traces not scored yet)")
            else:
                self._recover(run_id)
                self.log(f"assay serve: resuming run {run_id}")
                return run_id
        config = run_config(self.full, "otlp", False, spec.label)
        config["serve"] = {"journal": str(self.journal.path), "sample": self.settings.sample,
                           "quiet_s": self.settings.quiet_s}
        inputs = [{"path": f"otlp://{self.settings.host}:{self.settings.port}/v1/traces", "sha256": None, "bytes": None}]
        recorder = self.store.start(inputs=inputs, metrics=metric_specs(self.full), config=config,
                                    judge=None if self.full.judge is None else {"model": self.full.judge.model})
        recorder.close()
        self.journal.put("run_id", recorder.run_id)
        return recorder.run_id

    def _alert(self, s: Settings, info: Any) -> PassRateAlert:
        """The alert against the baseline run, with the live run's verdicts so far replayed into it."""
        if info.id == self.run_id or info.pass_rate is None:
            raise ConfigError(f"--alert-baseline {s.alert_baseline!r}: run {info.id} "
                              + ("is this live run" if info.id == self.run_id else "has no pass rate (no verdicts)")
                              + "; name a finished run to compare with")
        alert = PassRateAlert(self.journal, self.run_id, info.id, info.pass_rate, alpha=s.alert_alpha,
                              webhook=s.alert_webhook, log=self.log)
        verdicts: list[bool | None] = []
        self.store.load(self.run_id, each=lambda r: verdicts.append(r.passed))
        alert.add(verdicts)  # fires now if it should have and had not (a stop in between)
        return alert

    def _recover(self, run_id: str) -> None:
        """Traces taken by the scorer before a stop: scored if the run holds them, else open again."""
        taken = set(self.journal.in_state(SCORING))
        if not taken:
            return
        written: set[str] = set()
        self.store.load(run_id, each=lambda r: written.add(r.id) if r.id in taken else None)
        self.journal.mark(sorted(taken & written), SCORED)
        self.journal.mark(sorted(taken - written), OPEN)

    # ------------------------------------------------------------ the receiver's side

    def _pending(self) -> int:
        return self._pending_spans

    def _on_spans(self, added: int, roots: int) -> None:
        with self._count_lock:
            self._pending_spans += added
        if roots:
            self.wake.set()

    # ------------------------------------------------------------ scoring

    def score_ready(self) -> int:
        """Score the traces ready now (at most ``batch``); returns how many were taken."""
        s = self.settings
        if self.recorder is None:
            self.open_run()
        ready = self.journal.ready(s.quiet_s, s.batch)
        if not ready:
            return 0
        ids = [t for t, _ in ready]
        self.journal.mark(ids, SCORING)
        judged: list[tuple[Trace, str]] = []
        plain: list[tuple[Trace, str]] = []
        issues: list[InputIssue] = []
        n_spans = 0
        spans = self.journal.spans(ids)
        for trace_id, by_root in ready:
            bodies = spans[trace_id]
            n_spans += len(bodies)
            how = f"otlp {trace_id}: " + ("root span ended" if by_root else f"no root span, {s.quiet_s:g}s quiet")
            try:
                trace = rebuild(trace_id, bodies)
            except DataError as exc:
                issues.append(InputIssue(f"otlp trace {trace_id}", 0, exc.field, f"{exc.detail} (trace not scored)"))
                self.log(f"assay serve: trace {trace_id} not scored: {exc.field or ''}: {exc.detail}")
                continue
            (judged if self.plain is None or sampled(trace_id, s.sample) else plain).append((trace, how))
        verdicts: list[bool | None] = []
        for evaluation, group in ((self.plain, plain), (self.full, judged)):  # the quick ones first
            if not group or evaluation is None:
                continue
            hows = [how for _, how in group]
            results = (r for r in evaluation.stream([t for t, _ in group]) if isinstance(r, TraceResult))
            for result, how in zip(results, hows, strict=True):
                trace = result.trace
                kept = result.replace(source=how, trace=None)
                self.recorder.add(kept, trace if trace is not None and self.keep_input(kept) else None)
                verdicts.append(kept.passed)
                self.scored += 1
        for issue in issues:
            self.recorder.add(issue)
            self.issues += 1
        self.recorder.flush()  # the results are in the store ...
        self.journal.mark(ids, SCORED)  # ... before the journal says so (a stop in between: _recover)
        if self.alert is not None:
            self.alert.add(verdicts)
        with self._count_lock:
            self._pending_spans = max(0, self._pending_spans - n_spans)
        return len(ids)

    def open_run(self) -> None:
        """Take the live run for writing, in the thread that scores (``start`` does it in its own)."""
        self.recorder = self.store.resume(self.run_id)

    def close_run(self) -> None:
        if self.recorder is not None:
            self.recorder.abort("interrupted", "assay serve stopped: start it again with the same journal to resume")
            self.recorder = None

    def _reset(self) -> None:
        """After a failed pass: drop what the recorder buffered and recover as after a crash (the traces
        taken are looked up in the run), so a trace is neither lost nor written twice."""
        if self.recorder is not None:
            self.recorder.close()
            self.recorder = None
        self._recover(self.run_id)

    def _score_loop(self) -> None:
        self.open_run()
        try:
            self._scoring()
            while self.score_ready():  # stopping: what is ready now is scored
                pass
        finally:
            self.close_run()

    def _scoring(self) -> None:
        while not self.stopping.is_set():
            try:
                taken = self.score_ready()
            except Exception as exc:  # noqa: BLE001 - the server stays up; the traces stay in the journal
                self.log(f"assay serve: scoring failed (will retry): {type(exc).__name__}: {exc}")
                taken = 0
                self.stopping.wait(self.settings.tick_s * 4)
                try:
                    self._reset()
                except Exception as again:  # noqa: BLE001 - the store may still be unavailable: next pass
                    self.log(f"assay serve: recovering failed: {type(again).__name__}: {again}")
            if not taken:
                self.wake.wait(self.settings.tick_s)
                self.wake.clear()

    # ------------------------------------------------------------ life

    @property
    def url(self) -> str:
        host, port = self.receiver.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/v1/traces"

    def start(self, *, score: bool = True) -> None:
        """Receive in a thread, and score in another (``score=False``: the caller scores, by
        ``open_run()``, ``score_ready()`` and ``close_run()`` in one thread)."""
        threads = [(self._score_loop, "assay-serve-scorer")] if score else []
        for target, name in (*threads, (self.receiver.serve_forever, "assay-serve-http")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        """Stop receiving, score what is ready, and leave the run ``interrupted`` (a restart resumes it)."""
        self.receiver.shutdown()
        self.receiver.server_close()
        self.stopping.set()
        self.wake.set()
        for t in self._threads:
            t.join()
        self._final = self.status()
        self.close()

    def close(self) -> None:
        """Close the journal and the judge's event loop (``stop`` does; after ``start(score=False)``, the caller)."""
        self.journal.close()
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._loop_thread.join()

    def _run_loop(self) -> None:
        assert self.loop is not None
        self.loop.run_forever()
        _shutdown(self.loop)  # the judge clients close on their own loop, as after asyncio.run

    def status(self) -> dict[str, Any]:
        """The receiver's counters, the journal's traces by state, and what this process scored."""
        if self._final is not None:
            return self._final
        return {**self.receiver.counters.as_dict(), **self.journal.counts(), "scored": self.scored,
                "issues": self.issues, "run_id": self.run_id,
                **({"alert": self.alert.status()} if self.alert is not None else {})}
