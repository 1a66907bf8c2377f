"""Fuzz: files mixing good and hostile records through `assay run` and `assay validate`.

For every generated file: no traceback, exit status in {0, 1, 2} (2 when a record is bad),
every good record scored, and every bad record named as file:line.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.cli import main

METRICS = ["tool_selection_accuracy", "tool_sequence_correctness", "parameter_quality", "latency_score"]
LIMIT_MB = "0.02"  # --max-record-mb: 20 KiB records, 10 KiB strings, so 'huge' stays fast


def good(i: int, dup: bool) -> dict[str, Any]:
    return {"id": "g0" if dup else f"g{i}", "latency_ms": 10 + i,
            "turns": [{"input": "q", "output": "a", "tool_calls": [{"name": "search", "arguments": {"q": i}}]}],
            "expected": {"tool_calls": [{"name": "search", "arguments": {"q": i}}]}}


WRONG = [("turns", "x"), ("turns", 3), ("id", [1]), ("tool_calls", "x"), ("input", 5), ("arguments", [1]),
         ("expected", 7), ("latency_ms", "fast"), ("status", "done"), ("outptu", "typo"), ("name", None)]


def wrong(i: int, which: int) -> dict[str, Any]:
    rec = good(i, False)
    rec["id"] = f"b{i}"
    field, value = WRONG[which]
    if field in ("tool_calls", "input", "outptu"):
        rec["turns"][0][field] = value
    elif field in ("arguments", "name"):
        rec["turns"][0]["tool_calls"][0][field] = value
    else:
        rec[field] = value
    return rec


def bad_text(kind: str, i: int, depth: int) -> bytes:
    """A record that is syntactically JSON (so an array can hold it) but breaks a limit or the text rules."""
    base = json.dumps(good(i, False))[:-1]  # without the closing brace
    if kind == "deep":
        return (base + ', "metadata": {"x": ' + "[" * depth + "]" * depth + "}}").replace('"g', '"b', 1).encode()
    if kind == "surrogate":
        return ('{"id": "b' + str(i) + '\\ud800", "turns": [{"input": "x"}]}').encode()
    if kind == "surrogate-key":
        return ('{"id": "b' + str(i) + '", "turns": [{"input": "x"}], "metadata": {"\\udc00": 1}}').encode()
    if kind == "nan":
        return (base.replace('"g', '"b', 1) + ', "throughput_rps": NaN}').encode()
    if kind == "huge":
        return (base.replace('"g', '"b', 1) + ', "metadata": {"s": "' + "x" * 30_000 + '"}}').encode()
    if kind == "not-object":
        return b'"just a string"'
    return (base.replace('"g', '"b', 1) + ', "metadata": {"s": "').encode() + b'\xff"}}'  # bad-byte


LINE_ONLY = {"comment": b"# a comment", "garbage": b"{not json", "bad-byte": None, "blank": b""}

record = st.one_of(
    st.tuples(st.just("good"), st.booleans()),
    st.tuples(st.just("wrong"), st.integers(0, len(WRONG) - 1)),
    st.tuples(st.sampled_from(["deep", "surrogate", "surrogate-key", "nan", "huge", "not-object"]),
              st.integers(257, 3000)),
    st.tuples(st.sampled_from(["comment", "garbage", "bad-byte", "blank"]), st.integers(257, 300)),
)


def build(kinds: list[tuple[str, Any]], shape: str, bom: bool, crlf: bool) -> tuple[bytes, dict[int, str], list[int]]:
    """(file bytes, {line: good id}, bad lines)."""
    if shape == "array":  # an array holds only syntactically whole JSON values
        kinds = [k for k in kinds if k[0] not in ("comment", "garbage", "bad-byte", "blank")]
    items: list[tuple[str, bytes]] = []
    for i, (kind, arg) in enumerate(kinds):
        if kind == "good":
            rec = good(i, arg)
            items.append(("good:" + rec["id"], json.dumps(rec).encode()))
        elif kind == "wrong":
            items.append(("bad", json.dumps(wrong(i, arg)).encode()))
        elif kind == "blank":
            items.append(("blank", b""))
        elif kind in LINE_ONLY and kind != "bad-byte":
            items.append(("bad", LINE_ONLY[kind]))  # type: ignore[arg-type]
        else:
            items.append(("bad", bad_text(kind, i, arg)))
    nl = b"\r\n" if crlf else b"\n"
    goods: dict[int, str] = {}
    bads: list[int] = []
    if shape == "array":
        body = b"[" + (b"," + nl).join(data for _, data in items) + b"]"
    else:
        body = nl.join(data for _, data in items) + (nl if items else b"")
    for lineno, (what, _) in enumerate(items, 1):
        if what.startswith("good:"):
            goods[lineno] = what[5:]
        elif what == "bad":
            bads.append(lineno)
    return (b"\xef\xbb\xbf" if bom else b"") + body, goods, bads


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(kinds=st.lists(record, max_size=8), shape=st.sampled_from(["lines", "lines", "array"]),
       bom=st.booleans(), crlf=st.booleans())
def test_hostile_files_never_traceback_and_lose_no_good_record(kinds: list[tuple[str, Any]], shape: str,
                                                                bom: bool, crlf: bool) -> None:
    data, goods, bads = build(kinds, shape, bom, crlf)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("f.json" if shape == "array" else "f.jsonl")
        path.write_bytes(data)
        out = Path(tmp) / "out.json"
        runner = CliRunner()
        r = runner.invoke(main, ["run", str(path), "--no-store", "--max-record-mb", LIMIT_MB, "-o", str(out),
                                 *[a for m in METRICS for a in ("-m", m)]])
        assert r.exception is None or isinstance(r.exception, SystemExit), r.output
        assert "Traceback" not in r.output
        if not goods and not bads:  # an empty file: nothing to evaluate is status 3, never a pass
            assert r.exit_code == 3, r.output
            return
        assert r.exit_code in (0, 1, 2), r.output
        if bads:
            assert r.exit_code == 2, r.output
        for line in bads:
            assert f"{path}:{line}:" in r.output, (line, r.output)
        scored = [t["id"] for t in json.loads(out.read_text(encoding="utf-8"))["traces"]] if goods else []
        assert sorted(scored) == sorted(goods.values()), r.output
        v = runner.invoke(main, ["validate", str(path), "--max-record-mb", LIMIT_MB])
        assert "Traceback" not in v.output and v.exit_code == (2 if bads else 0), v.output
        assert v.output.strip().splitlines()[-1] == f"{len(goods)} valid trace(s), {len(bads)} invalid record(s)"
