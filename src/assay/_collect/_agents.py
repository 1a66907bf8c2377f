"""The agents ``assay collect`` runs, each a judge :class:`~assay.judge.Backend` so that the
judge stack (cache, retries, rate and concurrency limits, breaker, budget, accounting) wraps
them unchanged.

One agent call is one :class:`AgentRequest` (the conversation so far and the task's tools) whose
"verdict" is an :class:`AgentReply`: the reply text and the tool calls it asks for. The kinds:

- a chat model behind a judge backend (``openai:``, ``openai-compatible:MODEL@URL``, ``ollama:``,
  ``local:PATH.gguf``): the request goes out with the tools as OpenAI function tools;
- ``http://...``: POST ``{"messages", "tools", "task_id", "trial"}``, reply ``{"content", "tool_calls",
  "usage"}``;
- ``module:function``: called with the messages (and ``tools=`` when it takes it), sync or async;
- ``cmd:COMMAND``: one process per trial; one JSON line in per agent call, one JSON line out.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import json
import shlex
from dataclasses import dataclass
from typing import Any

import pydantic

from ..errors import ConfigError, ProviderError
from ..judge import Backend, Completion, JudgeRequest, OpenAICompatible, make_judge
from ..judge._factory import _BACKENDS, ALIASES
from ..judge._http import DEFAULT_MAX_REPLY, json_client
from ..judge._local import LocalLlama
from ..model._messages import json_type
from ._tasks import import_callable


class ToolCallOut(pydantic.BaseModel):
    """A tool call the agent asks for."""

    id: str | None = None
    name: str
    arguments: Any = None
    """An object; a string that is not JSON is kept as given, and the call is an error."""


class AgentReply(pydantic.BaseModel):
    """One agent call's reply: text, tool calls, or both."""

    content: str = ""
    tool_calls: list[ToolCallOut] = []
    truncated: dict[str, int] = {}
    """What the bounds left out of the reply as sent: ``tool_calls`` (calls past :data:`MAX_CALLS`),
    ``arguments`` (calls whose arguments were over :data:`MAX_ARGUMENTS`), ``content`` (characters)."""


MAX_CALLS = 64
"""Most tool calls kept from one agent reply; the rest are counted, never run."""
MAX_ARGUMENTS = 64 * 1024
"""Most bytes of one tool call's arguments (as JSON); larger ones are dropped and the call is an error."""
MAX_CONTENT = 256 * 1024
"""Most characters of one reply's text kept; the rest are counted."""


@dataclass(frozen=True, slots=True)
class AgentRequest(JudgeRequest):
    """A judge request carrying what an agent needs beyond the messages."""

    tools: tuple[dict[str, Any], ...] = ()
    task_id: str = ""
    seed: int | None = None


def _bounded_calls(raw: Any, where: str, *, strict: bool) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The first :data:`MAX_CALLS` tool calls of a reply as ``{"id", "name", "arguments"}`` (flat or
    OpenAI's ``{"function": {...}}`` shape), arguments over :data:`MAX_ARGUMENTS` dropped; and the counts
    of what was left out. ``strict``: a malformed call is an error (else it is skipped)."""
    if not isinstance(raw, (list, tuple)):
        if strict:
            raise ProviderError(f"{where}: tool_calls: expected a list, got {type(raw).__name__}", retryable=False)
        return [], {}
    calls: list[dict[str, Any]] = []
    dropped: dict[str, int] = {}
    if len(raw) > MAX_CALLS:
        dropped["tool_calls"] = len(raw) - MAX_CALLS
    for i, call in enumerate(raw[:MAX_CALLS]):
        if not isinstance(call, dict):
            if strict:
                raise ProviderError(f"{where}: tool_calls[{i}]: expected an object", retryable=False)
            continue
        fn = call.get("function") if isinstance(call.get("function"), dict) else call  # OpenAI's shape too
        name = fn.get("name")
        if not isinstance(name, str):
            if strict:
                raise ProviderError(f"{where}: tool_calls[{i}].name: expected a string", retryable=False)
            name = str(name or "")
        arguments = fn.get("arguments")
        size = len(arguments) if isinstance(arguments, str) else \
            len(json.dumps(arguments, default=str)) if arguments is not None else 0
        if size > MAX_ARGUMENTS:
            dropped["arguments"] = dropped.get("arguments", 0) + 1
            arguments = f"<{size} bytes of arguments, over the {MAX_ARGUMENTS // 1024} KiB limit: dropped>"
        elif isinstance(arguments, str) and not strict:
            try:
                arguments = json.loads(arguments)
            except ValueError:
                pass  # kept as text: the tool call is recorded as an error
        calls.append({"id": call.get("id") if isinstance(call.get("id"), str) else None, "name": name[:256],
                      "arguments": arguments})
    return calls, dropped


def _bounded_reply(content: Any, calls: list[dict[str, Any]], dropped: dict[str, int]) -> dict[str, Any]:
    text = content if isinstance(content, str) else ""
    if len(text) > MAX_CONTENT:
        dropped = {**dropped, "content": len(text) - MAX_CONTENT}
        text = text[:MAX_CONTENT]
    return {"content": text, "tool_calls": calls, **({"truncated": dropped} if dropped else {})}


def reply_of(data: Any, where: str) -> dict[str, Any]:
    """A callable's, endpoint's or command's reply as AgentReply data (a string is the text), within
    the bounds (:data:`MAX_CALLS`, :data:`MAX_ARGUMENTS`, :data:`MAX_CONTENT`)."""
    if isinstance(data, str):
        return _bounded_reply(data, [], {})
    if isinstance(data, pydantic.BaseModel):
        data = data.model_dump()
    if not isinstance(data, dict):
        raise ProviderError(f"{where}: expected a string or an object with 'content' and/or 'tool_calls', got "
                            f"{type(data).__name__}", retryable=False)
    if "content" not in data and "tool_calls" not in data:  # e.g. `cat` echoing the request: not an answer
        fields = ", ".join(repr(k) for k in list(data)[:8])
        raise ProviderError(f"{where}: expected a string or an object with 'content' and/or 'tool_calls', got an "
                            f"object with {fields or 'no fields'}", retryable=False)
    content = data.get("content")
    if content is not None and not isinstance(content, str):
        raise ProviderError(f"{where}: 'content' must be a string (the answer), got {json_type(content)}",
                            retryable=False)
    calls, dropped = _bounded_calls(data.get("tool_calls") or (), where, strict=True)
    return _bounded_reply(content, calls, dropped)


def _completion(data: dict[str, Any], usage: Any, model: str | None = None) -> Completion:
    usage = usage if isinstance(usage, dict) else {}
    cost = usage.get("cost_usd")
    return Completion(text=json.dumps(data), structured=True, model=model,
                      input_tokens=int(usage.get("input_tokens") or usage.get("prompt_tokens") or 0),
                      output_tokens=int(usage.get("output_tokens") or usage.get("completion_tokens") or 0),
                      cost_usd=float(cost) if isinstance(cost, (int, float)) else None)


class ChatAgent(Backend):
    """A chat model behind a judge backend, asked with the task's tools."""

    def __init__(self, inner: Backend) -> None:
        if not isinstance(inner, (OpenAICompatible, LocalLlama)):
            raise ConfigError(f"agent {inner.model!r}: only OpenAI-compatible chat endpoints (openai:, "
                              "openai-compatible:, ollama:, ...) and local:PATH.gguf can be agents")
        super().__init__(inner.name, backend=inner.backend, timeout=inner.timeout, price=inner.price)
        self.inner, self.model = inner, inner.model
        self.single_slot, self.elastic = inner.single_slot, inner.elastic

    @property
    def identity(self) -> dict[str, Any]:
        return {**self.inner.identity, "role": "agent"}

    async def _complete(self, request: JudgeRequest) -> Completion:
        assert isinstance(request, AgentRequest)
        inner = self.inner
        params: dict[str, Any] = {"messages": [dict(m) for m in request.messages],
                                  "temperature": request.temperature}
        max_tokens = min(filter(None, (request.max_tokens, inner.max_tokens)), default=None)
        if max_tokens:
            params["max_tokens"] = max_tokens
        if request.seed is not None:
            params["seed"] = request.seed
        if isinstance(inner, LocalLlama):  # llama.cpp takes tools only with a jinja chat template: none here
            reply = await asyncio.to_thread(inner._run, params)
            if isinstance(reply, dict) and "error" in reply:
                raise inner._error(reply["error"])
        else:
            params["model"] = inner.name
            if request.tools:
                params["tools"] = list(request.tools)
            reply = await inner._client.get().post(inner._path(), params)
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not choices or not isinstance(choices[0], dict):
            raise ProviderError(f"reply is not a chat completion: {str(reply)[:200]!r}", backend=self.backend,
                                model=self.name, body=str(reply)[:2000], retryable=True)
        message = choices[0].get("message") or {}
        if not isinstance(message, dict):
            message = {}
        calls, dropped = _bounded_calls(message.get("tool_calls") or (), f"agent {self.name}", strict=False)
        usage = reply.get("usage") or {}
        model = reply.get("model") if not isinstance(inner, LocalLlama) else None
        completion = _completion(_bounded_reply(message.get("content"), calls, dropped), usage,
                                 f"{inner.backend}:{model}" if model else None)
        return completion if not isinstance(inner, LocalLlama) else dataclasses.replace(completion, cost_usd=0.0)


class CallableAgent(Backend):
    """``module:function`` (or a function): ``f(messages)`` or ``f(messages, tools=...)``, sync or async."""

    def __init__(self, fn: Any, *, name: str | None = None, timeout: float | None = None) -> None:
        super().__init__(name or getattr(fn, "__qualname__", repr(fn)), backend="python", timeout=timeout)
        self.fn = fn
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]  # no signature: takes nothing by name
        self._takes_tools = "tools" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())

    async def _complete(self, request: JudgeRequest) -> Completion:
        assert isinstance(request, AgentRequest)
        messages = [dict(m) for m in request.messages]
        kwargs = {"tools": list(request.tools)} if self._takes_tools else {}
        if inspect.iscoroutinefunction(self.fn):
            out = await self.fn(messages, **kwargs)
        else:  # a worker thread, so that a slow function does not stall the other trials
            out = await asyncio.to_thread(self.fn, messages, **kwargs)
            if inspect.isawaitable(out):
                out = await out
        usage = out.get("usage") if isinstance(out, dict) else None
        return _completion(reply_of(out, f"agent {self.name}"), usage)


class HttpAgent(Backend):
    """An HTTP endpoint: POST the conversation so far as JSON, read the reply as JSON (docs/collect.md)."""

    def __init__(self, url: str, *, timeout: float | None = 60.0, api_key: str | None = None) -> None:
        super().__init__(url, backend="http", timeout=timeout)
        self.model = url
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        base, _, path = url.partition("//")[2].partition("/")
        self._base, self._route = f"{url.partition('//')[0]}//{base}", f"/{path}"
        from ..judge._base import LoopLocal
        self._client = LoopLocal(lambda: json_client(self._base, headers=headers, timeout=timeout, backend="http",
                                                     model=url), lambda c: c.close())

    @property
    def identity(self) -> dict[str, Any]:
        return {"backend": "http", "url": self.name}

    async def _complete(self, request: JudgeRequest) -> Completion:
        assert isinstance(request, AgentRequest)
        body = {"messages": [dict(m) for m in request.messages], "tools": list(request.tools),
                "task_id": request.task_id, "trial": request.repeat}
        out = await self._client.get().post(self._route, body)
        return _completion(reply_of(out, f"agent {self.name}"), out.get("usage") if isinstance(out, dict) else None)


SAFE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "TEMP", "TMP",
            "VIRTUAL_ENV", "SYSTEMROOT", "SYSTEMDRIVE", "COMSPEC", "PATHEXT", "WINDIR")
"""What a ``cmd:`` agent inherits from assay's environment (and ``LC_*``); anything else, API keys
included, only when the user names it (``--agent-env NAME``)."""
STDERR_TAIL = 8 * 1024
"""Bytes of a command's stderr kept (its last ones) for the trace; the rest is counted."""
_GRACE = 2.0
"""Seconds a command is given to exit after its stdin closes, before its process group is killed."""


def command_env(names: tuple[str, ...] | list[str] = ()) -> dict[str, str]:
    """A ``cmd:`` agent's environment: :data:`SAFE_ENV` and ``LC_*`` from assay's, plus the names given."""
    import os

    keep = {k: v for k, v in os.environ.items() if k in SAFE_ENV or k.startswith("LC_")}
    for name in names:
        if name not in os.environ:
            raise ConfigError(f"--agent-env {name}: no such environment variable is set")
        keep[name] = os.environ[name]
    return keep


@dataclass
class _Process:
    """One trial's running command: its stderr drained (the tail kept, the rest counted) while it runs."""

    proc: asyncio.subprocess.Process
    tail: bytearray = dataclasses.field(default_factory=bytearray)
    stderr_bytes: int = 0
    drain: asyncio.Task[None] | None = None

    async def read_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        while chunk := await stream.read(65536):
            self.stderr_bytes += len(chunk)
            self.tail += chunk
            if len(self.tail) > STDERR_TAIL:
                del self.tail[:-STDERR_TAIL]

    def stderr(self) -> dict[str, Any] | None:
        """``{"tail", "bytes"}`` for the trace (the tail redacted), or None when it wrote nothing."""
        if not self.stderr_bytes:
            return None
        from .._secrets import redact
        return {"tail": redact(bytes(self.tail).decode("utf-8", "replace")), "bytes": self.stderr_bytes}

    def kill(self) -> None:
        """SIGKILL its whole process group (what it spawned too); nothing if it is gone."""
        import os
        import signal

        pid = self.proc.pid
        if hasattr(os, "killpg"):
            try:
                if os.getpgid(pid) != os.getpgrp():  # started in a session of its own; never assay's group
                    os.killpg(pid, signal.SIGKILL)
                    return
            except (ProcessLookupError, PermissionError):
                pass  # the leader is gone (and reaped): its group's pgid is still its pid
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            return
        with contextlib.suppress(ProcessLookupError):  # no process groups (Windows): the process alone
            self.proc.kill()


class CommandAgent(Backend):
    """``cmd:COMMAND``: one process per trial, fed one JSON line per agent call; it answers one line.

    Bounded whatever it does: it runs in a session of its own with a minimal environment
    (:func:`command_env`); its stderr is drained as it runs (the last :data:`STDERR_TAIL` bytes
    kept for the trace, the rest counted); a reply line over ``max_reply`` bytes is refused; a
    timeout, an interrupt or the trial's end kills its process group, so nothing it spawned
    outlives the trial.
    """

    def __init__(self, command: str, *, timeout: float | None = 60.0, env: tuple[str, ...] | list[str] = (),
                 max_reply: int = DEFAULT_MAX_REPLY) -> None:
        argv = shlex.split(command)
        if not argv:
            raise ConfigError("agent 'cmd:': no command given")
        super().__init__(command, backend="cmd", timeout=timeout)
        self.model, self.argv, self.max_reply = f"cmd:{command}", argv, max_reply
        self.env = command_env(env)
        self._procs: dict[tuple[str, int], _Process] = {}
        self.stderr: dict[tuple[str, int], dict[str, Any]] = {}
        """What each ended trial's process wrote on stderr (``_Process.stderr``), taken by the trial."""

    @property
    def identity(self) -> dict[str, Any]:
        return {"backend": "cmd", "command": self.name}

    async def _start(self, key: tuple[str, int]) -> _Process:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, limit=self.max_reply + 1, env=self.env, start_new_session=True)
        except OSError as exc:
            raise ProviderError(f"cannot start {self.argv[0]!r}: {exc.strerror}", backend="cmd",
                                model=self.name, status=404) from None  # every call would fail alike
        run = self._procs[key] = _Process(proc)
        run.drain = asyncio.ensure_future(run.read_stderr())
        return run

    async def _complete(self, request: JudgeRequest) -> Completion:
        assert isinstance(request, AgentRequest)
        key = (request.task_id, request.repeat)
        run = self._procs.get(key)
        if run is None or run.proc.returncode is not None:
            if run is not None:
                await self.finish(*key)
            run = await self._start(key)
        proc = run.proc
        line = json.dumps({"messages": [dict(m) for m in request.messages], "tools": list(request.tools),
                           "task_id": request.task_id, "trial": request.repeat}) + "\n"
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(line.encode())
            await proc.stdin.drain()
            out = await proc.stdout.readline()
        except asyncio.CancelledError:  # a timeout or an interrupt: a half-read reply would desynchronise it
            await self.finish(*key, kill=True)
            raise
        except ValueError:  # the line is over the limit (asyncio says so with a ValueError)
            await self.finish(*key, kill=True)
            raise ProviderError(f"reply over {self.max_reply / 2**20:g} MiB (one line): refused", backend="cmd",
                                model=self.name, retryable=False) from None
        except (BrokenPipeError, ConnectionResetError):
            out = b""
        if not out:
            await self.finish(*key, kill=True)
            err = (self.stderr.get(key) or {}).get("tail", "")[-500:].strip()
            raise ProviderError(f"the command ended without a reply (exit {proc.returncode})"
                                + (f": {err}" if err else ""), backend="cmd", model=self.name, retryable=False)
        try:
            data = json.loads(out)
        except ValueError:
            raise ProviderError(f"reply is not one JSON line: {out[:200]!r}", backend="cmd", model=self.name,
                                retryable=False) from None
        return _completion(reply_of(data, f"agent {self.model}"), data.get("usage") if isinstance(data, dict) else None)

    async def finish(self, task_id: str, trial: int, *, kill: bool = False) -> None:
        """End the process of one trial: its stdin closes, it has :data:`_GRACE` seconds to exit (none with
        ``kill``), then its process group is killed either way; what it wrote on stderr goes to ``stderr``."""
        run = self._procs.pop((task_id, trial), None)
        if run is None:
            return
        proc = run.proc
        try:
            if not kill and proc.returncode is None and proc.stdin is not None:
                proc.stdin.close()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(proc.wait()), _GRACE)
        finally:
            run.kill()  # the group: what it spawned dies with it, whether or not it exited by itself
            await self._reap(run)
            info = run.stderr()
            if info is not None:
                self.stderr[(task_id, trial)] = info

    @staticmethod
    async def _reap(run: _Process) -> None:
        """Wait for the killed process and the end of its pipes; a pipe still held open (by a process that
        left the group) is closed by force rather than waited for."""
        proc = run.proc
        if proc.stdin is not None:
            proc.stdin.close()
        pending = [asyncio.ensure_future(proc.wait())] + ([run.drain] if run.drain is not None else [])
        try:
            _, late = await asyncio.wait(pending, timeout=_GRACE)
        except asyncio.CancelledError:
            late = set(pending)
        # closed here, not when its last pipe ends: the loop may be gone by then (a wait that found the
        # process already exited returns before its pipes end), and a pipe still held open is not waited for
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()
        for task in late:
            task.cancel()

    def kill_all(self) -> None:
        """Kill every command still running (the collection is ending, however it ends): synchronous."""
        for run in list(self._procs.values()):
            run.kill()

    def take_stderr(self, task_id: str, trial: int) -> dict[str, Any] | None:
        return self.stderr.pop((task_id, trial), None)


def make_agent(spec: Any, **options: Any) -> Any:
    """The agent stack for ``--agent SPEC`` (a string, a function or a Backend); options as make_judge's.

    ``env``: names of environment variables a ``cmd:`` agent also gets (else only :data:`SAFE_ENV`).
    Only chat-model agents are cached by default: assay cannot see when a function or an endpoint
    changes (an explicit ``cache=`` still caches them); a command is never cached, since it holds
    per-trial state that a replayed reply would skip.
    """
    options = {"reasks": 0, **options}  # an agent's reply is not a verdict: nothing to re-ask
    env = tuple(options.pop("env", None) or ())
    if env and not (isinstance(spec, str) and spec.startswith("cmd:")):
        raise ConfigError(f"--agent-env {env[0]}: only a cmd: agent gets an environment from assay")
    if isinstance(spec, str) and spec.strip() and not spec.startswith(("http://", "https://", "cmd:")) \
            and not _is_callable_ref(spec):
        return _answering(make_judge(spec, **options))
    timeout, api_key = options.pop("timeout", None), options.pop("api_key", None)
    options.pop("budget_usd", None)  # assay has no price for them: a dollar budget covers the model calls
    if isinstance(spec, Backend):
        backend: Backend = spec
    elif callable(spec):
        backend = CallableAgent(spec, timeout=timeout)
    elif not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"agent {spec!r}: expected a model string, http://URL, module:function or cmd:COMMAND")
    elif spec.startswith(("http://", "https://")):
        backend = HttpAgent(spec, timeout=timeout or 60.0, api_key=api_key)
    elif spec.startswith("cmd:"):
        backend = CommandAgent(spec[4:].strip(), timeout=timeout or 60.0, env=env)
        options["cache"] = False
    else:
        backend = CallableAgent(import_callable(spec, "agent"), name=spec, timeout=timeout)
    options.setdefault("cache", False)
    return make_judge(backend, **options)


def _answering(judge: Any) -> Any:
    """*judge* (a composed stack) with its backend asked as an agent: the stack's layers stay as built."""
    layer = judge
    for _ in range(32):
        inner = getattr(layer, "inner", None)
        if isinstance(inner, Backend):
            layer.inner = ChatAgent(inner)
            return judge
        layer = inner
    raise ConfigError(f"agent {getattr(judge, 'model', judge)!r}: no chat backend to ask")


def _is_callable_ref(spec: str) -> bool:
    """``module.path:function`` or ``file.py:function``, as opposed to ``provider:model``."""
    head, _, tail = spec.rpartition(":")
    if head.endswith(".py"):
        return True
    first = spec.partition(":")[0].lower()
    if _BACKENDS.get(ALIASES.get(first, first)) is not None or _BACKENDS.get(first) is not None:
        return False
    return bool(head) and all(p.isidentifier() for p in head.split(".")) and tail.isidentifier()


def make_user(spec: Any, **options: Any) -> Any:
    """The simulated user: any judge (its replies are verdicts of :class:`~._user.UserTurn`)."""
    return make_judge(spec, **options)

