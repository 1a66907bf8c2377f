"""Running an evaluation on a Dask cluster: shards scored by workers, parts merged by the driver.

``executor="dask"`` starts a LocalCluster (one single-threaded worker process per core);
``"dask:tcp://scheduler:8786"`` joins an existing cluster; a ``distributed.Client`` is used as
it is. Each worker runs the ordinary engine on its shard (``Evaluation.accumulate``) and returns
a RunPartial (plus the shard's results when the caller streams them); the driver consumes shards
in input order, so ``on_result`` sees results in input order and the merged part equals a
single pass (``_partial``). A shard whose worker dies is rescheduled by Dask; its result is
consumed once, so no trace is lost or counted twice.

Judges: each worker builds its own judge from the model string and options. The global limits
are split: at most ``concurrency`` shards score at once and each gets ``concurrency // shards``
calls in flight (AIMD on 429 still runs in each), ``rpm`` / ``tpm`` divided the same way, and
the budget divided between the worker processes, so the caps hold for the whole run without a
round trip to the scheduler per call. The judge cache is the driver's SQLite file path: WAL
makes it safe for every process on one machine (a LocalCluster shares it with the driver; on a
multi-machine cluster each machine keeps its own file at that path - SQLite must not be shared
over a network filesystem).
"""

from __future__ import annotations

import os
import pickle
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..model import TraceResult
from ._partial import RunPartial, merge_judge_stats
from ._shards import Shard, plan_shards

INSTALL = "pip install 'assay[dask]'"


@dataclass(frozen=True, slots=True)
class DaskExecutor:
    """Where and how a run is spread: a scheduler address (None: a new LocalCluster) or a Client.

    ``shard_bytes``: target size of a JSON Lines byte-range shard; ``shard_items``: records per
    shard of an in-memory input (default for both: at least four shards per worker, at most
    SHARD_BYTES / SHARD_ITEMS); ``n_workers``: processes of the LocalCluster (default: one per core).
    """

    target: Any = None
    shard_bytes: int | None = None
    shard_items: int | None = None
    n_workers: int | None = None

    def __post_init__(self) -> None:
        if (self.shard_bytes is not None and self.shard_bytes < 1) or (self.shard_items is not None
                                                                       and self.shard_items < 1):
            raise ConfigError(f"shard sizes must be positive, got shard_bytes={self.shard_bytes!r}, "
                              f"shard_items={self.shard_items!r}")


def parse_executor(executor: Any) -> DaskExecutor | None:
    """None for the in-process engine; else the DaskExecutor for 'dask', 'dask:ADDRESS' or a Client."""
    if executor is None or executor == "local":
        return None
    if isinstance(executor, DaskExecutor):
        return executor
    if isinstance(executor, str):
        kind, sep, address = executor.partition(":")
        if kind != "dask":
            raise ConfigError(f"unknown executor {executor!r}: expected 'local', 'dask' or 'dask:ADDRESS' "
                              "(e.g. dask:tcp://scheduler:8786)")
        if sep and not address:
            raise ConfigError(f"executor {executor!r}: give the scheduler's address after 'dask:' "
                              "(e.g. dask:tcp://scheduler:8786), or just 'dask' for a local cluster")
        return DaskExecutor(address or None)
    if hasattr(executor, "submit") and hasattr(executor, "scheduler_info"):
        return DaskExecutor(executor)  # a distributed.Client
    raise ConfigError(f"executor {executor!r}: expected 'local', 'dask', 'dask:ADDRESS' or a distributed.Client")


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ConfigError(f"the dask executor needs dask.distributed: {INSTALL}") from None
    return distributed


def _client(executor: DaskExecutor) -> tuple[Any, Any]:
    """(client, what to close afterwards or None)."""
    distributed = _distributed()
    target = executor.target
    if target is not None and not isinstance(target, str):
        return target, None
    if target:
        try:
            client = distributed.Client(target, timeout="30s")
        except (OSError, TimeoutError) as exc:
            raise ConfigError(f"cannot reach the Dask scheduler at {target}: {exc}") from None
        return client, client
    n = executor.n_workers or os.cpu_count() or 1
    cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                       dashboard_address=None, host="127.0.0.1")
    client = distributed.Client(cluster)

    class _Both:
        def close(self) -> None:
            client.close()
            cluster.close()
    return client, _Both()


@dataclass(slots=True)
class WorkerSpec:
    """Everything a worker needs to rebuild the evaluation (sent with each shard; small)."""

    token: str
    instances: dict[str, Any]
    default_set: bool
    skipped: dict[str, str]
    repeats: int
    dims: Any
    window: int
    attach_traces: bool
    keep_traces: bool
    stream: bool
    intervals: bool
    passk_tasks: str
    strict: bool
    judge_model: str | None = None
    judge_options: dict[str, Any] = field(default_factory=dict)
    judge_object: bytes | None = None
    """A pickled judge object, when it was given as one (no limits are split then)."""


@dataclass(slots=True)
class ShardOutput:
    index: int
    part: RunPartial
    items: list[Any] | None
    worker: str = ""


def split_limits(options: dict[str, Any], slots: int, processes: int) -> dict[str, Any]:
    """A worker's share of the judge limits: *slots* shards score at once, on *processes* processes."""
    out = dict(options)
    concurrency = int(options.get("concurrency", 16))
    out["concurrency"] = max(1, concurrency // slots)
    if options.get("max_concurrency") is not None:
        out["max_concurrency"] = max(out["concurrency"], int(options["max_concurrency"]) // slots)
    for key in ("rpm", "tpm"):
        if options.get(key) is not None:
            out[key] = options[key] / slots
    if options.get("budget_usd") is not None:
        out["budget_usd"] = options["budget_usd"] / processes
    if options.get("budget_tokens") is not None:
        out["budget_tokens"] = int(options["budget_tokens"]) // processes
    return out


def run_distributed(evaluation: Any, source: Any, *, executor: Any, input_format: str | None = None,
                    strict: bool = False, keep_traces: bool = True, intervals: bool = True,
                    on_result: Any = None, tap: Any = None, passk_tasks: str = "common") -> Any:
    """``Evaluation.run`` on Dask: the same RunResult, scored by the cluster's workers."""
    started = time.time()
    spread = parse_executor(executor)
    if spread is None:
        raise ConfigError("run_distributed needs a Dask executor")
    judged = any(m.spec.needs_judge for m in evaluation.instances.values())
    if judged and (evaluation.plan.repeats > 1 or type(evaluation.judge).__name__ == "Jury"):
        raise ConfigError("--repeats with judge metrics and judge juries do not run on the dask executor yet (their "
                          "test-retest and agreement figures do not merge across workers); use --executor local")
    if isinstance(source, str) and source == "-" or isinstance(source, (list, tuple)) and "-" in source:
        plan_shards(["-"])  # the error, before a cluster is started
    client, owned = _client(spread)
    try:
        nthreads = client.nthreads()
        threads = max(1, sum(nthreads.values()))
        processes = max(1, len(nthreads))
        spec, slots = _spec(evaluation, keep_traces=keep_traces, stream=on_result is not None,
                            intervals=intervals, passk_tasks=passk_tasks, strict=strict,
                            threads=threads, processes=processes)
        shards = plan_shards(source, input_format, shard_bytes=spread.shard_bytes, shard_items=spread.shard_items,
                             tap=tap, spread=slots)
        part = _drive(client, spec, shards, slots, evaluation, on_result)
        address = getattr(client.scheduler, "address", None) if spread.target is not None else None
    finally:
        if owned is not None:
            owned.close()
    result = evaluation.finish(part, source, started)
    result.run["executor"] = {"kind": "dask", "scheduler": address or "LocalCluster", "workers": processes,
                              "threads": threads, "shards": len(shards)}
    if part.interrupted:
        evaluation.interrupted = True
    return result


def _spec(evaluation: Any, *, keep_traces: bool, stream: bool, intervals: bool, passk_tasks: str, strict: bool,
          threads: int, processes: int) -> tuple[WorkerSpec, int]:
    judge_model, judge_options, judge_object = None, {}, None
    slots = threads
    if evaluation.judge is not None:
        given = getattr(evaluation, "judge_spec", None)
        if given is not None and isinstance(given[0], str):
            judge_model, options = given[0], dict(given[1])
            slots = min(threads, int(options.get("concurrency", 16)))
            judge_options = split_limits(_resolved_cache(options), slots, processes)
        else:
            try:
                judge_object = pickle.dumps(evaluation.judge)
            except Exception as exc:  # noqa: BLE001 - any pickling failure means the same thing
                raise ConfigError(f"the judge {evaluation.judge!r} cannot be sent to Dask workers ({exc}); give it as "
                                  "a model string with its options (judge='openai:gpt-4o-mini', concurrency=...), "
                                  "which each worker builds for itself") from None
    spec = WorkerSpec(uuid.uuid4().hex, dict(evaluation.instances), evaluation.default_set, dict(evaluation.skipped),
                      evaluation.plan.repeats, evaluation.dims, evaluation.window, evaluation.attach_traces,
                      keep_traces, stream, intervals, passk_tasks, strict, judge_model, judge_options, judge_object)
    return spec, slots


def _resolved_cache(options: dict[str, Any]) -> dict[str, Any]:
    """The cache as a path the workers open (the driver's default resolved here, not per worker)."""
    out = dict(options)
    cache = out.get("cache", True)
    if cache is True or cache is None:
        from ..judge._cache import default_cache_path
        out["cache"] = str(default_cache_path())
    elif cache is not False and not hasattr(cache, "get"):
        out["cache"] = os.path.abspath(os.path.expanduser(str(cache)))
    elif hasattr(cache, "path"):
        out["cache"] = str(cache.path)
    return out


def _drive(client: Any, spec: WorkerSpec, shards: list[Shard], slots: int, evaluation: Any,
           on_result: Any) -> RunPartial:
    """Submit shards (at most *slots* scoring at once), consume their outputs in input order."""
    distributed = _distributed()
    merged: RunPartial | None = None
    done: dict[int, ShardOutput] = {}
    running: dict[Any, int] = {}
    next_submit = next_consume = 0
    ahead = 4 * slots  # finished shards waiting for an earlier one: bounds the driver's memory
    cancel = evaluation.cancel
    try:
        while next_consume < len(shards):
            if cancel is not None and cancel.is_set():
                break  # no new shard starts; those running are cancelled below
            while next_submit < len(shards) and len(running) < slots and next_submit - next_consume < ahead:
                fut = client.submit(score_shard, spec, shards[next_submit], pure=False,
                                    key=f"assay-shard-{spec.token[:12]}-{next_submit}")
                running[fut] = next_submit
                next_submit += 1
            try:
                finished, _ = distributed.wait(list(running), timeout=0.5, return_when="FIRST_COMPLETED")
            except TimeoutError:
                continue
            for fut in finished:
                running.pop(fut)
                out: ShardOutput = fut.result()  # a shard's error (or a worker lost too often) ends the run
                done[out.index] = out
            while next_consume in done:
                out = done.pop(next_consume)
                if out.items is not None:
                    for item in out.items:
                        on_result(item)
                    if spec.keep_traces:  # sent once, as the streamed items
                        out.part.failed = []
                        out.part.traces = [i if i.trace is None else i.replace(trace=None)
                                           for i in out.items if type(i) is TraceResult]
                merged = out.part if merged is None else merged.merge(out.part)
                next_consume += 1
    finally:
        for fut in running:
            fut.cancel()
    if merged is None:
        merged = RunPartial(evaluation.new_totals(spec.intervals, spec.passk_tasks))
    if next_consume < len(shards):
        merged.interrupted = True
    return merged


# -- on the worker ------------------------------------------------------------------------------

_BUILT: dict[str, Any] = {}
"""token -> Evaluation of the run this worker process is scoring (one at a time)."""


def score_shard(spec: WorkerSpec, shard: Shard) -> ShardOutput:
    """Score one shard with the ordinary engine (runs on a worker)."""
    evaluation = _BUILT.get(spec.token)
    if evaluation is None:
        from ._loop import start_loop, stop_loop  # the worker's side only

        for previous in _BUILT.values():  # a new run: drop the previous run's judge, loop and connections
            stop_loop(previous.loop)
        _BUILT.clear()
        evaluation = _BUILT[spec.token] = _rebuild(spec)
        # One event loop for all of this run's shards on this worker: the judge's connections, its
        # rpm/tpm buckets and its slots carry over from shard to shard instead of starting again
        # (a loop per shard reconnected and refilled them for every shard).
        evaluation.loop = start_loop()
    stats = getattr(evaluation.judge, "stats", None)
    before = stats.as_dict() if stats is not None else None
    items: list[Any] | None = [] if spec.stream else None
    part = evaluation.accumulate(shard, strict=spec.strict, keep_traces=spec.keep_traces and not spec.stream,
                                 intervals=spec.intervals, on_result=items.append if items is not None else None,
                                 passk_tasks=spec.passk_tasks)
    if stats is not None:
        part.judge = _delta(before, stats.as_dict())
    return ShardOutput(shard.index, part, items, worker=os.environ.get("DASK_WORKER_NAME", str(os.getpid())))


def _rebuild(spec: WorkerSpec) -> Any:
    from ._run import Evaluation
    from ._scoring import Plan

    judge = None
    if spec.judge_object is not None:
        judge = pickle.loads(spec.judge_object)
    elif spec.judge_model is not None:
        from ..judge import make_judge
        judge = make_judge(spec.judge_model, **spec.judge_options)
    evaluation = Evaluation(spec.instances, judge=judge, window=spec.window, repeats=spec.repeats,
                            attach_traces=spec.attach_traces)
    evaluation.plan = Plan.make(evaluation.instances, only_applicable=spec.default_set, repeats=spec.repeats)
    evaluation.default_set, evaluation.skipped, evaluation.dims = spec.default_set, dict(spec.skipped), spec.dims
    return evaluation


def _delta(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    """What one shard added to a worker's judge counters (peaks and limits: their value now)."""
    if before is None:
        return after
    out: dict[str, Any] = {}
    for key, value in after.items():
        old = before.get(key)
        if key in ("peak_concurrency", "concurrency_limit"):
            out[key] = value
        elif isinstance(value, dict):
            out[key] = {k: v - (old or {}).get(k, 0) for k, v in value.items() if v != (old or {}).get(k, 0)}
        elif value is None or old is None:
            out[key] = value
        else:
            out[key] = value - old
    return out


__all__ = ["DaskExecutor", "merge_judge_stats", "parse_executor", "run_distributed", "score_shard", "split_limits"]
