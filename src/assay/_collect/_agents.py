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
from ..judge._http import json_client
from ..judge._local import LocalLlama
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


@dataclass(frozen=True, slots=True)
class AgentRequest(JudgeRequest):
    """A judge request carrying what an agent needs beyond the messages."""

    tools: tuple[dict[str, Any], ...] = ()
    task_id: str = ""
    seed: int | None = None


def reply_of(data: Any, where: str) -> dict[str, Any]:
    """A callable's, endpoint's or command's reply as AgentReply data: a string is the text."""
    if isinstance(data, str):
        return {"content": data}
    if isinstance(data, pydantic.BaseModel):
        data = data.model_dump()
    if not isinstance(data, dict):
        raise ProviderError(f"{where}: expected a string or an object with 'content' and/or 'tool_calls', got "
                            f"{type(data).__name__}", retryable=False)
    calls = []
    for i, call in enumerate(data.get("tool_calls") or ()):
        if not isinstance(call, dict):
            raise ProviderError(f"{where}: tool_calls[{i}]: expected an object", retryable=False)
        fn = call.get("function") if isinstance(call.get("function"), dict) else call  # OpenAI's shape too
        if not isinstance(fn.get("name"), str):
            raise ProviderError(f"{where}: tool_calls[{i}].name: expected a string", retryable=False)
        calls.append({"id": call.get("id"), "name": fn["name"], "arguments": fn.get("arguments")})
    content = data.get("content")
    return {"content": content if isinstance(content, str) else "", "tool_calls": calls}


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
        calls = []
        for call in message.get("tool_calls") or ():
            if not isinstance(call, dict):
                continue
            fn = call.get("function") if isinstance(call.get("function"), dict) else {}
            arguments = fn.get("arguments")
            try:
                arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
            except ValueError:
                pass  # kept as text: the tool call is recorded as an error
            calls.append({"id": call.get("id"), "name": str(fn.get("name") or ""), "arguments": arguments})
        usage = reply.get("usage") or {}
        model = reply.get("model") if not isinstance(inner, LocalLlama) else None
        completion = _completion({"content": message.get("content") or "", "tool_calls": calls}, usage,
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


class CommandAgent(Backend):
    """``cmd:COMMAND``: one process per trial, fed one JSON line per agent call; it answers one line."""

    def __init__(self, command: str, *, timeout: float | None = 60.0) -> None:
        argv = shlex.split(command)
        if not argv:
            raise ConfigError("agent 'cmd:': no command given")
        super().__init__(command, backend="cmd", timeout=timeout)
        self.model, self.argv = f"cmd:{command}", argv
        self._procs: dict[tuple[str, int], asyncio.subprocess.Process] = {}

    async def _complete(self, request: JudgeRequest) -> Completion:
        assert isinstance(request, AgentRequest)
        key = (request.task_id, request.repeat)
        proc = self._procs.get(key)
        if proc is None or proc.returncode is not None:
            try:
                proc = self._procs[key] = await asyncio.create_subprocess_exec(
                    *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE, limit=2**24)
            except OSError as exc:
                raise ProviderError(f"cannot start {self.argv[0]!r}: {exc.strerror}", backend="cmd",
                                    model=self.name, status=404) from None  # every call would fail alike
        line = json.dumps({"messages": [dict(m) for m in request.messages], "tools": list(request.tools),
                           "task_id": request.task_id, "trial": request.repeat}) + "\n"
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(line.encode())
            await proc.stdin.drain()
            out = await proc.stdout.readline()
        except asyncio.CancelledError:
            await self.finish(request.task_id, request.repeat)  # a half-read reply would desynchronise it
            raise
        except (BrokenPipeError, ConnectionResetError):
            out = b""
        if not out:
            err = (await proc.stderr.read())[-500:].decode("utf-8", "replace").strip() if proc.stderr else ""
            await self.finish(request.task_id, request.repeat)
            raise ProviderError(f"the command ended without a reply (exit {proc.returncode})"
                                + (f": {err}" if err else ""), backend="cmd", model=self.name, retryable=False)
        try:
            data = json.loads(out)
        except ValueError:
            raise ProviderError(f"reply is not one JSON line: {out[:200]!r}", backend="cmd", model=self.name,
                                retryable=False) from None
        return _completion(reply_of(data, f"agent {self.model}"), data.get("usage") if isinstance(data, dict) else None)

    async def finish(self, task_id: str, trial: int) -> None:
        """End the process of one trial (its stdin closes; killed if it lingers)."""
        proc = self._procs.pop((task_id, trial), None)
        if proc is None or proc.returncode is not None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 2.0)
        except TimeoutError:
            proc.kill()
            await proc.wait()


def make_agent(spec: Any, **options: Any) -> Any:
    """The agent stack for ``--agent SPEC`` (a string, a function or a Backend); options as make_judge's.

    Only chat-model agents are cached by default: assay cannot see when a function or an endpoint
    changes (an explicit ``cache=`` still caches them); a command is never cached, since it holds
    per-trial state that a replayed reply would skip.
    """
    options = {"reasks": 0, **options}  # an agent's reply is not a verdict: nothing to re-ask
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
        backend = CommandAgent(spec[4:].strip(), timeout=timeout or 60.0)
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

