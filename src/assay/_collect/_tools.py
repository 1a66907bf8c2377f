"""The tools of a task, made afresh for every trial, and which code a task file may run.

A task file is data people share, so the code it names (a tool's ``module:function`` or
``path/file.py:function``) runs only when the user allows it: :class:`CodePolicy` is the user's
allow-list (``allow_code``, ``--allow-code PREFIX``), and :class:`Code` refuses a task file that
names anything outside it before importing anything, listing what it would run. The standard
library (and assay itself) is allowed only by naming the module, never by ``*``. Tools that the
user's own code registers (:func:`register_tool`, from a ``--plugin`` module or the program that
calls ``collect``) need no opt-in.

Every trial gets its own tools (:class:`TrialTools`), so trials are independent: each module a
tool names is loaded afresh for the trial (module-level state, such as a seat counter, starts
over), a class on a tool's path is instantiated for the trial (one instance per class, shared by
that trial's tools), a factory is called for it, and the task's ``state`` is copied for it. A tool
function (or factory, or class) receives the trial's ``task_id``, ``trial`` and ``state`` by
declaring parameters of those names. A tool that raises anything (``SystemExit`` and
``KeyboardInterrupt`` included) is an error of that call, which the agent sees.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from importlib import util
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import ConfigError
from ._tasks import Task, Tool, canned

CONTEXT = ("task_id", "trial", "state")
"""Parameters through which a tool function, factory or class receives its trial's values."""

_REGISTERED: dict[str, Any] = {}
_IMPORTING = threading.RLock()
_MISSING = object()


def register_tool(name: str, obj: Any = None) -> Any:
    """Make ``obj`` the tool a task names as ``"function": NAME`` (also a decorator: ``@register_tool("book")``).

    ``obj`` is a function (sync or async), a class (instantiated per trial; the instance is called)
    or, with the task's ``"factory": true``, a factory called per trial. Registered code is the
    user's own (a ``--plugin`` module, the program calling ``collect``): it needs no ``allow_code``.
    """
    if not isinstance(name, str) or not name.strip() or ":" in name:
        raise ConfigError(f"register_tool: expected a tool name without ':', got {name!r}")

    def add(target: Any) -> Any:
        if not callable(target):
            raise ConfigError(f"register_tool({name!r}): expected a function, class or factory, got "
                              f"{type(target).__name__}")
        _REGISTERED[name] = target
        return target

    return add if obj is None else add(obj)


def _is_path(entry: str) -> bool:
    return "/" in entry or os.sep in entry or entry.endswith(".py") or entry in (".", "..")


class CodePolicy:
    """The code a task file may name: ``allow`` is False/None (none), True or ``"*"`` (any module outside
    the standard library and assay, any ``.py`` file), or prefixes: a dotted module prefix
    (``my_project.tools`` allows it and its submodules; ``os`` allows ``os:...``) or a path (a ``.py``
    file, or a directory whose files are allowed)."""

    def __init__(self, allow: bool | str | Iterable[str] | None = None) -> None:
        entries: tuple[str, ...]
        if allow is None or allow is False:
            entries = ()
        elif allow is True:
            entries = ("*",)
        elif isinstance(allow, str):
            entries = (allow,)
        else:
            entries = tuple(allow)
        self.wildcard = False
        self.modules: list[str] = []
        self.paths: list[Path] = []
        for entry in entries:
            entry = entry.strip() if isinstance(entry, str) else entry
            if not isinstance(entry, str) or not entry:
                raise ConfigError(f"allow_code: expected module prefixes or paths, got {entry!r}")
            if entry == "*":
                self.wildcard = True
            elif _is_path(entry):
                self.paths.append(Path(entry).resolve())
            elif all(part.isidentifier() for part in entry.split(".")):
                self.modules.append(entry)
            else:
                raise ConfigError(f"allow_code: {entry!r} is neither a module prefix (my_project.tools) nor a path "
                                  "(./tools/, tools/book.py)")

    def named(self, module: str) -> bool:
        """Whether a module prefix of the allow-list names ``module``."""
        return any(module == m or module.startswith(m + ".") for m in self.modules)

    def module(self, module: str) -> bool:
        top = module.partition(".")[0]
        return self.named(module) or (self.wildcard and not _guarded(top))

    def file(self, path: str | Path) -> bool:
        resolved = Path(path).resolve()
        return any(resolved == p or p in resolved.parents for p in self.paths) or \
            (self.wildcard and not _guarded_file(resolved))


def _guarded(top: str) -> bool:
    """A top-level module that ``*`` never allows: the standard library (os, subprocess, builtins...) and assay."""
    return top in sys.stdlib_module_names or top.startswith("_") or top == "assay"


def _guarded_file(path: Path) -> bool:
    """A file that ``*`` never allows: the standard library's (``/usr/lib/python3.11/shutil.py``) and assay's."""
    import sysconfig

    roots = sysconfig.get_paths()

    def under(key: str) -> bool:
        root = roots.get(key)
        return bool(root) and Path(root).resolve() in path.parents

    if Path(__file__).resolve().parents[1] in path.parents:  # assay's own package
        return True
    return (under("stdlib") or under("platstdlib")) and not (under("purelib") or under("platlib"))


_HINT = ("If you trust this code, allow it: --allow-code PREFIX (repeatable: a module prefix such as "
         "my_project.tools, a path such as ./tools/ or tools/book.py, or '*' for any module outside the standard "
         "library; Python: allow_code=[...] or allow_code=True), or register the tools from your own code "
         "(assay.register_tool, --plugin).")


class Code:
    """The code a collection's tools run: checked against the policy before anything is imported, loaded
    once to check that every tool resolves, then loaded afresh for each trial (the check's copy serves one)."""

    def __init__(self, tasks: list[Task], policy: CodePolicy, registered: Mapping[str, Any] | None = None,
                 source: str = "the task file") -> None:
        self.policy = policy
        self.registered = {**_REGISTERED, **(registered or {})}
        self._spare: dict[str, list[ModuleType]] = {}
        refused, unknown = [], []
        for task in tasks:
            for tool in task.tools:
                if tool.function is None:
                    continue
                where = f"task {task.id!r}, tool {tool.name!r}: {tool.function}"
                if ":" not in tool.function:
                    if tool.function not in self.registered:
                        unknown.append(where)
                    continue
                why = self._refusal(tool.function)
                if why is not None:
                    refused.append(f"  {where}{why}")
        if refused:
            raise ConfigError(f"{source} names code that would run; nothing of it was imported or run:\n"
                              + "\n".join(refused) + "\n" + _HINT)
        if unknown:
            known = ", ".join(sorted(self.registered)) or "none"
            raise ConfigError(f"{source}: no registered tool for {'; '.join(unknown)} (registered tools: {known}; "
                              "a tool of your own code is registered with assay.register_tool, e.g. from a --plugin "
                              "module; code in a module is named 'module:function')")
        for task in tasks:  # every tool resolves before the first agent call
            for i, tool in enumerate(task.tools):
                if tool.function is not None and ":" in tool.function:
                    self._check(tool, f"task {task.id!r}: tools[{i}] {tool.name!r}")

    def _refusal(self, ref: str) -> str | None:
        """Why the allow-list refuses ``ref`` (a leading ' (...)'), or None."""
        module, _, attr = ref.rpartition(":")
        if not module or not attr or any(not p.isidentifier() or p.startswith("__") for p in attr.split(".")):
            return " (expected 'module:function' or 'path/file.py:function', no private dunder names)"
        if module.endswith(".py"):
            if self.policy.file(module):
                return None
            return (f" (the standard library's and assay's files are allowed only by their path: --allow-code "
                    f"{module})") if self.policy.wildcard else ""
        if not all(p.isidentifier() for p in module.split(".")):
            return " (not a module name)"
        if self.policy.module(module):
            return None
        if self.policy.wildcard:
            return f" (the standard library and assay are allowed only by name: --allow-code {module})"
        return ""

    def _check(self, tool: Tool, where: str) -> None:
        ref = tool.function
        assert ref is not None
        module_name, _, attr = ref.rpartition(":")
        if module_name not in self._spare:
            try:
                self._spare[module_name] = [_load_module(module_name)]
            except BaseException as exc:  # noqa: BLE001 - whatever the module raises (SystemExit too) is reported
                raise ConfigError(f"{where}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
        module = self._spare[module_name][0]
        obj: Any = module
        for part in attr.split("."):
            obj = getattr(obj, part, None)
        if not callable(obj):
            raise ConfigError(f"{where}: {ref!r}: {module_name} has no callable {attr!r}")
        owner = _owner(obj)
        stdlib_named = self.policy.named(module_name) and _guarded(module_name.partition(".")[0])  # --allow-code os
        if owner not in (None, module.__name__) and not stdlib_named and not self._owner_allowed(owner):
            raise ConfigError(f"{where}: {ref!r} is {owner}.{getattr(obj, '__qualname__', attr)}, code from outside "
                              f"what is allowed; allow that module by name to run it (--allow-code {owner})")
        if not tool.factory and not isinstance(obj, type):
            reserved = set(_context_names(obj)) & set((tool.parameters or {}).get("properties") or {})
            if reserved:
                raise ConfigError(f"{where}: the arguments {sorted(reserved)} are the trial's (task_id, trial, state "
                                  "are passed by assay); name the tool's arguments otherwise")

    def _owner_allowed(self, owner: str) -> bool:
        if self.policy.module(owner):
            return True
        file = getattr(sys.modules.get(owner), "__file__", None)
        return bool(file) and bool(self.policy.paths) and self.policy.file(file)  # type: ignore[arg-type]

    def module(self, name: str) -> ModuleType:
        """A fresh copy of module ``name`` for one trial (the copy loaded by the check serves the first)."""
        spare = self._spare.get(name)
        return spare.pop() if spare else _load_module(name)

    def trial_tools(self, task: Task, trial: int) -> TrialTools:
        return TrialTools(task, trial, self)


def _owner(obj: Any) -> str | None:
    """The module that defines ``obj`` (a function, method, class or callable instance)."""
    target = getattr(obj, "__func__", obj)
    if not (inspect.isfunction(target) or inspect.isbuiltin(target) or isinstance(target, type)):
        target = type(target)
    owner = getattr(target, "__module__", None)
    return owner if isinstance(owner, str) else None


def _load_module(name: str) -> ModuleType:
    """Module ``name`` (dotted, or a ``.py`` path) executed afresh into a new module object; ``sys.modules``
    holds it only while it runs (as an import would: dataclasses look it up there). A file runs under a
    name of its own (``assay_tool_STEM``), so that ``tools/json.py`` never stands in for ``json``."""
    if name.endswith(".py"):
        file = Path(name).resolve()
        if not file.is_file():
            raise ImportError(f"no such file {name!r}")
        spec = util.spec_from_file_location(f"assay_tool_{file.stem}", file)
    else:
        if os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())  # as --plugin and python -m find ./module.py
        spec = util.find_spec(name)
        if spec is None:
            raise ImportError(f"no module named {name!r}")
    if spec is None or spec.loader is None:
        raise ImportError(f"{name!r} cannot be loaded as a Python module")
    module = util.module_from_spec(spec)
    with _IMPORTING:
        before = sys.modules.get(spec.name, _MISSING)
        sys.modules[spec.name] = module
        try:
            spec.loader.exec_module(module)
        finally:
            if before is _MISSING:
                sys.modules.pop(spec.name, None)
            else:
                sys.modules[spec.name] = before  # type: ignore[assignment]
    return module


def _plain(value: Any) -> Any:
    """A tool's result as JSON data (an object JSON cannot hold becomes its text), so the trace can be written."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return json.loads(json.dumps(value, default=str))


def _context_names(fn: Any) -> tuple[str, ...]:
    """The trial values ``fn`` declares as parameters (by name)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ()
    return tuple(n for n in CONTEXT if n in params and params[n].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                                         inspect.Parameter.KEYWORD_ONLY))


class TrialTools:
    """One trial's tools: fresh modules, instances and state; canned results as given."""

    def __init__(self, task: Task, trial: int, code: Code | None) -> None:
        self.by_name = {t.name: t for t in task.tools}
        self.stateful = task.state is not None
        self.state: dict[str, Any] = json.loads(json.dumps(task.state)) if task.state is not None else {}
        self.context = {"task_id": task.id, "trial": trial, "state": self.state}
        self._functions: dict[str, Callable[..., Any]] = {}
        self._broken: dict[str, str] = {}
        modules: dict[str, ModuleType] = {}
        instances: dict[int, Any] = {}
        for tool in task.tools:
            if tool.function is None:
                continue
            try:
                self._functions[tool.name] = self._resolve(tool, code, modules, instances)
            except BaseException as exc:  # noqa: BLE001 - the trial's copy failed to load: that tool's calls fail
                self._broken[tool.name] = f"the tool could not be set up for this trial: {type(exc).__name__}: {exc}"

    def _resolve(self, tool: Tool, code: Code | None, modules: dict[str, ModuleType],
                 instances: dict[int, Any]) -> Callable[..., Any]:
        ref = tool.function
        assert ref is not None
        if ":" in ref:
            if code is None:  # pragma: no cover - collect always checks the code first
                raise ConfigError(f"tool {tool.name!r}: code is not allowed")
            module_name, _, attr = ref.rpartition(":")
            if module_name not in modules:
                modules[module_name] = code.module(module_name)
            obj: Any = modules[module_name]
            parts = attr.split(".")
        else:
            obj, parts = (code.registered if code is not None else _REGISTERED)[ref], []
        obj = self._instance(obj, instances)
        for part in parts:
            obj = self._instance(getattr(obj, part), instances)
        if tool.factory:
            obj = obj(**self._kwargs(obj))
            if not callable(obj):
                raise TypeError(f"the factory returned {type(obj).__name__}, not a function")
        return obj  # type: ignore[no-any-return]

    def _instance(self, obj: Any, instances: dict[int, Any]) -> Any:
        """A class on a tool's path becomes this trial's instance of it (one per class per trial)."""
        if not isinstance(obj, type):
            return obj
        if id(obj) not in instances:
            instances[id(obj)] = obj(**self._kwargs(obj))
        return instances[id(obj)]

    def _kwargs(self, fn: Any) -> dict[str, Any]:
        return {n: self.context[n] for n in _context_names(fn)}

    def final_state(self) -> Any:
        """The state as the trial left it (JSON data), or None for a task without state that no tool touched."""
        if not self.stateful and not self.state:
            return None
        return json.loads(json.dumps(self.state, default=str))

    async def run(self, name: str, arguments: Any) -> tuple[Any, str | None, float]:
        """(result, error, milliseconds) of one call."""
        started = time.perf_counter()
        tool = self.by_name.get(name)
        if tool is None:
            known = ", ".join(sorted(self.by_name)) or "none"
            return None, f"unknown tool {name!r} (the task's tools: {known})", 0.0
        if not isinstance(arguments, dict):
            return None, f"arguments are not a JSON object: {str(arguments)[:200]!r}", 0.0
        if name in self._broken:
            return None, self._broken[name], 0.0
        fn = self._functions.get(name)
        if fn is None:
            result, error = canned(tool, arguments)
            return result, error, (time.perf_counter() - started) * 1000
        context = self._kwargs(fn)
        kwargs = {**{k: v for k, v in arguments.items() if k not in context}, **context}
        try:
            if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)):  # noqa: B004
                out = await fn(**kwargs)
            else:  # a worker thread, so that a slow tool does not stall the other trials
                out = await asyncio.to_thread(fn, **kwargs)
                if inspect.isawaitable(out):
                    out = await out
            out, error = _plain(out), None
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too: the agent's to handle
            out, error = None, f"{type(exc).__name__}: {exc}"
        return out, error, (time.perf_counter() - started) * 1000
