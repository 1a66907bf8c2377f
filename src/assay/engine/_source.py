"""Whatever a run is given as its input, as ``(location, Trace or InputIssue)`` records in order.

A path or paths go to the importers; Trace objects, mappings and JSON texts are validated here; a
worker's shard of a distributed run (``_shards.Shard``) reads its own part. The engine and the
shard planner both read through this, so neither imports the other.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError, DataError
from ..importers import read_traces
from ..importers._native import parse_trace
from ..model import InputIssue, Trace, TraceValidationError

Source = str | Path | Iterable[Any]
"""What ``Evaluation.run`` accepts: a path, paths, or an iterable of Traces, mappings or JSON texts."""

_END = object()


def records(source: Source, input_format: str | None, strict: bool,
             tap: Any = None) -> Iterator[tuple[str, Trace | InputIssue]]:
    shard_records = getattr(source, "shard_records", None)
    if shard_records is not None:  # a worker's part of a distributed run (engine._shards.Shard)
        yield from shard_records(strict)
        return
    if isinstance(source, (str, Path)):
        yield from read_traces(source, input_format=input_format, strict=strict, tap=tap)
        return
    if isinstance(source, Iterator):  # a generator: look at the first item without losing it
        first = next(source, _END)
        if first is _END:
            return
        if isinstance(first, (str, Path)):
            items: Iterable[Any] = [first, *source]
        else:
            items = itertools.chain([first], source)
    else:
        items = source if isinstance(source, Sequence) else list(source)
    if isinstance(items, Sequence) and items and all(isinstance(i, (str, Path)) for i in items):
        yield from read_traces(list(items), input_format=input_format, strict=strict, tap=tap)
        return
    for i, item in enumerate(items):
        loc = f"<input>[{i}]"
        if isinstance(item, Trace):
            yield loc, item
        elif isinstance(item, Mapping):
            try:
                yield loc, Trace.model_validate(item)
            except TraceValidationError as exc:
                if strict:
                    raise DataError(exc.message, source="<input>", line=i, field=exc.path or None) from None
                yield loc, InputIssue("<input>", i, exc.path or None, exc.message)
        elif isinstance(item, (str, bytes)):
            yield loc, parse_trace(item, "<input>", i)
        else:
            raise ConfigError(f"<input>[{i}]: expected a Trace, a mapping or a file path, got {type(item).__name__}")


