"""The importer seam: a name, a sniffer and a streaming reader per source format."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..errors import ConfigError, DataError
from ..model import InputIssue, Trace
from ._native import Record, read_json_array, read_jsonl

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


_IMPORTERS: dict[str, Importer] = {}


def register_importer(importer: Importer) -> Importer:
    """Add (or replace) an importer; returns it so it can be used as a plain call."""
    _IMPORTERS[importer.name] = importer
    return importer


def importers() -> dict[str, Importer]:
    _load_builtins()
    return dict(_IMPORTERS)


def _first_char(head: bytes) -> str:
    s = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return chr(s[0]) if s else ""


def _native_read(stream: IO[bytes], source: str) -> Iterator[Record]:
    head = stream.peek(_SNIFF_BYTES) if hasattr(stream, "peek") else b""
    if _first_char(head) == "[":
        yield from read_json_array(stream, source)
    else:
        yield from read_jsonl(stream, source)


def _native_sniff(head: bytes, filename: str) -> bool:
    first = _first_char(head)
    if first == "[":
        return b'"turns"' in head or b'"messages"' in head
    if first == "{":
        line = head.split(b"\n", 1)[0]
        return b'"id"' in line and (b'"turns"' in line or b'"messages"' in line)
    return False


register_importer(Importer("assay", "assay's trace format: JSONL or a JSON array of traces", _native_read, _native_sniff))

_BUILTIN_MODULES: tuple[str, ...] = ()
"""Modules of further built-in importers, imported on first use to keep 'import assay' light."""
_loaded = False


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        import importlib
        for mod in _BUILTIN_MODULES:
            importlib.import_module(mod, __package__)
        _loaded = True


def detect_format(head: bytes, filename: str) -> str:
    """The one importer that claims the file; ConfigError when none or several do."""
    _load_builtins()
    claims = [name for name, imp in _IMPORTERS.items() if imp.sniff(head, filename)]
    if len(claims) == 1:
        return claims[0]
    if not claims:
        if not head.strip():
            return "assay"
        raise ConfigError(f"{filename}: cannot tell the input format; pass --input-format with one of: "
                          f"{', '.join(sorted(_IMPORTERS))}")
    raise ConfigError(f"{filename}: ambiguous input format (could be {', '.join(sorted(claims))}); "
                      "pass --input-format to choose")


def _open(path: str) -> tuple[IO[bytes], str]:
    if path == "-":
        return sys.stdin.buffer, "<stdin>"
    p = Path(path)
    if not p.exists():
        raise DataError("no such file", source=path)
    if p.is_dir():
        raise DataError("is a directory; give the trace files inside it", source=path)
    return open(p, "rb"), path


def read_traces(paths: str | Path | Iterable[str | Path], *, input_format: str | None = None,
                strict: bool = False) -> Iterator[Record]:
    """Stream ``(location, Trace | InputIssue)`` from files in any known format.

    With ``strict`` the first bad record raises DataError instead of being yielded.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    _load_builtins()
    if input_format is not None and input_format not in _IMPORTERS:
        raise ConfigError.unknown("input format", input_format, _IMPORTERS)
    for path in paths:
        stream, source = _open(str(path))
        try:
            if not hasattr(stream, "peek"):
                import io
                stream = io.BufferedReader(stream)  # type: ignore[arg-type]
            name = input_format or detect_format(stream.peek(_SNIFF_BYTES)[:_SNIFF_BYTES], source)
            try:
                for loc, item in _IMPORTERS[name].read(stream, source):
                    if strict and isinstance(item, InputIssue):
                        raise DataError(item.message, source=item.source, line=item.line, field=item.field)
                    yield loc, item
            except (ValueError, UnicodeDecodeError) as exc:
                if isinstance(exc, DataError):
                    raise
                raise DataError(str(exc), source=source) from exc
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()


def load_traces(paths: str | Path | Iterable[str | Path], **kwargs: object) -> tuple[list[Trace], list[InputIssue]]:
    """Read every trace into memory: (traces, issues). For scripts and notebooks."""
    traces: list[Trace] = []
    issues: list[InputIssue] = []
    for _, item in read_traces(paths, **kwargs):  # type: ignore[arg-type]
        (traces if isinstance(item, Trace) else issues).append(item)  # type: ignore[arg-type]
    return traces, issues
