"""OpenAI Batch API files: the output file (and the input file it answers), read without a flag.

An output line is ``{"id", "custom_id", "response": {"status_code", "request_id", "body"},
"error"}`` where ``body`` is a ``chat.completion`` (``/v1/chat/completions``) or a Responses API
``response`` (``/v1/responses``); a failed request has ``"response": null`` and an ``error``
(``{"code", "message"}``). An input line is ``{"custom_id", "method", "url", "body"}``.

The trace id is ``custom_id``. When the input file is given with the output file (in any
order), each answer is joined with its request by ``custom_id``, so the trace holds the request's
messages and the answer; a failed request is then a trace with ``status: "failed"`` and the error
in ``metadata.error``. Alone, a failed output line has nothing to score and is a located issue
``batch request failed: CODE: MESSAGE``; a request with no output line is one too. An input file
read alone gives one trace per request, with no answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError
from ..model import InputIssue, Trace
from ._chat import _exchange
from ._common import Record, default_id, obj, read_records
from ._registry import Companions, Importer, register_importer
from ._sniff import inspect
from ._stream import iter_values
from .openai_responses import _one as _responses_one


class _Requests:
    """The input files' requests by ``custom_id``, while a read joins them with the output."""

    def __init__(self) -> None:
        self.bodies: dict[str, tuple[dict[str, Any], str, int]] = {}
        """custom_id -> (request line, source, line number)."""
        self.issues: list[tuple[str, InputIssue]] = []


def is_input(rec: Any) -> bool:
    return isinstance(rec, dict) and "custom_id" in rec and isinstance(rec.get("body"), dict) and "url" in rec


def is_output(rec: Any) -> bool:
    if not (isinstance(rec, dict) and "custom_id" in rec and "response" in rec):
        return False
    resp = rec["response"]
    return (resp is None and rec.get("error") is not None) or (isinstance(resp, dict) and "body" in resp)


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        parts = [str(error[k]) for k in ("code", "message") if error.get(k)]
        return ": ".join(parts) or "unknown error"
    return str(error)


def _convert(value: Any, fallback: str, join_: _Requests | None) -> Iterator[Trace]:
    d = obj(value, "", "a Batch API line object")
    cid = d.get("custom_id")
    trace_id = str(cid) if cid is not None else fallback
    if is_input(d) and "response" not in d:
        yield _trace(trace_id, d.get("body") or {}, None, None, {"url": d.get("url")})
        return
    if not is_output(d):
        raise DataError("expected a Batch API output line ({custom_id, response, error}) or input line "
                        "({custom_id, method, url, body})", field=None)
    request = None
    if join_ is not None and cid is not None:
        held = join_.bodies.pop(str(cid), None)
        request = held[0] if held else None
    body = (request or {}).get("body") or {}
    resp, error = d.get("response"), d.get("error")
    meta: dict[str, Any] = {"batch_request_id": d.get("id")} if d.get("id") is not None else {}
    if isinstance(resp, dict) and resp.get("request_id") is not None:
        meta["request_id"] = resp["request_id"]
    if resp is None and request is None:
        raise DataError(f"batch request failed: {_error_text(error)} (give the batch input file too, to keep "
                        "the request as a failed trace)", field="error")
    yield _trace(trace_id, body, resp, error, meta)


def _trace(trace_id: str, body: dict[str, Any], resp: dict[str, Any] | None, error: Any,
           meta: dict[str, Any]) -> Trace:
    answer = resp.get("body") if isinstance(resp, dict) else None
    if (isinstance(answer, dict) and answer.get("object") == "response") or ("input" in body and "messages" not in body):
        record: dict[str, Any] = {"request": body, "response": answer or {}}
        trace = _responses_one(record, "", trace_id)
        extra: dict[str, Any] = {**trace.metadata, **meta}
        if error is not None:
            extra["error"] = error
        failed = error is not None or (isinstance(resp, dict) and int(resp.get("status_code") or 200) >= 400)
        return trace.model_copy(update={"id": trace_id, "metadata": extra,
                                        "status": "failed" if failed else trace.status})
    record = {"id": trace_id, "request": body, "metadata": meta}
    if resp is not None:
        record["response"] = {"status_code": resp.get("status_code"), "body": answer or {}}
    if error is not None:
        record["error"] = error
    return _exchange(record, "", trace_id)


def read(stream: IO[bytes], source: str, requests: _Requests | None = None) -> Iterator[Record]:
    """Every line of the file; with ``requests`` (from ``requests_of``) answers are joined with them."""
    return read_records(stream, source, lambda v, fallback: _convert(v, fallback, requests))


def requests_of(inputs: list[tuple[str, IO[bytes]]]) -> _Requests:
    """The requests of these input files, held while the output files are read (``leftovers`` after)."""
    requests = _Requests()
    for source, stream in inputs:
        n = 0
        for item in iter_values(stream, source):
            if isinstance(item, InputIssue):
                requests.issues.append((f"{source}:{item.line}", item))
                continue
            n += 1
            rec = item.value
            if not is_input(rec):
                requests.issues.append((f"{source}:{item.line}", InputIssue(
                    source, item.line, None, "expected a Batch API input line ({custom_id, method, url, body})")))
                continue
            cid = str(rec["custom_id"]) if rec.get("custom_id") is not None else default_id(source, n)
            requests.bodies[cid] = (rec, source, item.line)
    return requests


def leftovers(requests: _Requests) -> Iterator[Record]:
    """The input files' unreadable lines, then each request that no output line answered."""
    yield from requests.issues
    for cid, (_, source, line) in requests.bodies.items():
        yield f"{source}:{line}", InputIssue(source, line, "custom_id",
                                             f"batch request {cid!r} has no line in the output file(s)")


def _opens_with_request(head: bytes) -> bool:
    return is_input(inspect(head).record)


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    rec = h.record
    if isinstance(rec, dict):
        return is_output(rec) or is_input(rec)
    if h.complete:
        return False
    return "custom_id" in h.keys and ({"response", "error"} <= h.keys or {"method", "url", "body"} <= h.keys)


register_importer(Importer("openai_batch", "OpenAI Batch API output (and input) files, joined by custom_id", read, sniff,
                           Companions(_opens_with_request, requests_of, read, leftovers)))

__all__ = ["leftovers", "read", "requests_of"]
