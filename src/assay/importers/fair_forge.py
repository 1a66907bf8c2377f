"""Fair Forge datasets (alquimia-fair-forge): one Trace per ``Dataset``.

A Dataset is one conversation (``session_id``, ``assistant_id``, ``language``, ``context``,
``conversation``); each ``Batch`` of it becomes a turn with its expected answer and, from the
``agentic`` / ``ground_truth_agentic`` dicts, the tools used and expected. Files hold one
Dataset, a JSON array of them, or one per line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError
from ..model import Trace
from ._common import (
    Record, array, boolean, build_trace, integer, join, mapping, number, obj, prefixed, read_records, text,
)
from ._registry import Importer, register_importer
from ._sniff import inspect

_DATASET_KEYS = {"session_id", "assistant_id", "language", "context", "conversation"}
_BATCH_KEYS = {"qa_id", "query", "assistant", "ground_truth_assistant", "observation", "agentic",
               "ground_truth_agentic", "weight", "logprobs"}


def dataset_to_trace(dataset: Any, *, default_id: str | None = None) -> Trace:
    """One Fair Forge Dataset (a dict or the pydantic model) as a Trace.

    The trace id is the ``session_id`` (``default_id`` when there is none). Raises DataError
    naming the bad field (``conversation[2].agentic.tools_used[0].tool_name``).
    """
    if hasattr(dataset, "model_dump"):
        dataset = dataset.model_dump()
    return _dataset(dataset, "", default_id)


def _dataset(value: Any, path: str, default_id: str | None) -> Trace:
    d = obj(value, path, "a Fair Forge dataset object")
    session = text(d, path, "session_id")
    context = text(d, path, "context")
    meta: dict[str, Any] = {}
    for key in ("assistant_id", "language"):
        if text(d, path, key) is not None:
            meta[key] = d[key]
    meta.update({k: v for k, v in d.items() if k not in _DATASET_KEYS})
    if "conversation" not in d:
        raise DataError("required field is missing", field=join(path, "conversation"))
    turns, qa_ids, extra = [], [], {}
    for i, batch in enumerate(array(d, path, "conversation")):
        turn, qa_id, more = _batch(batch, join(join(path, "conversation"), i), context)
        turns.append(turn)
        qa_ids.append(qa_id)
        for key, value in more.items():
            extra.setdefault(key, {})[qa_id if qa_id is not None else str(i)] = value
    meta["qa_ids"] = qa_ids
    meta.update(extra)
    trace_id = session if session is not None else default_id
    if trace_id is None:
        raise DataError("required field is missing", field=join(path, "session_id"))
    try:
        return build_trace({"id": trace_id, "turns": turns, "metadata": meta})
    except DataError as exc:
        raise DataError(exc.detail, field=prefixed(path, exc.field)) from None


def _batch(value: Any, path: str, context: str | None) -> tuple[dict[str, Any], str | None, dict[str, Any]]:
    b = obj(value, path, "a Fair Forge batch object")
    qa_id = text(b, path, "qa_id")
    turn: dict[str, Any] = {"input": text(b, path, "query"), "output": text(b, path, "assistant")}
    if context:
        turn["context"] = [context]
    expected: dict[str, Any] = {}
    if (gt := text(b, path, "ground_truth_assistant")) is not None:
        expected["output"] = gt
    agentic = mapping(b, path, "agentic")
    apath = join(path, "agentic")
    calls = []
    for j, used in enumerate(array(agentic, apath, "tools_used")):
        upath = join(join(apath, "tools_used"), j)
        u = obj(used, upath)
        calls.append({"name": text(u, upath, "tool_name", required=True),
                      "arguments": mapping(u, upath, "parameters"), "result": u.get("result"),
                      "step": integer(u, upath, "step")})
    turn["tool_calls"] = calls
    turn["uses_tool_results"] = boolean(agentic, apath, "final_answer_uses_tools")
    gta = mapping(b, path, "ground_truth_agentic")
    gpath = join(path, "ground_truth_agentic")
    if "expected_tools" in gta:
        exp_calls = []
        for j, item in enumerate(array(gta, gpath, "expected_tools")):
            epath = join(join(gpath, "expected_tools"), j)
            e = obj(item, epath)
            params = e.get("parameters")
            exp_calls.append({"name": text(e, epath, "tool_name", required=True),
                              "arguments": None if params is None else mapping(e, epath, "parameters"),
                              "step": integer(e, epath, "step")})
        expected["tool_calls"] = exp_calls
        # Fair Forge's own default: order matters unless told otherwise
        seq = boolean(gta, gpath, "tool_sequence_matters")
        expected["tool_order"] = "any" if seq is False else "strict"
    if expected:
        turn["expected"] = expected
    more: dict[str, Any] = {}
    if (obs := text(b, path, "observation")) is not None:
        more["observations"] = obs
    if (w := number(b, path, "weight")) is not None:
        more["weights"] = w
    if b.get("logprobs"):
        more["logprobs"] = b["logprobs"]
    extra = {k: v for k, v in b.items() if k not in _BATCH_KEYS}
    if extra:
        more["batch_fields"] = extra
    return turn, qa_id, more


def _convert(value: Any, default_id: str) -> Iterator[Trace]:
    if isinstance(value, list):  # one line holding a list of datasets
        for i, item in enumerate(value):
            yield _dataset(item, f"[{i}]", f"{default_id}.{i + 1}")
    else:
        yield _dataset(value, "", default_id)


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    return read_records(stream, source, _convert)


def _is_dataset(record: Any, keys: frozenset[str], complete: bool) -> bool:
    if isinstance(record, list) and record:
        record = record[0]
        keys = frozenset(record) if isinstance(record, dict) else frozenset()
    if "conversation" in keys and bool({"session_id", "assistant_id"} & keys):
        return True
    return not complete and {"session_id", "assistant_id"} <= keys  # 'conversation' beyond the head


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    return _is_dataset(h.record, h.keys, h.complete)


register_importer(Importer("fair_forge", "Fair Forge Dataset JSON: one conversation per dataset", read, sniff))

__all__ = ["dataset_to_trace"]
