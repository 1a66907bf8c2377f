"""Shared plumbing of the foreign-format importers: typed field access, ids, issues.

Converters raise DataError(field=...) for a malformed record; the readers turn it into an
InputIssue with the file and line of the record, so one bad record never hides the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import PurePath
from typing import IO, Any

from ..errors import DataError
from ..model import InputIssue, ReadingWarning, Trace, TraceValidationError
from ..model._messages import maybe_json  # noqa: F401  (the importers take it from here)
from ._errors import json_type
from ._limits import loads
from ._stream import Value, iter_values

Record = tuple[str, "Trace | InputIssue"]
Convert = Callable[[Any, str], Iterable[Trace]]
"""(record, default id) -> traces; raises DataError for a malformed record."""


def join(path: str, key: str | int) -> str:
    """Extend a field path: ``join('turns', 2) == 'turns[2]'``, ``join('a', 'b') == 'a.b'``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def stem(source: str) -> str:
    name = PurePath(source).stem if source not in ("-", "<stdin>") else "stdin"
    return name or "trace"


def default_id(source: str, n: int) -> str:
    """Id of the ``n``-th record (from 1) of a file whose format has no ids of its own."""
    return f"{stem(source)}-{n}"


def wrong(path: str, expected: str, value: Any) -> DataError:
    return DataError(f"expected {expected}, got {json_type(value)}", field=path or None)


def obj(value: Any, path: str, what: str = "an object") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise wrong(path, what, value)
    return value


def get(d: dict[str, Any], *keys: str) -> Any:
    """The value of the first of ``keys`` present in ``d`` (aliases: snake_case, camelCase)."""
    for k in keys:
        if k in d:
            return d[k]
    return None


def _key(d: dict[str, Any], keys: tuple[str, ...]) -> str:
    return next((k for k in keys if k in d), keys[0])


def text(d: dict[str, Any], path: str, *keys: str, required: bool = False) -> str | None:
    v = get(d, *keys)
    if v is None and not required:
        return None
    if not isinstance(v, str):
        if v is None:
            raise DataError("required field is missing", field=join(path, _key(d, keys)))
        raise wrong(join(path, _key(d, keys)), "a string", v)
    return v


def number(d: dict[str, Any], path: str, *keys: str) -> float | None:
    v = get(d, *keys)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise wrong(join(path, _key(d, keys)), "a number", v)
    return v


def integer(d: dict[str, Any], path: str, *keys: str) -> int | None:
    v = get(d, *keys)
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise wrong(join(path, _key(d, keys)), "an integer", v)
    return v


def boolean(d: dict[str, Any], path: str, *keys: str) -> bool | None:
    v = get(d, *keys)
    if v is None:
        return None
    if not isinstance(v, bool):
        raise wrong(join(path, _key(d, keys)), "true or false", v)
    return v


def array(d: dict[str, Any], path: str, *keys: str) -> list[Any]:
    v = get(d, *keys)
    if v is None:
        return []
    if not isinstance(v, list):
        raise wrong(join(path, _key(d, keys)), "an array", v)
    return v


def mapping(d: dict[str, Any], path: str, *keys: str) -> dict[str, Any]:
    v = get(d, *keys)
    if v is None:
        return {}
    return obj(v, join(path, _key(d, keys)))


def texts(d: dict[str, Any], path: str, *keys: str) -> list[str]:
    """A list of strings (None or absent: empty)."""
    items = array(d, path, *keys)
    where = join(path, _key(d, keys))
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise wrong(join(where, i), "a string", item)
    return items


def arguments(value: Any, path: str) -> dict[str, Any]:
    """Tool-call arguments: an object, or a string holding one ('' and null: no arguments)."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = loads(value)
        except ValueError as exc:
            raise DataError(f"not valid JSON ({exc})", field=path) from None
    if not isinstance(value, dict):
        raise wrong(path, "an object", value)
    return value


def seconds_to_ms(value: float | None) -> float | None:
    return None if value is None else value * 1000.0


def usage(input_tokens: Any = None, output_tokens: Any = None, total_tokens: Any = None,
          cost: Any = None) -> dict[str, Any] | None:
    """A Usage dict, or None when nothing was recorded."""
    u = {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": total_tokens,
         "cost_usd": cost}
    u = {k: v for k, v in u.items() if v is not None}
    return u or None


def build_trace(data: dict[str, Any]) -> Trace:
    """Validate a converted trace; a failure is a DataError naming the assay field."""
    try:
        return Trace.model_validate(data)
    except TraceValidationError as exc:
        raise DataError(exc.message, field=exc.path or None) from None


def read_records(stream: IO[bytes], source: str, convert: Convert, *,
                 unwrap: tuple[str, ...] = ()) -> Iterator[Record]:
    """Run ``convert`` on every JSON value of the file; failures become located InputIssues."""
    n = 0
    for item in iter_values(stream, source, unwrap=unwrap):
        if isinstance(item, InputIssue):
            yield at(item), item
            continue
        n += 1
        yield from convert_value(item, source, n, convert)


def read_array_as_one(stream: IO[bytes], source: str, convert: Convert) -> Iterator[Record]:
    """``read_records``, but a file that is one JSON array is one record (an older ADK eval set, a
    mini-swe-agent message list): ``convert`` gets the whole list."""
    head = stream.peek(1 << 12)[:1 << 12] if hasattr(stream, "peek") else b""
    if head.lstrip()[:1] != b"[":
        yield from read_records(stream, source, convert)
        return
    items = []
    for item in iter_values(stream, source):
        if not isinstance(item, Value):
            yield f"{source}:{item.line}", item
            return
        items.append(item)
    if items:
        yield from convert_value(Value([v.value for v in items], items[0].line), source, 1, convert)


def convert_value(item: Value, source: str, n: int, convert: Convert) -> Iterator[Record]:
    loc = f"{source}:{item.line}"
    prefix = item.path if item.key else ""
    try:
        traces = list(convert(item.value, default_id(source, n)))
    except Skip as exc:
        yield loc, ReadingWarning(source, item.line, prefixed(prefix, exc.field), exc.detail)
        return
    except DataError as exc:
        yield loc, InputIssue(source, item.line, prefixed(prefix, exc.field), exc.detail)
        return
    except UNEXPECTED as exc:  # a shape no check foresaw: this record is lost, not the run
        yield loc, InputIssue(source, item.line, prefix or None, unexpected(exc))
        return
    for trace in traces:
        yield loc, trace


class Skip(DataError):
    """A record that is read and is no conversation (an OpenAI ``file`` object in a recording):
    skipped with one line that says what it is, not reported as a defect."""


UNEXPECTED = (TypeError, AttributeError, KeyError, IndexError, ValueError, OverflowError, RecursionError)
"""What a converter may raise on a shape its checks did not foresee."""


def unexpected(exc: BaseException) -> str:
    return f"cannot read this record ({type(exc).__name__}: {exc})"


def prefixed(prefix: str, field: str | None) -> str | None:
    """``field`` inside the element at ``prefix`` ('test_cases[3]' + 'trace.messages[0]')."""
    if not prefix:
        return field
    if not field:
        return prefix
    return prefix + field if field.startswith("[") else f"{prefix}.{field}"


def at(issue: InputIssue) -> str:
    return ":".join(str(p) for p in (issue.source, issue.line) if p is not None)


def read_conversations(stream: IO[bytes], source: str, convert: Convert, is_message: Callable[[Any], bool], *,
                       several: Callable[[Any], bool] | None = None) -> Iterator[Record]:
    """Every record of a chat-style file through *convert*.

    The elements of a file that is one top-level array of messages (*is_message*) are one
    conversation, converted once at the end; when the file breaks off inside it, that
    conversation is an issue rather than a shorter trace. ``several(value)`` says that a line
    holds several records, each converted and reported on its own.
    """
    pending: list[Value] = []
    broken = False
    n = 0
    for item in iter_values(stream, source):
        if isinstance(item, InputIssue):
            broken = broken or bool(pending)
            yield f"{source}:{item.line}", item
        elif item.mode == "array" and is_message(item.value):
            pending.append(item)
        elif several is not None and several(item.value):
            n += 1
            for i, element in enumerate(item.value):
                yield from convert_value(Value(element, item.line, f"[{i}]", item.mode, "[]"), source, n,
                                         lambda v, fid, i=i: convert(v, f"{fid}.{i + 1}"))
        else:
            n += 1
            yield from convert_value(item, source, n, convert)
    if pending:
        first = pending[0]
        if broken:
            yield f"{source}:{first.line}", InputIssue(source, first.line, None,
                                                       "the conversation starting here was not read to its end")
            return
        yield from convert_value(Value([p.value for p in pending], first.line), source, n + 1, convert)
