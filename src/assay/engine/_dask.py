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

import dataclasses
import os
import pickle
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..model import TraceResult
from ..judge._stats import JudgeStats
from ._partial import RunPartial
from ._scoring import Plan
from ._shards import Shard, plan_shards
from ._spec import DaskExecutor, JudgeSpec, parse_executor

INSTALL = "pip install 'assay[dask]'"


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
    judge: JudgeSpec | None = None
    """The run's judge spec with this worker's share of the limits (``JudgeSpec.share``)."""
    judge_object: bytes | None = None
    """A pickled judge object, when it was given as one (no limits are split then)."""
    evaluation_type: type | None = None
    """The driver's Evaluation class (pickled by reference): what the worker rebuilds, without this
    module importing the engine's run module (which imports this one)."""


@dataclass(slots=True)
class ShardOutput:
    index: int
    part: RunPartial
    items: list[Any] | None
    worker: str = ""


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
    result.run.executor = {"kind": "dask", "scheduler": address or "LocalCluster", "workers": processes,
                              "threads": threads, "shards": len(shards)}
    if part.interrupted:
        evaluation.interrupted = True
    return result


def _spec(evaluation: Any, *, keep_traces: bool, stream: bool, intervals: bool, passk_tasks: str, strict: bool,
          threads: int, processes: int) -> tuple[WorkerSpec, int]:
    judge, judge_object = None, None
    slots = threads
    if evaluation.judge is not None:
        given = getattr(evaluation, "judge_spec", None)
        if given is not None and given.portable:
            slots = min(threads, given.options.concurrency)
            judge = given.share(slots, processes)
            judge = dataclasses.replace(judge, options=judge.options.replace(cache=_cache_path(judge.options.cache)))
        else:
            try:
                judge_object = pickle.dumps(evaluation.judge)
            except Exception as exc:  # noqa: BLE001 - any pickling failure means the same thing
                raise ConfigError(f"the judge {evaluation.judge!r} cannot be sent to Dask workers ({exc}); give it as "
                                  "a model string with its options (judge='openai:gpt-4o-mini', concurrency=...), "
                                  "which each worker builds for itself") from None
    spec = WorkerSpec(uuid.uuid4().hex, dict(evaluation.instances), evaluation.default_set, dict(evaluation.skipped),
                      evaluation.plan.repeats, evaluation.dims, evaluation.window, evaluation.attach_traces,
                      keep_traces, stream, intervals, passk_tasks, strict, judge, judge_object,
                      next(c for c in type(evaluation).__mro__ if c.__module__.startswith("assay.")))
    return spec, slots


def _cache_path(cache: Any) -> Any:
    """The cache as a path the workers open (the driver's default resolved here, not per worker)."""
    if cache is True or cache is None:
        from ..judge._cache import default_cache_path
        return str(default_cache_path())
    if cache is not False and not hasattr(cache, "get"):
        return os.path.abspath(os.path.expanduser(str(cache)))
    if hasattr(cache, "path"):
        return str(cache.path)
    return cache


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
    stats = stats if isinstance(stats, JudgeStats) else None
    before = stats.copy() if stats is not None else None
    items: list[Any] | None = [] if spec.stream else None
    part = evaluation.accumulate(shard, strict=spec.strict, keep_traces=spec.keep_traces and not spec.stream,
                                 intervals=spec.intervals, on_result=items.append if items is not None else None,
                                 passk_tasks=spec.passk_tasks)
    if stats is not None and before is not None:
        part.judge = stats.since(before)
    return ShardOutput(shard.index, part, items, worker=os.environ.get("DASK_WORKER_NAME", str(os.getpid())))


def _rebuild(spec: WorkerSpec) -> Any:
    judge = None
    if spec.judge_object is not None:
        judge = pickle.loads(spec.judge_object)
    elif spec.judge is not None:
        judge = spec.judge.build()
    evaluation = spec.evaluation_type(spec.instances, judge=judge, window=spec.window, repeats=spec.repeats,
                                      attach_traces=spec.attach_traces)
    evaluation.plan = Plan.make(evaluation.instances, only_applicable=spec.default_set, repeats=spec.repeats)
    evaluation.default_set, evaluation.skipped, evaluation.dims = spec.default_set, dict(spec.skipped), spec.dims
    return evaluation


__all__ = ["DaskExecutor", "parse_executor", "run_distributed", "score_shard"]
