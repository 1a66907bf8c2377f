"""SWE-agent and mini-swe-agent trajectories (``*.traj``, ``*.traj.json``): one task, one trace.

SWE-agent writes ``{"trajectory": [{"thought", "action", "observation", "response", ...}],
"history": [messages], "info": {"submission", "exit_status", "model_stats"}, "environment"}``:
the task is the first user message of ``history`` that is not a demonstration, each step is one
tool call (named by the action's first word, ``{"command": action}`` its arguments, the
observation its result, the thought the turn's reasoning), and the submission is the output.

mini-swe-agent writes ``{"info", "messages", "trajectory_format": "mini-swe-agent-1"}`` (older
versions the messages alone): the assistant's one bash block per message (```` ```bash ```` or
```` ```mswea_bash_command ````) is a ``bash`` call whose result is the next user message (the
``<returncode>`` / ``<output>`` observation). Versions that call tools natively (``tool_calls``
and ``tool`` messages) are read like any chat log. The task is the first user message; the
answer is ``info.submission`` when there is one, else the last assistant text. The whole
trajectory is one turn: the observations are tool results, not new questions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO, Any

from ..errors import DataError
from ..model import Trace
from ._chat import build_turns, is_mini_swe
from ._common import Record, array, build_trace, join, obj, read_array_as_one
from ._registry import Importer, register_importer
from ._sniff import inspect

_BLOCK = re.compile(r"```(?:mswea_bash_command|bash|sh)?[ \t]*\n(.*?)```", re.S)


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        return "\n".join(texts) if texts else None
    return None


def _meta(info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None, str | None]:
    meta: dict[str, Any] = {}
    for key in ("exit_status", "mini_version", "swe_agent_version", "instance_id"):
        if info.get(key) is not None:
            meta[key] = info[key]
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else {}
    use: dict[str, Any] = {}
    if isinstance(stats.get("instance_cost"), (int, float)) and stats["instance_cost"]:
        use["cost_usd"] = float(stats["instance_cost"])
    for src, dst in (("tokens_sent", "input_tokens"), ("tokens_received", "output_tokens")):
        if isinstance(stats.get(src), int) and stats[src]:
            use[dst] = stats[src]
    if isinstance(stats.get("api_calls"), int):
        meta["api_calls"] = stats["api_calls"]
    status = info.get("exit_status")
    return meta, use or None, status if isinstance(status, str) else None


def _swe_agent(d: dict[str, Any], fallback: str) -> Trace:
    history = [m for m in d.get("history") or [] if isinstance(m, dict) and not m.get("is_demo")]
    system = next((_text(m.get("content")) for m in history if m.get("role") == "system"), None)
    task = next((_text(m.get("content")) for m in history if m.get("role") == "user"), None)
    calls, thoughts = [], []
    for i, step in enumerate(array(d, "", "trajectory")):
        step = obj(step, join("trajectory", i), "a trajectory step object")
        action = step.get("action")
        if isinstance(step.get("thought"), str) and step["thought"].strip():
            thoughts.append(step["thought"].strip())
        if not isinstance(action, str) or not action.strip():
            continue
        name = action.strip().split(None, 1)[0]
        calls.append({"name": name, "arguments": {"command": action.strip()}, "result": step.get("observation")})
    info = d.get("info") if isinstance(d.get("info"), dict) else {}
    meta, use, status = _meta(info)
    submission = info.get("submission")
    output = submission if isinstance(submission, str) and submission.strip() else (
        next((_text(m.get("content")) for m in reversed(history) if m.get("role") == "assistant"), None))
    turn = {"input": task, "output": output, "tool_calls": calls, "reasoning": "\n\n".join(thoughts) or None}
    return build_trace({k: v for k, v in {
        "id": str(info.get("instance_id") or d.get("instance_id") or fallback), "system": system,
        "turns": [turn], "metadata": meta, "usage": use,
        "status": None if status is None else ("completed" if status.lower().startswith("submitted") else "failed"),
    }.items() if v is not None})


def _mini(messages: list[Any], info: dict[str, Any], fallback: str, path: str) -> Trace:
    msgs = [obj(m, join(path, i), "a message object") for i, m in enumerate(messages)]
    meta, use, status = _meta(info)
    submission = info.get("submission")
    if any(m.get("tool_calls") for m in msgs if m.get("role") == "assistant"):  # native tool calls
        data = build_turns(((join(path, i), {k: v for k, v in m.items() if k != "extra"}) for i, m in enumerate(msgs)),
                           lenient=True)
        turns = data["turns"]
        system = data["system"]
    else:
        system = "\n\n".join(t for m in msgs if m.get("role") == "system" for t in [_text(m.get("content"))] if t) or None
        users = [i for i, m in enumerate(msgs) if m.get("role") == "user"]
        task = _text(msgs[users[0]].get("content")) if users else None
        calls: list[dict[str, Any]] = []
        thoughts: list[str] = []
        last_text = submitted = None
        for i, m in enumerate(msgs):
            if m.get("role") != "assistant":
                continue
            text = _text(m.get("content")) or ""
            blocks = _BLOCK.findall(text)
            reply = msgs[i + 1] if i + 1 < len(msgs) and msgs[i + 1].get("role") in ("user", "tool") else None
            thought = _BLOCK.sub("", text).strip()
            if blocks:
                if thought:
                    thoughts.append(thought)
                for j, command in enumerate(blocks):
                    call: dict[str, Any] = {"name": "bash", "arguments": {"command": command.strip()}}
                    if reply is not None and j == len(blocks) - 1:
                        call["result"] = _text(reply.get("content"))
                        if "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in command and (call["result"] or "").strip():
                            submitted = call["result"]  # what the submit command printed is the submission
                    calls.append(call)
            if thought:
                last_text = thought
        output = submission if isinstance(submission, str) and submission.strip() else (submitted or last_text)
        turns = [{"input": task, "output": output, "tool_calls": calls,
                  "reasoning": "\n\n".join(thoughts) or None}]
    return build_trace({k: v for k, v in {
        "id": str(info.get("instance_id") or fallback), "system": system, "turns": turns, "metadata": meta,
        "usage": use, "status": None if status is None else (
            "completed" if status.lower().startswith("submitted") else "failed"),
    }.items() if v is not None})


def convert(value: Any, fallback: str) -> Iterator[Trace]:
    if isinstance(value, list):
        yield _mini(value, {}, fallback, "")
        return
    d = obj(value, "", "a SWE-agent or mini-swe-agent trajectory object")
    if isinstance(d.get("trajectory"), list):
        yield _swe_agent(d, fallback)
    elif isinstance(d.get("messages"), list):
        info = d.get("info") if isinstance(d.get("info"), dict) else {}
        if d.get("instance_id") and "instance_id" not in info:
            info = {**info, "instance_id": d["instance_id"]}
        yield _mini(d["messages"], info, fallback, "messages")
    else:
        raise DataError("expected a trajectory ('trajectory' steps or 'messages')")


def read(stream: IO[bytes], source: str) -> Iterator[Record]:
    return read_array_as_one(stream, source, convert)  # an older mini-swe-agent file: one array of messages, one trajectory


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    rec = h.record
    if isinstance(rec, dict):
        if isinstance(rec.get("trajectory"), list) and ({"history", "info"} & rec.keys()):
            first = rec["trajectory"][0] if rec["trajectory"] else {}
            return isinstance(first, dict) and ("action" in first or "observation" in first) or not first
        if str(rec.get("trajectory_format", "")).startswith("mini-swe-agent"):
            return True
        if h.container == "array" and "role" in rec:
            return is_mini_swe(h.text)
        return False
    if h.complete:
        return False
    if "trajectory" in h.keys and ({"history", "info", "environment"} & h.keys):
        return True
    return ("trajectory_format" in h.keys or (h.container == "array" and h.has('"role"'))) and is_mini_swe(h.text)


register_importer(Importer("swe_agent", "SWE-agent and mini-swe-agent trajectories (.traj, .traj.json)", read, sniff))
