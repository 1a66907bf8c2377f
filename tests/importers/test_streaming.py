"""Record formats are read lazily: the first trace comes before the file is read to its end."""

from __future__ import annotations

import io
import json

import pytest

from assay.importers import importers
from assay.importers._stream import CHUNK
from assay.model import Trace

RECORDS = {
    "assay": lambda i, pad: {"id": f"t{i}", "turns": [{"input": pad, "output": "ok"}]},
    "uaef": lambda i, pad: {"name": f"t{i}", "trace": {"messages": [{"role": "user", "content": pad}]}},
    "fair_forge": lambda i, pad: {"session_id": f"t{i}", "assistant_id": "a", "context": "", "conversation": [
        {"qa_id": "q", "query": pad, "assistant": "ok", "ground_truth_assistant": "ok"}]},
    "eval_lib": lambda i, pad: {"name": f"t{i}", "input": pad, "actual_output": "ok"},
    "deepeval": lambda i, pad: {"name": f"t{i}", "input": pad, "actual_output": "ok", "context": []},
    "langchain": lambda i, pad: {"id": f"t{i}", "messages": [{"type": "human", "content": pad}]},
}


class Counting(io.RawIOBase):
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        n = min(len(b), len(self.data) - self.pos)
        b[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        return n


@pytest.mark.parametrize("shape", ["lines", "array"])
@pytest.mark.parametrize("fmt", sorted(RECORDS))
def test_first_trace_before_the_end_of_a_large_file(fmt: str, shape: str) -> None:
    pad = "x" * 20_000
    records = [json.dumps(RECORDS[fmt](i, pad)) for i in range(300)]  # about 6 MiB
    data = ("\n".join(records) + "\n" if shape == "lines" else "[\n" + ",\n".join(records) + "\n]").encode()
    raw = Counting(data)
    items = importers()[fmt].read(io.BufferedReader(raw), "big")
    loc, first = next(items)
    assert isinstance(first, Trace) and first.id in ("t0", "big-1") and loc == ("big:1" if shape == "lines" else "big:2")
    assert raw.pos <= 3 * CHUNK < len(data)
    assert sum(1 for _ in items) == 299
