"""Inspect AI eval logs: the ``.eval`` archive (Inspect's default) and the JSON log format.

A log is one document ``{"version", "status", "eval": {...}, "results", "samples": [...]}``; each
sample is run once per epoch. Every (sample, epoch) becomes one trace with ``task_id`` = the
sample id and ``trial`` = the epoch, so that pass@k is computed across epochs. A sample's
``messages`` are read like chat messages (``tool_calls`` with ``function`` and ``arguments``,
``tool`` messages with ``tool_call_id`` and ``error``, ``reasoning`` content); ``target`` is the
expected output; ``model_usage`` (else ``output.usage``) the usage; ``total_time`` the latency;
``scores`` and the eval's task and model go to ``metadata``.

A ``.eval`` file is a zip archive: ``header.json`` (the log without its samples; while a run is
still going only ``_journal/start.json``) and one ``samples/ID_epoch_N.json`` per sample and
epoch, read one at a time. An issue in a sample names its member, e.g.
``run.eval:3: samples/7_epoch_1.json: messages[2]...``; the number is the member's position.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError
from ..model import InputIssue, Trace
from ._chat import build_turns, settle, usage_of
from ._common import UNEXPECTED, Record, array, build_trace, convert_value, join, mapping, number, obj, unexpected
from ._limits import RecordError, check_value, current, decode_text, loads, too_large
from ._registry import Importer, register_importer
from ._sniff import inspect
from ._stream import Value, iter_values

_HEADER = ("task", "task_id", "task_version", "model", "run_id", "created", "dataset")


def sample_to_trace(sample: Any, header: dict[str, Any] | None = None, path: str = "") -> Trace:
    """One Inspect ``EvalSample`` (as JSON data) as a Trace; raises DataError naming the field."""
    s = obj(sample, path, "an Inspect sample object")
    sample_id = s.get("id")
    if sample_id is None or isinstance(sample_id, (dict, list, bool)):
        raise DataError("required field is missing" if sample_id is None else "expected a string or an integer",
                        field=join(path, "id"))
    epoch = s.get("epoch", 1)
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise DataError("expected an integer", field=join(path, "epoch"))
    mpath = join(path, "messages")
    # lenient: Inspect writes (and reads) logs whose tool message answers a call the log does not hold
    data = build_turns(((join(mpath, i), m) for i, m in enumerate(array(s, path, "messages"))), lenient=True)
    output = mapping(s, path, "output")
    if not data["turns"] and isinstance(s.get("input"), str):  # a log written without messages
        completion = output.get("completion")
        data["turns"] = [{"input": s["input"], "output": completion if isinstance(completion, str) else None}]
    meta: dict[str, Any] = {}
    info = {k: v for k, v in (header or {}).items() if k in _HEADER and v is not None}
    if info:
        meta["eval"] = info
    if isinstance(info.get("model"), str):
        meta["model"] = info["model"]
    if s.get("scores"):
        meta["scores"] = s["scores"]
    if s.get("metadata"):
        meta["sample_metadata"] = s["metadata"]
    if s.get("error") is not None:
        meta["error"] = s["error"]
    target = s.get("target")
    expected = None
    if isinstance(target, str) and target:
        expected = {"output": target}
    elif isinstance(target, list) and target:
        meta["target"] = target
        expected = {"output": str(target[0])}
    data.update({"id": f"{sample_id}-epoch{epoch}", "task_id": str(sample_id), "trial": epoch, "metadata": meta,
                 "expected": expected, "usage": _usage(s, output, path),
                 "latency_ms": _ms(number(s, path, "total_time")),
                 "status": "failed" if s.get("error") is not None else "completed"})
    settle(data, f"sample {sample_id} epoch {epoch}: ")
    return build_trace({k: v for k, v in data.items() if v is not None})


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def _usage(s: dict[str, Any], output: dict[str, Any], path: str) -> dict[str, Any] | None:
    per_model = mapping(s, path, "model_usage")
    if per_model:
        parts = [usage_of(u, join(join(path, "model_usage"), str(m))) for m, u in per_model.items()]
        totals: dict[str, Any] = {}
        for key in ("input_tokens", "output_tokens", "total_tokens", "cost_usd"):
            values = [p.get(key) for p in parts if p]
            if values and all(v is not None for v in values):
                totals[key] = sum(values)
        return totals or None
    return usage_of(output.get("usage"), join(path, "output.usage"))


def _samples(value: Any, source: str, line: int, n: int) -> Iterator[Record]:
    log = value if isinstance(value, dict) else {}
    header = log.get("eval") if isinstance(log.get("eval"), dict) else {}
    samples = log.get("samples")
    if not isinstance(samples, list) or not samples:
        yield f"{source}:{line}", InputIssue(source, line, "samples",
                                             "the log holds no samples (was it written with --no-log-samples?)")
        return
    for i, sample in enumerate(samples):
        item = Value(sample, line, f"samples[{i}]", "document", "samples")
        yield from convert_value(item, source, n + i, lambda v, _fid: [sample_to_trace(v, header)])


_ZIP = b"PK\x03\x04"
_SPOOL_BYTES = 64 << 20
"""A ``.eval`` archive is read through a temporary file past this size (zip needs to seek)."""


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Any:
    """One JSON member within the record limits; the size is checked before anything is inflated."""
    limits = current()
    if info.file_size > limits.max_record_bytes:
        raise too_large(info.file_size, limits)
    with zf.open(info) as f:
        raw = f.read(limits.max_record_bytes + 1)
    if len(raw) > limits.max_record_bytes:  # the archive's directory understated the size
        raise too_large(len(raw), limits)
    text = decode_text(raw, limits)
    return check_value(loads(text), limits, raw=text)


def _archive(stream: IO[bytes], source: str) -> Iterator[Record]:
    with tempfile.SpooledTemporaryFile(_SPOOL_BYTES) as spool:
        shutil.copyfileobj(stream, spool, 1 << 20)
        spool.seek(0)
        try:
            zf = zipfile.ZipFile(spool)
        except zipfile.BadZipFile as exc:
            yield f"{source}:1", InputIssue(source, 1, None, f"not a readable .eval archive ({exc})")
            return
        with zf:
            infos = {i.filename: i for i in zf.infolist()}
            header: dict[str, Any] = {}
            for name in ("header.json", "_journal/start.json"):
                if name in infos:
                    try:
                        log = _member(zf, infos[name])
                    except (RecordError, ValueError, zipfile.BadZipFile) as exc:
                        yield f"{source}:1", InputIssue(source, 1, name, _why(exc))
                        return
                    header = dict(log["eval"]) if isinstance(log, dict) and isinstance(log.get("eval"), dict) else {}
                    break
            samples = [i for n, i in infos.items() if n.startswith("samples/") and n.endswith(".json")]
            if not samples:
                yield f"{source}:1", InputIssue(source, 1, "samples",
                                                "the log holds no samples (was it written with --no-log-samples?)")
                return
            for n, info in enumerate(samples, 1):
                try:
                    sample = _member(zf, info)
                except (RecordError, ValueError, zipfile.BadZipFile, EOFError) as exc:
                    yield f"{source}:{n}", InputIssue(source, n, info.filename, _why(exc))
                    continue
                try:
                    yield f"{source}:{n}", sample_to_trace(sample, header)
                except DataError as exc:
                    field = f"{info.filename}:{exc.field}" if exc.field else info.filename
                    yield f"{source}:{n}", InputIssue(source, n, field, exc.detail)
                except UNEXPECTED as exc:  # a shape no check foresaw: this sample is lost, not the run
                    yield f"{source}:{n}", InputIssue(source, n, info.filename, unexpected(exc))


def _why(exc: BaseException) -> str:
    if isinstance(exc, RecordError):
        return exc.message
    return f"cannot read this member ({type(exc).__name__}: {exc})"


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    head = stream.peek(4)[:4] if hasattr(stream, "peek") else b""
    if head == _ZIP:
        yield from _archive(stream, source)
        return
    n = 0
    for item in iter_values(stream, source):
        if isinstance(item, InputIssue):
            yield f"{source}:{item.line}", item
            continue
        if isinstance(item.value, dict) and "samples" not in item.value and "messages" in item.value:
            n += 1  # a line holding one sample
            yield from convert_value(item, source, n, lambda v, _fid: [sample_to_trace(v)])
            continue
        yield from _samples(item.value, source, item.line, n + 1)
        n += len(item.value.get("samples") or []) if isinstance(item.value, dict) else 1


def sniff(head: bytes, filename: str) -> bool:
    if head.startswith(_ZIP):  # a member name is in the clear in each local header
        return filename.endswith(".eval") or b"samples/" in head or b"_journal/start.json" in head
    h = inspect(head)
    keys = h.keys
    if "eval" in keys and ({"samples", "results", "plan"} & keys or h.has('"samples"')):
        ev = h.record.get("eval") if isinstance(h.record, dict) else None
        return ev is None or (isinstance(ev, dict) and ("task" in ev or "run_id" in ev))
    return False


register_importer(Importer("inspect", "Inspect AI eval logs (.eval archives and JSON): one trace per sample and epoch", read,
                           sniff))

__all__ = ["sample_to_trace"]
