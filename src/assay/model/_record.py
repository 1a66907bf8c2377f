"""``RunResult.run``: what a run was and how it went, as a typed Struct.

Every key a run has ever written is a field (in the order runs write them, so results files read
the same as before); a field at its default is not written, which is how a key was absent before.
Old results files and stores decode through :meth:`RunRecord.from_dict`: a value of an unexpected
type, or a key this version does not know, is kept as it was (``other``) rather than failing the read.

Read and write it by attribute (``result.run.n_traces``). The mapping methods (``run["judge"]``,
``run.get("run_id")``, ``"interrupted" in run``, ``{**run}``, ``run.update(...)``) remain for code
written against the dict ``RunResult.run`` used to be: a key is present when its field is set.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import msgspec


class RunRecord(msgspec.Struct, kw_only=True, omit_defaults=True, dict=True):
    """Run information: version, timing, counts, metrics, judge, inputs, label, store id."""

    assay_version: str | None = None
    started_at: str | None = None
    duration_s: float | None = None
    n_traces: int | None = None
    n_passed: int | None = None
    n_failed: int | None = None
    n_input_issues: int | None = None
    metrics: list[dict[str, Any]] | None = None
    """Each metric instance: name, metric, version, dimension, judge_calls, params."""
    skipped_metrics: dict[str, str] | None = None
    default_set: int | None = None
    repeats: int | None = None
    dimension_weights: dict[str, float] | None = None
    dimension_thresholds: dict[str, float] | None = None
    judge: dict[str, Any] | None = None
    """The judge model and its counters (JudgeStats.as_dict; a jury's jurors)."""
    interrupted: bool = False
    inputs: list[str] | None = None
    executor: dict[str, Any] | None = None
    input_files: list[dict[str, Any]] | None = None
    """Each input file's path, sha256 and size (hashed while read)."""
    name: str | None = None
    tags: dict[str, str] | None = None
    max_errors: float | int | None = None
    """Errored or unevaluated results tolerated (a count, or a share as a float); None: 0."""
    planned_judge_calls: int | None = None
    judge_plan: dict[str, Any] | None = None
    input_format: str | None = None
    run_id: str | None = None
    dry_run: bool = False
    status: str | None = None
    """The stored run's status (completed, running, interrupted, failed), when loaded from a store."""
    error: str | None = None
    n_failed_runs: int | None = None
    """Traces whose run failed (``status: "failed"``): failed trials, counted in ``n_failed``."""
    n_excluded: int | None = None
    """Traces excluded for a harness fault (not in ``n_passed`` / ``n_failed``, nor in any statistic)."""
    excluded: dict[str, Any] | None = None
    """Per harness-fault kind: ``{"n": count, "reason": the first one's reason}``."""

    # -- the codec ------------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | RunRecord | None) -> RunRecord:
        """A record from its dict form (a results file's ``run``, a stored run); never fails on old data."""
        if isinstance(d, RunRecord):
            return d
        known = {k: v for k, v in (d or {}).items() if k in _FIELDS and v is not None}
        try:
            record = msgspec.convert(known, cls, strict=False)
        except msgspec.ValidationError:  # one odd value: keep it as it was, convert the rest
            record = cls()
            for k, v in known.items():
                try:
                    setattr(record, k, getattr(msgspec.convert({k: v}, cls, strict=False), k))
                except msgspec.ValidationError:
                    record._others()[k] = v
        for k, v in (d or {}).items():
            if k not in _FIELDS:
                record._others()[k] = v
        return record

    def to_dict(self) -> dict[str, Any]:
        """The dict form written to results files and the store (fields at their default left out)."""
        out = msgspec.to_builtins(self)
        out.update(self.other)
        return out

    @property
    def other(self) -> dict[str, Any]:
        """Keys this version has no field for (from newer versions, or set by user code), kept as they were."""
        return self.__dict__.get("_other", {})

    def _others(self) -> dict[str, Any]:
        return self.__dict__.setdefault("_other", {})

    # -- the mapping view (for code written against the dict) -----------------------------------

    def __getitem__(self, key: str) -> Any:
        if key in _FIELDS:
            value = getattr(self, key)
            if value != _DEFAULTS[key]:
                return value
        elif key in self.other:
            return self.other[key]
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key in _FIELDS:
            setattr(self, key, value)
        else:
            self._others()[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        if key in _FIELDS:
            setattr(self, key, _DEFAULTS[key])
        else:
            del self._others()[key]

    def __contains__(self, key: object) -> bool:
        if key in _FIELDS:
            return getattr(self, key) != _DEFAULTS[key]  # type: ignore[arg-type]
        return key in self.other

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def keys(self) -> list[str]:
        return [*(k for k in _FIELDS if getattr(self, k) != _DEFAULTS[k]), *self.other]

    def items(self) -> list[tuple[str, Any]]:
        return [(k, self[k]) for k in self.keys()]

    def values(self) -> list[Any]:
        return [self[k] for k in self.keys()]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def update(self, other: Mapping[str, Any] | None = None, **changes: Any) -> None:
        for k, v in {**(other or {}), **changes}.items():
            self[k] = v

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: str, *default: Any) -> Any:
        if key not in self:
            if default:
                return default[0]
            raise KeyError(key)
        value = self[key]
        del self[key]
        return value


_FIELDS = RunRecord.__struct_fields__
_DEFAULTS = {f: d for f, d in zip(_FIELDS, RunRecord.__struct_defaults__)}
