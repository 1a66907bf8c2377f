"""The importer seam: a name, a sniffer and a streaming reader per source format."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .._files import is_stream
from ..errors import AssayError, ConfigError, DataError
from ..model import InputIssue, ReadingWarning, Trace
from . import _limits
from ._check import unparsed
from ._common import default_id
from ._detect import Relines, assay_output, closest, is_lines, other_text
from ._duplicates import DuplicateIds
from ._limits import Limits
from ._native import Record, read_native, sniff_native
from ._sniff import inspect, later_lines

_SNIFF_BYTES = 1 << 16


@dataclass(frozen=True)
class Importer:
    """Reads one source format into traces.

    ``sniff(head, filename)`` gets the first 64 KiB of the file and says whether the file is in
    this format; ``read(stream, source)`` yields ``(location, Trace | InputIssue)`` pairs.
    """

    name: str
    description: str
    read: Callable[[IO[bytes], str], Iterator[Record]]
    sniff: Callable[[bytes, str], bool]
    companions: Companions | None = None


@dataclass(frozen=True)
class Companions:
    """Files that complete other files of the same format rather than standing alone (an OpenAI
    Batch input file holds the requests its output file answers).

    When several files are read, those of the format whose head passes ``is_companion`` are read
    first into ``hold(files)``; the others of the format are read with ``read(stream, source,
    held)``, and ``leftovers(held)`` yields what nothing answered.
    """

    is_companion: Callable[[bytes], bool]
    hold: Callable[[list[tuple[str, IO[bytes]]]], Any]
    read: Callable[[IO[bytes], str, Any], Iterator[Record]]
    leftovers: Callable[[Any], Iterator[Record]]


_IMPORTERS: dict[str, Importer] = {}
_ORIGINS: dict[str, str] = {}


def register_importer(importer: Importer, *, replace: bool = False, origin: str | None = None) -> Importer:
    """Add an importer; returns it so it can be used as a plain call.

    A name that a built-in, a plugin or an earlier call holds is a ConfigError unless
    ``replace=True`` (registering the same Importer again is a no-op).
    """
    held = _IMPORTERS.get(importer.name)
    if held is importer:
        return importer
    module = getattr(importer.read, "__module__", None) or "?"
    origin = origin or _loading or ("built-in" if module.startswith(f"{__package__}.") else f"module {module}")
    if held is not None and not replace:
        raise ConfigError(f"importer {importer.name!r} from {origin} clashes with the one from "
                          f"{_ORIGINS.get(importer.name, '?')}; rename one, or register with replace=True")
    _IMPORTERS[importer.name] = importer
    _ORIGINS[importer.name] = origin
    return importer


def importers() -> dict[str, Importer]:
    _load_builtins()
    return dict(_IMPORTERS)


def importer_origins() -> dict[str, str]:
    """Every importer name and where it comes from ('built-in', 'plugin DIST', 'module NAME')."""
    _load_builtins()
    return dict(_ORIGINS)


_loading: str | None = None
"""Origin of registrations made while built-in or plugin importers are being imported."""
register_importer(Importer("assay", "assay's trace format: JSON Lines, a JSON array or JSON objects of traces",
                           read_native, sniff_native))

_BUILTIN_MODULES: tuple[str, ...] = (
    ".otel", ".openinference", ".uaef", ".fair_forge", ".eval_lib", ".deepeval", ".langchain", ".openai_chat",
    ".anthropic_messages", ".openai_responses", ".openai_batch", ".inspect_ai", ".langfuse", ".gemini", ".tau_bench", ".adk_evalset", ".swe_agent", ".langsmith",
)
"""Modules of further built-in importers, imported on first use to keep 'import assay' light."""
_loaded = False


def _load_builtins() -> None:
    """The built-in importers, then those of installed plugins (``assay.importers`` entry points)."""
    global _loaded, _loading
    if not _loaded:
        import importlib

        from .. import _plugins
        _loaded = True
        try:
            _loading = "built-in"
            for mod in _BUILTIN_MODULES:
                importlib.import_module(mod, __package__)
            for ep in _plugins.entry_points("assay.importers"):
                _loading = _plugins.origin_of(ep)
                obj = _plugins.load(ep)
                if isinstance(obj, Importer):
                    register_importer(obj, origin=_loading)
                elif not hasattr(obj, "__path__") and not hasattr(obj, "__file__"):
                    raise ConfigError(f"{_loading}: entry point {ep.group}:{ep.name} = {ep.value!r} is neither "
                                      "an Importer nor a module that registers importers")
        finally:
            _loading = None


def detect_format(head: bytes, filename: str) -> str:
    """The one importer that claims the file; ConfigError when none or several do.

    When no importer claims the first record, the next lines that hold whole JSON records are
    tried in turn (JSON Lines whose first lines are broken; the reader reports those lines).
    """
    _load_builtins()
    claims = [name for name, imp in _IMPORTERS.items() if _claims(imp, head, filename)]
    if not claims:
        body = head.lstrip(b"\xef\xbb\xbf \t\r\n")
        for offset in later_lines(body):
            claims = [name for name, imp in _IMPORTERS.items() if _claims(imp, body[offset:], filename)]
            if claims:
                break
    if len(claims) == 1:
        return claims[0]
    if not claims and _native_fallback(head):
        if (kind := other_text(head)) is not None:
            raise DataError(f"this looks like {kind}, not JSON; assay reads JSON Lines (one trace per line) or a JSON "
                            'array of traces, each like {"id": "...", "turns": [{"input": "...", "output": "..."}]}; '
                            "convert it first", source=filename)
        return "assay"  # the native reader names each bad line, or the field that is wrong
    if not claims:
        if not head.strip(b"\xef\xbb\xbf \t\r\n[]"):
            return "assay"  # nothing to read: any reader yields nothing
        if (output := assay_output(head)) is not None:  # not a format to name: say what to do with it
            raise DataError(f"this is {output}, not traces" + (
                ": `assay report`, `assay compare` and `assay versus` read it; `assay run` scores the trace files "
                "it came from" if output.startswith("assay results") else ""), source=filename)
        raise ConfigError(f"{filename}: cannot tell the input format; {closest(head)}name it with --input-format "
                          f"(input_format= in Python), one of: {', '.join(sorted(_IMPORTERS))}")
    raise ConfigError(f"{filename}: ambiguous input format (could be {', '.join(sorted(claims))}); "
                      "name it with --input-format (input_format= in Python)")


def _native_fallback(head: bytes) -> bool:
    """No record in the head can be read at all, or the first looks like an assay trace with a wrong
    field (``id`` and ``turns``): the native reader's messages then say what is wrong, line by line."""
    body = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    heads = [inspect(body)] + [inspect(body[o:]) for o in later_lines(body)]
    if not any(isinstance(h.record, (dict, list)) or h.keys for h in heads):
        return True
    keys = heads[0].keys
    return "id" in keys and bool(keys & {"turns", "messages"})


def _claims(imp: Importer, head: bytes, filename: str) -> bool:
    try:
        return bool(imp.sniff(head, filename))
    except Exception:  # a broken sniffer must not stop the others from claiming the file
        return False


class _Replay(io.RawIOBase):
    """Serves the bytes already read for sniffing, then the rest of the stream."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head, self._rest = memoryview(head), rest

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(b))
        b[:len(data)] = data
        return len(data)


_COMPRESSED = ((b"\x1f\x8b", "gzip", "gzip"), (b"BZh", "bzip2", "bzip2"), (b"\xfd7zXZ\x00", "xz", "xz"),
               (b"\x28\xb5\x2f\xfd", "zstd", "zstd"))
"""(magic bytes, format, the tool that decompresses it) of the compressed files no importer reads."""


_WIDE = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
         (b"\xfe\xff", "UTF-16"), (b"{\x00", "UTF-16LE"), (b"[\x00", "UTF-16LE"), (b"\x00{", "UTF-16BE"),
         (b"\x00[", "UTF-16BE"))
"""How text in UTF-16 or UTF-32 starts: a byte-order mark, or a JSON record's first character beside a NUL."""


def check_readable_text(head: bytes, source: str) -> None:
    """A DataError saying what the file is when it cannot be read line by line as UTF-8 text: compressed
    (decompress it, or pipe it in) or text in UTF-16 or UTF-32, as Windows tools save it (convert it)."""
    for magic, encoding in _WIDE:
        if head.startswith(magic):
            raise DataError(f"{encoding} text; assay reads UTF-8: convert it first (iconv -f {encoding} -t UTF-8 "
                            f"{source} > {source}.utf8, or save it as UTF-8)", source=source)
    for magic, kind, tool in _COMPRESSED:
        if head.startswith(magic):
            if source == "<stdin>":
                raise DataError(f"{kind}-compressed: pipe it through `{tool} -dc` first", source=source)
            raise DataError(f"{kind}-compressed; decompress it first ({tool} -dk {source}) or pipe it in "
                            f"({tool} -dc {source} | assay run -)", source=source)


def check_file(path: str, input_format: str | None = None) -> None:
    """Raise what reading ``path`` would raise before its first record (missing, a directory, compressed, not
    UTF-8 text, of no format assay can tell), reading only its head; standard input and other pipes are not
    read here."""
    if path == "-" or is_stream(path):
        return  # standard input or another pipe: its head cannot be read twice
    _load_builtins()
    raw, source = _open(path)
    try:
        head = raw.read(_SNIFF_BYTES)
    finally:
        raw.close()
    format_of(head, source, input_format)


def format_of(head: bytes, source: str, input_format: str | None) -> str:
    """The format a file whose first bytes are ``head`` is read in: ``input_format``, else the one detected;
    a DataError first if it is no UTF-8 text (compressed, UTF-16)."""
    check_readable_text(head, source)
    return input_format or detect_format(head, source)


def first_trace_format(path: str) -> str | None:
    """The format ``path`` is detected as when its first record reads as a trace; None when it does not (or
    the file cannot be read). Only that record is read."""
    import warnings

    formats: dict[str, dict[str, int]] = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = next(iter(read_traces(path, formats=formats)), None)  # the rest is never read
    except (AssayError, OSError):
        return None
    if first is None or not isinstance(first[1], Trace):
        return None
    return next(iter(formats.get(path, {})), None)


def _with_head(stream: IO[bytes]) -> tuple[IO[bytes], bytes]:
    """The first 64 KiB (fewer only at end of file) and a stream that still starts at byte 0.

    ``peek`` would do for files, but it returns at most one buffer (8 KiB) and less on pipes.
    """
    head = stream.read(_SNIFF_BYTES)
    return io.BufferedReader(_Replay(head, stream), _SNIFF_BYTES), head


def _open(path: str, tap: Callable[[str, IO[bytes]], IO[bytes]] | None = None) -> tuple[IO[bytes], str]:
    if path == "-":
        return (sys.stdin.buffer if tap is None else tap(path, sys.stdin.buffer)), "<stdin>"
    p = Path(path)
    if not p.exists():
        raise DataError("no such file", source=path)
    if p.is_dir():
        raise DataError("is a directory; give the trace files inside it", source=path)
    f = open(p, "rb")
    return (f if tap is None else tap(path, f)), path


def read_traces(paths: str | Path | Iterable[str | Path], *, input_format: str | None = None,
                strict: bool = False, tap: Callable[[str, IO[bytes]], IO[bytes]] | None = None,
                limits: Limits | None = None, formats: dict[str, dict[str, int]] | None = None) -> Iterator[Record]:
    """Stream ``(location, Trace | InputIssue)`` from files in any known format.

    With ``strict`` the first bad record raises DataError instead of being yielded. A trace id
    seen twice is an ``InputWarning`` naming both places, at the end of the read. ``tap(path,
    stream)`` may wrap each opened input (the CLI hashes and counts the bytes as they are read,
    so an input is read once). ``limits`` bounds each record (default: those set by
    ``reading_limits``, else ``Limits()``). ``formats``, when given, is filled with the number of
    traces read in each format per file (``{source: {format: n}}``).

    Without ``input_format``, a JSON Lines line that the file's format cannot read is detected on
    its own: when exactly one other format claims it and reads it, its traces are kept (a log
    mixing API shapes is read whole); otherwise its issue names the shape it looks like.
    """
    limits = limits or _limits.current()
    if isinstance(paths, (str, Path)):
        paths = [paths]
    _load_builtins()
    if input_format is not None and input_format not in _IMPORTERS:
        raise ConfigError.unknown("input format", input_format, _IMPORTERS)
    dups = DuplicateIds()
    paths = [str(p) for p in paths]
    held, skip = _companions(paths, input_format, tap, limits)
    for path in paths:
        if path in skip:
            continue
        raw, source = _open(path, tap)
        dups.source(source)
        try:
            stream, head = _with_head(raw)
            name = format_of(head, source, input_format)
            imp = _IMPORTERS[name]
            records = imp.companions.read(stream, source, held[name]) if name in held else imp.read(stream, source)
            counts = formats.setdefault(source, {}) if formats is not None else {}
            counts.setdefault(name, 0)
            again = Relines(path) if input_format is None and path != "-" and is_lines(head) else None
            try:
                for loc, item, fmt in _checked(_under(limits, records), source, name, again, limits):
                    if type(item) is Trace or isinstance(item, Trace):
                        counts[fmt] = counts.get(fmt, 0) + 1
                        tail = loc[loc.rfind(":") + 1:]
                        dups.add(item.id, int(tail) if tail.isdigit() else None)
                    elif strict and not isinstance(item, ReadingWarning):
                        raise DataError(item.message, source=item.source, line=item.line, field=item.field)
                    yield loc, item
            except (ValueError, UnicodeDecodeError) as exc:
                if isinstance(exc, DataError):
                    raise
                raise DataError(str(exc), source=source) from exc
            finally:
                if again is not None:
                    again.close()
        finally:
            if path != "-":
                raw.close()
    for name, requests in held.items():
        for loc, item in _IMPORTERS[name].companions.leftovers(requests):  # type: ignore[union-attr]
            if strict and isinstance(item, InputIssue):
                raise DataError(item.message, source=item.source, line=item.line, field=item.field)
            yield loc, item
    dups.warn()


def _companions(paths: list[str], input_format: str | None, tap: Callable[[str, IO[bytes]], IO[bytes]] | None,
                limits: Limits) -> tuple[dict[str, Any], set[str]]:
    """Read the companion files among ``paths`` first: ({format: what they hold}, their paths)."""
    if len(paths) < 2 or "-" in paths:
        return {}, set()
    formats: dict[str, list[tuple[str, bool]]] = {}
    for path in paths:
        p = Path(path)
        if not p.is_file():
            continue
        with open(p, "rb") as f:
            head = f.read(_SNIFF_BYTES)
        try:
            name = input_format or detect_format(head, path)
        except ConfigError:
            continue  # reported when the file itself is read
        imp = _IMPORTERS[name]
        if imp.companions is not None:
            formats.setdefault(name, []).append((path, imp.companions.is_companion(head)))
    held: dict[str, Any] = {}
    skip: set[str] = set()
    for name, files in formats.items():
        companions = [path for path, is_companion in files if is_companion]
        if not companions or len(companions) == len(files):
            continue  # nothing to join: each file is read as it is
        opened = [_open(path, tap) for path in companions]
        try:
            token = _limits._current.set(limits)
            try:
                held[name] = _IMPORTERS[name].companions.hold([(source, f) for f, source in opened])  # type: ignore[union-attr]
            finally:
                _limits._current.reset(token)
        finally:
            for handle, _ in opened:
                handle.close()
        skip.update(companions)
    return held, skip


def _checked(records: Iterator[Record], source: str, name: str, again: Relines | None,
             limits: Limits) -> Iterator[tuple[str, Trace | InputIssue, str]]:
    """(location, item, format): a trace with nothing in it as an issue, and a JSON Lines line the
    file's format could not read detected and read on its own (see ``read_traces``)."""
    for loc, item in records:
        if (type(item) is Trace or isinstance(item, Trace)) and not item.turns and _empty(item):  # type: ignore[union-attr]
            item = _empty_issue(item, loc, source)  # type: ignore[arg-type]
        if type(item) is Trace or isinstance(item, Trace):
            yield loc, item, name
            warning = _unparsed_warning(item, loc, source)  # type: ignore[arg-type]
            if warning is not None:
                yield loc, warning, name
        elif again is None or item.line is None or isinstance(item, ReadingWarning):  # type: ignore[union-attr]
            yield loc, item, name
        else:
            yield from _on_its_own(item, loc, source, name, again, limits)  # type: ignore[arg-type]


def _unparsed_warning(trace: Trace, loc: str, source: str) -> ReadingWarning | None:
    """One warning naming every turn text of ``trace`` that still looks like an unread payload."""
    found = unparsed(trace)
    if not found:
        return None
    _, _, tail = loc.rpartition(":")
    field, why = found[0]
    more = f" (and {len(found) - 1} more field(s): {', '.join(f for f, _ in found[1:4])})" if len(found) > 1 else ""
    return ReadingWarning(source, int(tail) if tail.isdigit() else None, field,
                          f"trace {trace.id!r}: {why}{more}; the reader did not understand this payload, "
                          "so scores on it would be wrong (name the format with --input-format, or report the shape)")


def _on_its_own(issue: InputIssue, loc: str, source: str, name: str, again: Relines,
                limits: Limits) -> Iterator[tuple[str, Trace | InputIssue, str]]:
    line = again.line(issue.line) if issue.source == source and issue.line is not None else None
    claims = [n for n, imp in _IMPORTERS.items() if n != name and _claims(imp, line, source)] if line else []
    if len(claims) != 1:
        yield loc, issue, name
        return
    other = claims[0]
    got = list(_under(limits, _IMPORTERS[other].read(io.BufferedReader(io.BytesIO(line)), source)))  # type: ignore[arg-type]
    traces = [t for _, t in got if isinstance(t, Trace) and not _empty(t)]
    if not got or len(traces) < len(got):
        yield loc, InputIssue(issue.source, issue.line, issue.field, f"{issue.message} (this line looks like {other} "
                              f"data; the file was read as {name} from its first record)"), name
        return
    for t in traces:
        if t.id == default_id(source, 1):  # a generated id: the line's, as the file's own reader numbers them
            t = t.model_copy(update={"id": default_id(source, issue.line)})  # type: ignore[arg-type]
        yield f"{source}:{issue.line}", t, other


def _empty(trace: Trace) -> bool:
    return not trace.turns and not any(a.turns for a in trace.agents.values())


def _empty_issue(trace: Trace, loc: str, source: str) -> InputIssue:
    """A trace with nothing to score is reported where it came from, not scored as empty."""
    _, _, tail = loc.rpartition(":")
    return InputIssue(source, int(tail) if tail.isdigit() else None, None,
                      f"trace {trace.id!r} has no turns: no user message, answer or tool call was found in it, "
                      "so there is nothing to score")


def _under(limits: Limits, records: Iterator[Record]) -> Iterator[Record]:
    """Run each step of an importer with ``limits`` in force (set and reset within the step, so
    that a consumer iterating from several asyncio tasks or contexts is safe)."""
    current = _limits._current
    while True:
        if current.get() is limits:  # already in force in the consumer's context (the usual case)
            item = next(records, None)
        else:
            token = current.set(limits)
            try:
                item = next(records, None)
            finally:
                current.reset(token)
        if item is None:
            return
        yield item


def load_traces(paths: str | Path | Iterable[str | Path], **kwargs: object) -> tuple[list[Trace], list[InputIssue]]:
    """Read every trace into memory: (traces, issues). For scripts and notebooks."""
    traces: list[Trace] = []
    issues: list[InputIssue] = []
    for _, item in read_traces(paths, **kwargs):  # type: ignore[arg-type]
        (traces if isinstance(item, Trace) else issues).append(item)  # type: ignore[arg-type]
    return traces, issues
