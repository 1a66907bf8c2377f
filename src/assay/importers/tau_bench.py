"""tau-bench results: the JSON array ``run.py`` writes, one entry per (task, trial).

Each entry is ``{"task_id", "trial", "reward", "info": {"task": {"user_id", "instruction",
"actions", "outputs"}, "reward_info", ...}, "traj": [chat messages]}``. The trajectory is read
like an OpenAI chat log (the simulated user's messages open turns; the agent's tool calls are
answered by ``tool`` messages). ``task_id`` and ``trial`` become the trace's, so the trials of
a task give pass^k; ``reward`` (and ``reward_info.info``) goes to ``metadata``; the task's
``actions`` are the expected tool calls (in order), its ``instruction`` the user's goal and its
``outputs`` the facts the answer must contain (``expected.success_criteria``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError
from ..model import Trace
from ._chat import build_turns, settle
from ._common import Record, array, build_trace, join, number, obj, read_records
from ._registry import Importer, register_importer
from ._sniff import inspect


def _expected(task: Any, path: str) -> dict[str, Any] | None:
    if not isinstance(task, dict):
        return None
    out: dict[str, Any] = {}
    calls = []
    for i, a in enumerate(array(task, path, "actions")):
        a = obj(a, join(join(path, "actions"), i))
        if isinstance(a.get("name"), str):
            calls.append({"name": a["name"], "arguments": a.get("kwargs") if isinstance(a.get("kwargs"), dict) else None,
                          "step": i + 1})
    if calls:
        out["tool_calls"] = calls
    if isinstance(task.get("instruction"), str):
        out["goal"] = task["instruction"]
    outputs = [o for o in task.get("outputs") or [] if isinstance(o, str)]
    if outputs:
        out["success_criteria"] = [f"the answer contains {o!r}" for o in outputs]
    return out or None


def convert(value: Any, fallback: str) -> Iterator[Trace]:
    d = obj(value, "", "a tau-bench result object")
    if "traj" not in d:
        raise DataError("required field is missing", field="traj")
    traj = array(d, "", "traj")
    data = build_turns(((join("traj", i), m) for i, m in enumerate(traj)), lenient=True)
    task_id, trial = d.get("task_id"), d.get("trial")
    info = d.get("info") if isinstance(d.get("info"), dict) else {}
    meta: dict[str, Any] = {}
    reward = number(d, "", "reward")
    if reward is not None:
        meta["reward"] = reward
    reward_info = info.get("reward_info")
    if isinstance(reward_info, dict) and isinstance(reward_info.get("info"), dict):
        meta["reward_info"] = reward_info["info"]
    task = info.get("task") if isinstance(info.get("task"), dict) else None
    if task is not None and task.get("user_id") is not None:
        meta["user_id"] = task["user_id"]
    for key in ("source", "user_cost", "error", "traceback"):
        if info.get(key) is not None:
            meta[key] = info[key]
    tid = f"task-{task_id}" if task_id is not None else fallback
    data.update({"id": f"{tid}-trial-{trial}" if isinstance(trial, int) else tid,
                 "task_id": None if task_id is None else str(task_id),
                 "trial": trial if isinstance(trial, int) and not isinstance(trial, bool) else None,
                 "metadata": meta, "expected": _expected(task, "info.task"),
                 "status": "failed" if info.get("error") else "completed"})
    settle(data)
    yield build_trace({k: v for k, v in data.items() if v is not None})


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    return read_records(stream, source, convert)


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    rec = h.first
    if isinstance(rec, dict):
        return {"task_id", "traj"} <= rec.keys() and ("reward" in rec or "trial" in rec)
    if h.complete:
        return False
    return {"task_id", "reward"} <= h.keys and ("traj" in h.keys or "info" in h.keys)


register_importer(Importer("tau_bench", "tau-bench results: {task_id, trial, reward, info, traj} per trajectory",
                           read, sniff))
