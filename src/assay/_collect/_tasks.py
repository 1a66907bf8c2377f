"""The task file of ``assay collect``: one JSON object per line, each a task an agent is run on.

A task is what a trial starts from: the first user message (or a fixed list of them), what a
simulated user knows and wants, the tools the agent may call and the ground truth copied into
every trace. Unknown fields are errors (a typo would otherwise silently change the task), and
every error names the file, the line and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from .._plugins import import_module_ref
from ..errors import ConfigError, DataError
from ..model import Expected, TraceValidationError
from ..model._trace import _Struct


class CannedResult(_Struct):
    """A tool result served when the call's arguments equal ``arguments``."""

    arguments: dict[str, Any] = {}
    result: Any = None
    error: str | None = None


class Tool(_Struct):
    """A tool the agent may call: its JSON schema and either an implementation or canned results."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    """The arguments' JSON schema (an object schema, as OpenAI function calling takes it); none: no arguments."""
    function: str | None = None
    """``module:function`` or ``path/file.py:function`` (code: run only when the user allows it, docs/collect.md),
    or the name of a tool the user's own code registered (``assay.register_tool``); called with the arguments
    as keywords (sync or async), its return value is the result. A class on the path is instantiated per trial."""
    factory: bool = False
    """``function`` names a factory: called once per trial, it returns the function to call."""
    results: list[CannedResult] = []
    """Canned results keyed by arguments, so the agent runs without its production backend."""
    default: Any = None
    """The result for arguments no canned result matches (else the call is an error)."""

    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters if self.parameters is not None
                                                 else {"type": "object", "properties": {}}}}


class Task(_Struct):
    """One task of a task file (docs/collect.md)."""

    id: str | int
    input: str | list[dict[str, Any]]
    """The first user message, or a list of chat messages (user turns; a leading system message too)."""
    goal: str | None = None
    persona: str | None = None
    scenario: str | None = None
    instructions: str | None = None
    """What the simulated user knows and wants; the agent never sees them."""
    system: str | None = None
    """The agent's system prompt; the simulated user never sees it."""
    max_turns: int | None = None
    """Most user turns in a simulated conversation."""
    tools: list[Tool] = []
    state: dict[str, Any] | None = None
    """The environment's initial state: each trial's tools get a fresh copy (a ``state`` parameter) and the
    trace records it as it ends (``Trace.state``); ``expected.state`` is the final state to reach."""
    expected: Expected | None = None
    metadata: dict[str, Any] = {}

    def __post_init__(self) -> None:
        if type(self.id) is not str:
            self.id = str(self.id)
        if isinstance(self.input, str):
            if not self.input.strip():
                raise ValueError("input: empty; give the first user message")
        else:
            for i, m in enumerate(self.input):
                if m.get("role") not in ("system", "user") or not isinstance(m.get("content"), str):
                    raise ValueError(f"input[{i}]: expected {{\"role\": \"user\", \"content\": str}} (a "
                                     "system message first, if any; the agent writes the assistant's turns)")
                if m["role"] == "system" and (i or self.system is not None):
                    raise ValueError(f"input[{i}]: a system message goes first, and not with 'system'")
            if not any(m["role"] == "user" for m in self.input):
                raise ValueError("input: no user message")
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError(f"max_turns: expected at least 1, got {self.max_turns}")
        first: dict[str, int] = {}  # one pass: a task with 100k tools is checked in linear time
        for i, tool in enumerate(self.tools):
            if first.setdefault(tool.name, i) != i:
                raise ValueError(f"tools[{i}].name: {tool.name!r} is defined twice (first as tools[{first[tool.name]}])")
            if tool.function is not None and tool.results:
                raise ValueError(f"tools[{i}]: give 'function' or 'results', not both")
            if tool.function is not None and not tool.function.strip():
                raise ValueError(f"tools[{i}].function: empty; give 'module:function' or a registered tool's name")
            if tool.factory and tool.function is None:
                raise ValueError(f"tools[{i}].factory: needs 'function' (the factory to call per trial)")

    def user_messages(self) -> list[str]:
        """The scripted user turns: the input, or every user message of an input list."""
        if isinstance(self.input, str):
            return [self.input]
        return [m["content"] for m in self.input if m["role"] == "user"]


def load_tasks(source: str | os.PathLike[str] | Iterable[Any]) -> list[Task]:
    """Tasks from a JSONL file, or from Task objects and dicts; errors are located (file:line: field)."""
    if isinstance(source, (str, os.PathLike)):
        return _read_file(Path(source))
    tasks = []
    for i, item in enumerate(source):
        if isinstance(item, Task):
            tasks.append(item)
            continue
        try:
            tasks.append(Task.model_validate(item))
        except (TraceValidationError, ValueError) as exc:
            raise DataError(str(exc), source="tasks", line=i + 1) from None
    _check_unique(tasks, "tasks", [i + 1 for i in range(len(tasks))])
    return tasks


def _read_file(path: Path) -> list[Task]:
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark (Windows editors) is not part of line 1
    except OSError as exc:
        raise DataError(f"cannot read the task file: {exc.strerror}", source=str(path)) from None
    except UnicodeDecodeError as exc:
        at = path.read_bytes()[:exc.start].count(b"\n") + 1
        raise DataError(f"not UTF-8 text (byte {exc.object[exc.start]:#04x})", source=str(path), line=at) from None
    tasks, lines = [], []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            tasks.append(Task.model_validate_json(line))
        except TraceValidationError as exc:
            raise DataError(exc.message, source=str(path), line=n, field=exc.path or None) from None
        except (ValueError, msgspec.ValidationError) as exc:
            raise DataError(str(exc), source=str(path), line=n) from None
        lines.append(n)
    if not tasks:
        raise DataError("no tasks (expected one JSON object per line)", source=str(path))
    _check_unique(tasks, str(path), lines)
    return tasks


def _check_unique(tasks: list[Task], source: str, lines: list[int]) -> None:
    seen: dict[str, int] = {}
    for task, line in zip(tasks, lines):
        if task.id in seen:
            raise DataError(f"task id {task.id!r} is already used on line {seen[task.id]}", source=source,
                            line=line, field="id")
        seen[task.id] = line  # type: ignore[index]


def import_callable(ref: str, what: str) -> Callable[..., Any]:
    """``module:function`` (or ``path/file.py:function``) -> the function; a ConfigError says why not."""
    module_name, sep, attr = ref.rpartition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{what} {ref!r}: expected 'module:function'")
    try:
        module = import_module_ref(module_name)
    except (ImportError, OSError) as exc:
        raise ConfigError(f"{what} {ref!r}: cannot import {module_name!r}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
    if not callable(obj):
        raise ConfigError(f"{what} {ref!r}: {module_name} has no callable {attr!r}")
    return obj


def canned(tool: Tool, arguments: Mapping[str, Any]) -> tuple[Any, str | None]:
    """(result, error) of a canned tool for these arguments."""
    for entry in tool.results:
        if _same(entry.arguments, arguments):
            return entry.result, entry.error
    if tool.default is not None:
        return tool.default, None
    return None, f"no canned result of tool {tool.name!r} for arguments {json.dumps(dict(arguments), sort_keys=True)}"


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
