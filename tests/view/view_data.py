"""Data for the viewer's tests: a store with the example runs and a hostile one."""

from __future__ import annotations

import json
from pathlib import Path

import assay
from assay.store import RunStore

EXAMPLES = Path(__file__).parents[2] / "examples" / "traces.jsonl"
SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'
FAR_IMG = '<img src="http://203.0.113.9/pixel.png">'
BIDI = "safe\u202etxt.exe"


def hostile_trace() -> dict:
    text = f"{SCRIPT} {IMG} {FAR_IMG} {BIDI} <style>body{{display:none}}</style>"
    return {"id": f"evil-{SCRIPT}", "task_id": "evil",
            "turns": [{"input": text, "output": text,
                       "tool_calls": [{"name": f"lookup{IMG}", "arguments": {"q": SCRIPT}, "result": FAR_IMG}]}],
            "expected": {"tool_calls": [{"name": "other_tool", "arguments": {}}]}}


def store_with_runs(tmp_path: Path) -> tuple[RunStore, dict[str, str]]:
    """Two runs of the examples called "demo" (the older one with a changed trace) and a hostile run."""
    store = RunStore(tmp_path / "runs.sqlite3")
    lines = EXAMPLES.read_text(encoding="utf-8").splitlines()
    older = [json.loads(x) for x in lines]
    for t in older:  # in the baseline support-refund-2 passed: the calls it made were the expected ones, and fast
        if t["id"] == "support-refund-2":
            t["expected"]["tool_calls"] = [{"name": c["name"], "arguments": c["arguments"]}
                                           for turn in t["turns"] for c in turn.get("tool_calls", [])]
            for turn in t["turns"]:
                turn["latency_ms"] = 100
    base = tmp_path / "older.jsonl"
    base.write_text("\n".join(json.dumps(t) for t in older) + "\n", encoding="utf-8")
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text(json.dumps(hostile_trace()) + "\n", encoding="utf-8")
    ids = {}
    ids["older"] = assay.evaluate(str(base), store=str(store.path), name="demo", tags={"env": "ci"}).run.run_id
    ids["hostile"] = assay.evaluate(str(hostile), ["tool_selection_accuracy"], store=str(store.path),
                                    name=f"evil{SCRIPT}", tags={"x": IMG}).run.run_id
    ids["demo"] = assay.evaluate(str(EXAMPLES), store=str(store.path), name="demo", tags={"env": "nightly"}).run.run_id
    return store, ids
