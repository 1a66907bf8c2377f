"""What every backend and wrapper shares: one raising ``call`` under one non-raising ``judge``.

Inside a composed stack the layers talk through ``call(request)``, which raises ``ProviderError``
for transport failures so that Retrying and Limited can see them; a Verdict with ``error`` coming
out of ``call`` always means "the reply did not fit the schema" (re-askable). Whichever layer is
outermost turns exceptions into errored Verdicts in ``judge()``, re-raising only fatal ones.
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import json
import time
from dataclasses import dataclass
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from assay._secrets import clip, redact
from assay.errors import ProviderError

from ._parse import ParseError, parse_verdict
from ._prices import Price
from ._protocol import Judge, JudgeRequest, TokenLogprob, Verdict, errored
from ._stats import JudgeStats

FATAL_STATUSES = frozenset({401, 403, 404})
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
S = TypeVar("S")


def is_fatal(exc: ProviderError) -> bool:
    """Authentication refused or model unknown: every further call would fail the same way."""
    return exc.status in FATAL_STATUSES


def parse_retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` (delta or HTTP date), if the server sent one."""
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # unreadable: fall back to our own backoff
    return max(0.0, when.timestamp() - time.time())


def provider_error(exc: BaseException, backend: str, model: str) -> ProviderError:
    """Classify an SDK or client exception as a ProviderError (duck-typed: no SDK import needed).

    openai and anthropic errors carry ``status_code`` and ``response``; timeouts and connection
    failures are retryable; anything else is a per-call failure that retrying would not fix.
    """
    if isinstance(exc, ProviderError):
        return exc
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        response = getattr(exc, "response", None)
        body = getattr(response, "text", "") if response is not None else ""
        return status_error(status, body, getattr(response, "headers", None), backend=backend, model=model,
                            fallback=str(exc))
    name = type(exc).__name__
    if isinstance(exc, (TimeoutError, ConnectionError, json.JSONDecodeError)) or "Timeout" in name \
            or "Connection" in name or "ResponseValidation" in name:
        # Timeouts, dropped connections and garbled bodies (a proxy's HTML error page) are transient.
        return ProviderError(f"{name}: {exc}", backend=backend, model=model, retryable=True)
    return ProviderError(f"{name}: {exc}", backend=backend, model=model, retryable=False)


def status_error(status: int, text: str, headers: Any, *, backend: str, model: str,
                 fallback: str = "") -> ProviderError:
    """A ProviderError for an HTTP error reply (an SDK's or our own client's), with the provider's
    own ``error.message`` where the body has one; retryable for 429/5xx, ``Retry-After`` honoured."""
    try:
        data = json.loads(text) if text else None
    except ValueError:
        data = None
    error = data.get("error", data) if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return ProviderError(str(message) if message else text.strip()[:500] or fallback or f"HTTP {status}",
                         backend=backend, model=model, status=status, body=text[:2000],
                         retryable=status in RETRYABLE_STATUSES or status >= 500,
                         retry_after=parse_retry_after(headers))


class LoopLocal(Generic[S]):
    """Per-event-loop state: asyncio primitives and SDK clients must not cross loops.

    A judge outlives one ``asyncio.run`` (tests, notebooks, the CLI running twice), so state bound
    to a loop is rebuilt lazily when the running loop changes. With *closer*, a sentinel task
    closes the state when the loop cancels its leftover tasks (``asyncio.run`` does on exit), so
    an SDK client never tries to close its connections on a loop that is already gone.
    """

    def __init__(self, factory: Callable[[], S], closer: Callable[[S], Awaitable[Any]] | None = None,
                 *, eager: bool = False) -> None:
        self._factory, self._closer = factory, closer
        self._loop: asyncio.AbstractEventLoop | None = None
        self._state: S | None = None
        self._sentinel: asyncio.Task[None] | None = None
        # Built now, for the first loop: an SDK client costs ~0.3 s to build the first time, which
        # belongs to constructing the judge, not to the first verdict of a run.
        self._spare: S | None = factory() if eager else None

    def get(self) -> S:
        loop = asyncio.get_running_loop()
        if loop is not self._loop or self._state is None:
            spare, self._spare = self._spare, None
            self._loop, self._state = loop, spare if spare is not None else self._factory()
            if self._closer is not None:
                self._sentinel = loop.create_task(self._close_at_exit(self._state))
        return self._state

    async def _close_at_exit(self, state: S) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            if self._state is state:
                self._state = None
            try:
                await self._closer(state)  # type: ignore[misc]
            except Exception:
                pass  # closing is best effort: the loop is ending anyway


@dataclass(frozen=True, slots=True)
class Completion:
    """One backend reply before parsing."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None   # when the client reports it; else computed from the price
    model: str | None = None        # the model the server says answered
    note: str | None = None         # appended to a parse error ("truncated at max_tokens")
    structured: bool = False        # the text is a structured-output object (schema format, tool call)
    truncated: bool = False         # the reply hit max_tokens (a re-ask starts fresh, tighter)
    tokens: tuple[TokenLogprob, ...] | None = None  # log-probabilities, when asked for and returned


async def guarded(layer: Any, request: JudgeRequest) -> Verdict:
    """``layer.call`` with per-call failures turned into Verdicts; counts the outcome."""
    stats: JudgeStats | None = getattr(layer, "stats", None)
    try:
        verdict = await layer.call(request)
    except ProviderError as exc:
        if is_fatal(exc):
            raise
        attempts = getattr(exc, "attempts", 1)
        suffix = f" (after {attempts} attempts)" if attempts > 1 else ""
        verdict = errored(layer.model, f"{exc}{suffix}", raw=exc.body, attempts=attempts)
    if stats is not None:
        stats.requests += 1
        stats.errors += verdict.error is not None and not verdict.skipped
        stats.skipped += verdict.skipped
        stats.queued_s += verdict.queued_s
        if verdict.error is not None:
            stats.count_reason(verdict.error, skipped=verdict.skipped)
    return verdict


async def call_inner(inner: Judge, request: JudgeRequest) -> Verdict:
    """The raising entry point of *inner*, or its ``judge`` when it is a foreign Judge."""
    call = getattr(inner, "call", None)
    return await (call(request) if call is not None else inner.judge(request))


class Wrapper:
    """A layer around another judge; shares the inner layer's stats unless given its own.

    ``self.next(request)`` is the inner layer's raising entry point (``call``, or ``judge`` for a
    foreign Judge), looked up once when ``inner`` is set rather than per call: a layer costs one
    coroutine per call, not two."""

    def __init__(self, inner: Judge, *, stats: JudgeStats | None = None) -> None:
        self.inner = inner
        self.model: str = inner.model
        self.stats: JudgeStats = stats or getattr(inner, "stats", None) or JudgeStats()

    @property
    def inner(self) -> Judge:
        return self._inner

    @inner.setter
    def inner(self, judge: Judge) -> None:
        self._inner = judge
        call = getattr(judge, "call", None)
        self.next: Callable[[JudgeRequest], Awaitable[Verdict]] = call if call is not None else judge.judge

    async def call(self, request: JudgeRequest) -> Verdict:
        return await self.next(request)

    async def judge(self, request: JudgeRequest) -> Verdict:
        return await guarded(self, request)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"


class Backend:
    """Base of the concrete backends: timeout, fatal-error memory, parsing and cost.

    ``name`` is the model as the provider knows it; ``model`` is ``"backend:name"``, which is what
    verdicts, cache keys and reports show. Subclasses implement ``_complete`` and raise
    ProviderError (or SDK errors, classified here) for transport failures.
    """

    backend = "backend"
    single_slot = False
    """One request at a time (a local llama.cpp/Ollama server, an in-process model): calls queue
    for the slot here, the timeout counts from when a call has it (``Verdict.queued_s`` is the
    wait), and a call abandoned at the timeout keeps the server busy, so it is not retried."""
    elastic = False
    """Serves many calls at once (a hosted API, vLLM): the default stack lets concurrency grow past
    ``concurrency`` while latency holds (:mod:`assay.judge._limits`). Off for single-slot servers,
    in-process models and backends assay cannot see into (functions, clients, plugins)."""

    def __init__(self, name: str, *, backend: str | None = None, timeout: float | None = None,
                 price: Price | None = None) -> None:
        self.backend = backend or self.backend
        self.name, self.model = name, f"{self.backend}:{name}"
        self.timeout, self.price = timeout, price
        self._fatal: ProviderError | None = None
        self._identity: dict[str, Any] | None = None
        self._slot: LoopLocal[asyncio.Lock] = LoopLocal(asyncio.Lock)

    @property
    def identity(self) -> dict[str, Any]:
        """Where verdicts come from, beyond the model name (the judge cache keys on it): backends
        that can point at different servers add their endpoint."""
        return self._identity or {"backend": self.backend}

    async def _complete(self, request: JudgeRequest) -> Completion:
        raise NotImplementedError

    async def call(self, request: JudgeRequest) -> Verdict:
        if self._fatal is not None:
            raise self._fatal  # do not pay a round trip for an answer we already know
        if not self.single_slot:
            return await self._timed(request, self._complete(request), None, 0.0)
        # One slot: calls take it in turn here, and the timeout counts from when a call has it, so a
        # queued call is never timed out for the calls ahead of it. The slot is held until the work
        # ends, even past the timeout (llama.cpp cannot be stopped mid-call).
        slot = self._slot.get()
        waiting = time.perf_counter()
        await slot.acquire()
        queued = time.perf_counter() - waiting
        try:
            work = asyncio.ensure_future(self._complete(request))
        except BaseException:
            slot.release()
            raise
        work.add_done_callback(lambda _: slot.release())
        return await self._timed(request, asyncio.shield(work), work, queued)

    async def _timed(self, request: JudgeRequest, reply: Awaitable[Completion], work: asyncio.Future[Any] | None,
                     queued: float) -> Verdict:
        started = time.perf_counter()
        try:
            if work is None:  # the call runs in the caller's task, under a deadline: no task of its own
                async with asyncio.timeout(self.timeout):
                    completion = await reply
            else:
                completion = await asyncio.wait_for(reply, self.timeout)
        except TimeoutError as exc:
            if work is not None:
                work.cancel()
            if self.timeout is None:
                raise provider_error(exc, self.backend, self.name) from exc
            if self.single_slot:
                waited = f" (after {queued:.1f} s waiting for the slot)" if queued >= 0.05 else ""
                raise ProviderError(f"no reply within {self.timeout:g} s of getting the server's one slot{waited}; "
                                    "not retried, since a local server keeps working on an abandoned call "
                                    "(raise --timeout)", backend=self.backend, model=self.name,
                                    retryable=False) from None
            raise ProviderError(f"no reply within {self.timeout:g} s", backend=self.backend,
                                model=self.name, retryable=True) from None
        except BaseException as exc:
            if work is not None:
                work.cancel()  # the caller gave up (an interrupt): the work stops as soon as it can
            if not isinstance(exc, Exception):
                raise
            error = provider_error(exc, self.backend, self.name)
            if is_fatal(error):
                self._fatal = error
            raise error from exc
        verdict = self.verdict(completion, request, time.perf_counter() - started)
        return dataclasses.replace(verdict, queued_s=queued) if queued else verdict

    def verdict(self, completion: Completion, request: JudgeRequest, latency: float) -> Verdict:
        cost = completion.cost_usd
        if cost is None and self.price is not None:
            cost = self.price.cost(completion.input_tokens, completion.output_tokens)
        usage = dict(input_tokens=completion.input_tokens, output_tokens=completion.output_tokens,
                     cost_usd=cost, latency_s=latency)
        model = redact(completion.model or self.model)  # every field of a reply may quote the request's
        text = redact(completion.text)                    # credentials back
        try:
            parsed = parse_verdict(text, request.schema, structured=completion.structured)
        except ParseError as exc:
            note = f" ({completion.note})" if completion.note else ""
            return errored(model, f"{exc}{note}", raw=text, **usage)
        # Token log-probabilities only where they spell the kept raw text (not redacted, not clipped)
        tokens = completion.tokens
        if tokens is not None and ("".join(t.token for t in tokens) != text or clip(text) != text):
            tokens = None
        return Verdict(parsed=parsed, raw=clip(text), model=model, tokens=tokens, **usage)  # type: ignore[arg-type]

    async def judge(self, request: JudgeRequest) -> Verdict:
        return await guarded(self, request)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"
