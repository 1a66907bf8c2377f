"""What a run is, typed and frozen: the one description the CLI, a config file, ``assay.evaluate``
and the pytest plugin build, and everything downstream (the engine, the store, Dask workers) reads.

A :class:`RunSpec` holds the metric selection, a :class:`JudgeSpec` (the judge model or jury and
its :class:`~assay.judge.JudgeOptions`), weights and thresholds, repeats, input reading limits,
``max_errors`` (parsed here, once), the run's name and tags, and the executor (checked here, once).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..model._options import JudgeOptions
from ..model._status import parse_max_errors

_NO_OPTIONS = JudgeOptions()


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


@dataclass(frozen=True)
class JudgeSpec:
    """The judge of a run: a model string (or a judge or client object), or several (a jury), and
    their options. ``build()`` makes it; a Dask worker gets the spec and builds its own."""

    model: Any
    """A model string, a Judge, a client object or function; a tuple of them: a jury."""
    options: JudgeOptions = _NO_OPTIONS
    weights: tuple[float, ...] | None = None
    """A jury's weights, one per juror (None: equal)."""
    scores: str = "mean"
    """How a jury combines score metrics: mean or median (weighted)."""

    def __post_init__(self) -> None:
        if isinstance(self.model, list):
            object.__setattr__(self, "model", tuple(self.model))
        if self.weights is not None:
            object.__setattr__(self, "weights", tuple(self.weights))
            if isinstance(self.model, tuple) and len(self.weights) != len(self.model):
                raise ConfigError(f"{len(self.weights)} --judge-weight for {len(self.model)} --judge: "
                                  "give one per judge")

    @classmethod
    def of(cls, judge: Any, options: Mapping[str, Any] | JudgeOptions | None = None, **jury: Any) -> JudgeSpec | None:
        """The spec for ``evaluate``'s ``judge`` and ``**judge_options`` (None: no judge; options without one: an error)."""
        opts = JudgeOptions.of(options)
        if judge is None:
            if opts != _NO_OPTIONS:
                raise ConfigError(f"judge options {sorted(opts.given())} given without a judge (no judge to "
                                  "apply them to): pass --judge (judge= in Python) or set ASSAY_JUDGE")
            return None
        return cls(judge, opts, **jury)

    @property
    def is_jury(self) -> bool:
        return isinstance(self.model, tuple)

    @property
    def dry_run(self) -> bool:
        return self.options.dry_run

    @property
    def portable(self) -> bool:
        """A model string: each Dask worker builds its own judge (with its share of the limits) from it."""
        return isinstance(self.model, str)

    def build(self) -> Any:
        """The judge (a Jury for several); an existing judge object without options is used as it is."""
        if self.is_jury:
            from ._jury import jury_of
            return jury_of(self.model, self.weights, self.scores, self.options)
        if self.options == _NO_OPTIONS and hasattr(self.model, "judge"):
            return self.model
        from ..judge import build_judge
        return build_judge(self.model, self.options)

    def share(self, slots: int, processes: int) -> JudgeSpec:
        """A worker's spec: its share of the limits (``JudgeOptions.split``)."""
        return dataclasses.replace(self, options=self.options.split(slots, processes))


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """A run, described once: what the CLI, a config file, ``assay.evaluate`` and the pytest plugin build."""

    metrics: Any = None
    """The selection as given (names, ``{"name": ...}`` mappings, classes, instances, or a mapping of
    instance name -> item); None: the default set."""
    judge: JudgeSpec | None = None
    weights: Mapping[str, float] = field(default_factory=dict)
    thresholds: Mapping[str, float] = field(default_factory=dict)
    repeats: int = 1
    intervals: bool = True
    input_format: str | None = None
    strict: bool = False
    limits: Any = None
    """Input reading limits (``assay.model.Limits``); None: the defaults."""
    max_errors: float | int = 0
    """Errored or unevaluated results tolerated: a count, or a share (float); ``"5%"`` is parsed here."""
    name: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    executor: Any = None
    """None / 'local', 'dask', 'dask:ADDRESS', a distributed.Client or a DaskExecutor (checked here)."""

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "max_errors", parse_max_errors(self.max_errors))
        except ValueError as exc:
            raise ConfigError(f"--max-errors: {exc}") from None
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or self.repeats < 1:
            raise ConfigError(f"repeats must be at least 1, got {self.repeats!r}")
        parse_executor(self.executor)
        object.__setattr__(self, "tags", dict(self.tags or {}))

    @property
    def label(self) -> dict[str, Any]:
        """The run's name and tags, only those given (kept with the run in the store and results)."""
        return {k: v for k, v in (("name", self.name), ("tags", dict(self.tags))) if v}

    @property
    def dry_run(self) -> bool:
        return self.judge is not None and self.judge.dry_run

    def replace(self, **changes: Any) -> RunSpec:
        return dataclasses.replace(self, **changes)
