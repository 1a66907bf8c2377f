"""Running an agent on tasks: trials, conversations, tool calls, and the trace of each.

Each trial is one conversation: the task's user turns (then a simulated user's, with ``user``),
each answered by the agent, whose tool calls are run from the trial's own tools (``_tools``: fresh
modules, instances and state per trial) and fed back until it replies with text. Agent calls go through the judge stack (``make_agent``), so concurrency, rate
limits, retries, the breaker, the budget and the cache are the judge's; a trial's calls carry its
index as the request's ``repeat``, so trials of one task never share a cached reply.

Faults are kept apart: an agent call that fails makes a ``failed`` trace carrying the error; a
simulated user that fails or breaks its role makes a simulator fault (``Collected.simulator_errors``),
which is never scored as the agent's. A harness fault (the simulator's, or an agent unreachable
before any reply) is marked ``metadata.harness_fault`` with ``harness_error``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..errors import ConfigError
from ..model import Expected, ToolCall, Trace, Turn, Usage
from ..model._options import CONCURRENCY
from ._agents import STDERR_TAIL, AgentReply, AgentRequest, CommandAgent
from ._tasks import Task
from ._tools import Code, CodePolicy
from ._user import UserTurn, role_break, user_request

MAX_TURNS = 10
"""Most user turns of a simulated conversation when the task gives no ``max_turns``."""
MAX_STEPS = 10
"""Most agent calls in one turn (each tool round is one): a model looping on tools is stopped."""
MAX_TRIAL_CALLS = 256
"""Most tool calls run in one trial: past it the calls are counted, not run, and the trial ends."""
KEY = "collect.agent@1"
HARNESS_FAULT, HARNESS_ERROR = "harness_fault", "harness_error"
"""Metadata of a trial the harness failed (the simulated user broke its role, the agent was unreachable before
any reply): ``assay run`` keeps such trials out of the statistics, counted with the reason."""


@dataclass(frozen=True)
class Settings:
    """What every trial of one collection shares."""

    trials: int = 1
    temperature: float = 1.0
    """Sampling temperature of the agent (and of the simulated user)."""
    seed: int | None = None
    """Base seed: trial ``t`` samples with ``seed + t`` where the provider takes a seed."""
    max_turns: int = MAX_TURNS
    max_steps: int = MAX_STEPS
    max_tokens: int | None = None
    retry_failed: int = 0
    """Times a trial whose agent failed (an error, a timeout) is run again, afresh, before it counts as failed."""
    max_tool_calls: int = MAX_TRIAL_CALLS


class NotCollected(Exception):
    """A call of the trial was not made (budget reached, breaker open): nobody's fault, collected on a rerun."""


@dataclass
class Collected:
    """What ``collect`` returns: the agent's traces (completed and failed) and the simulator faults apart."""

    traces: list[Trace] = field(default_factory=list)
    simulator_errors: list[Trace] = field(default_factory=list)
    interrupted: bool = False
    resumed: int = 0
    """Trials taken from an interrupted earlier run instead of being collected again."""
    not_collected: list[tuple[str, int, str]] = field(default_factory=list)
    """(task id, trial, why) of the trials whose calls were not made (budget reached, breaker open)."""

    def __iter__(self) -> Any:  # so that ``assay.evaluate(collected)`` scores the agent's traces
        return iter(self.traces)

    def __len__(self) -> int:
        return len(self.traces)

    @property
    def failed(self) -> list[Trace]:
        return [t for t in self.traces if t.status == "failed"]


def trial_key(task_id: str, trial: int) -> str:
    return f"{task_id}#{trial}"


def fingerprint(tasks: list[Task], agent: Any, user: Any, settings: Settings) -> str:
    """What makes a collection the same one again (a journal of finished trials is reused only for it):
    the tasks (their tools included), the settings, and who answers: the agent's and the simulated
    user's identity (model name, endpoint URL, command), not only their names."""
    material = {"tasks": [t.model_dump() for t in tasks], "agent": identity(agent), "user": identity(user),
                "settings": settings.__dict__}
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()


def identity(judge: Any) -> dict[str, Any] | None:
    """Who answers behind a judge stack: its model and its backend's identity (endpoint, command)."""
    if judge is None:
        return None
    layer = judge
    for _ in range(32):
        inner = getattr(layer, "inner", None)
        if inner is None:
            break
        layer = inner
    found = getattr(layer, "identity", None)
    return {"model": getattr(judge, "model", repr(judge)), "identity": found if isinstance(found, dict) else None}


def _tool_message(call_id: str, result: Any, error: str | None) -> dict[str, Any]:
    content = json.dumps({"error": error}) if error is not None else \
        result if isinstance(result, str) else json.dumps(result, default=str)
    return {"role": "tool", "tool_call_id": call_id, "content": content}


async def run_trial(task: Task, trial: int, agent: Any, user: Any, settings: Settings,
                    code: Code | None = None) -> tuple[Trace, str | None]:
    """One conversation; returns its trace and the simulator fault (None when the user kept its role).

    A trial whose agent failed is run again, afresh, up to ``settings.retry_failed`` times; the trace
    kept is the last attempt's, with ``metadata.collect.attempts`` (how many ran) and ``failed_attempts``
    (the earlier attempts' errors).
    """
    code = code if code is not None else Code([task], CodePolicy())
    failures: list[str] = []
    while True:
        trace, fault = await _Trial(task, trial, agent, user, settings, code).run()
        if trace.status != "failed" or len(failures) >= settings.retry_failed:
            break
        failures.append(str(trace.metadata.get("error")))
    if failures:
        trace.metadata["collect"]["attempts"] = len(failures) + 1
        trace.metadata["collect"]["failed_attempts"] = failures
    return trace, fault


class _Trial:
    """The state of one conversation: the agent's messages, the user's visible transcript, the turns."""

    def __init__(self, task: Task, trial: int, agent: Any, user: Any, settings: Settings, code: Code) -> None:
        self.task, self.trial, self.agent, self.user, self.settings = task, trial, agent, user, settings
        self.tools = code.trial_tools(task, trial)
        self.schemas = tuple(t.schema() for t in task.tools)
        self.seed = None if settings.seed is None else settings.seed + trial
        digest = hashlib.sha256(json.dumps([task.system, self.schemas], default=str).encode()).hexdigest()[:16]
        self.key = f"{KEY}:{task.id}:{digest}:seed={self.seed}"
        inline = [m["content"] for m in task.input if m["role"] == "system"] if isinstance(task.input, list) else []
        self.system = task.system or (inline[0] if inline else None)
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": self.system}] if self.system else []
        self.scripted = task.user_messages()
        self.max_turns = task.max_turns or (settings.max_turns if user is not None else len(self.scripted))
        self.turns: list[Turn] = []
        self.transcript: list[tuple[str, str]] = []
        self.user_usage = {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
        self.n_calls = 0
        self.truncated: dict[str, int] = {}
        """What the bounds on replies left out of this trial (``AgentReply.truncated``, summed)."""

    async def run(self) -> tuple[Trace, str | None]:
        command = _command(self.agent)
        try:
            stop, error, fault = await self._converse()
        finally:
            if command is not None:
                await command.finish(self.task.id, self.trial)  # type: ignore[arg-type]
        task = self.task
        collect: dict[str, Any] = {"agent": self.agent.model, "user": getattr(self.user, "model", None),
                                   "temperature": self.settings.temperature, "seed": self.seed}
        if self.user is not None:
            collect["user_usage"] = self.user_usage
        stderr = command.take_stderr(self.task.id, self.trial) if command is not None else None  # type: ignore[arg-type]
        if stderr is not None:
            collect["stderr"] = stderr
            if stderr["bytes"] > STDERR_TAIL:  # the tail is the last STDERR_TAIL bytes
                self.truncated["stderr_bytes"] = stderr["bytes"] - STDERR_TAIL
        meta: dict[str, Any] = {**task.metadata, **_about(task), "stop_reason": "simulator_error" if fault else stop,
                                "collect": collect}
        if self.truncated:
            meta["truncated"] = self.truncated
        if error is not None:
            meta["error"] = error
        if fault is not None:
            meta["simulator_error"] = fault
            meta[HARNESS_FAULT], meta[HARNESS_ERROR] = "simulator", fault
        elif error is not None and _unreachable(error) and not any(t.output or t.tool_calls for t in self.turns):
            meta[HARNESS_FAULT], meta[HARNESS_ERROR] = "unreachable", error  # nothing is known about the agent
        status = "failed" if error is not None else "partial" if fault is not None else "completed"
        trace = Trace(id=trial_key(task.id, self.trial), task_id=task.id, trial=self.trial,  # type: ignore[arg-type]
                      system=self.system, turns=self.turns, expected=_expected(task), status=status,
                      state=self.tools.final_state(), metadata=meta)
        return trace, fault

    async def _converse(self) -> tuple[str, str | None, str | None]:
        """(stop reason, agent error, simulator fault)."""
        while True:
            n = len(self.turns)
            stop: str | None = None
            if n < len(self.scripted):
                text: str | None = self.scripted[n]
            elif self.user is None:
                return "scripted", None, None
            elif n >= self.max_turns:
                return "max_turns", None, None
            else:
                text, stop, fault = await self._ask_user()
                if text is None:
                    return stop or "simulator_error", None, fault
            self.messages.append({"role": "user", "content": text})
            self.transcript.append(("user", text))
            turn, error = await self._agent_turn(text)
            self.turns.append(turn)
            if error is not None:
                return "agent_error", error, None
            self.transcript.append(("assistant", turn.output or ""))
            if stop is not None:  # the user's last word ("Yes, go ahead." + goal_met) is answered, then it ends
                return stop, None, None

    async def _ask_user(self) -> tuple[str | None, str | None, str | None]:
        """(message, stop, fault): the simulated user's next message (with the stop it came with, which ends
        the conversation once the agent has answered it), or (None, stop, None), or (None, None, fault).
        A message that comes with ``gave_up`` is not sent: the user has left."""
        verdict = await self.user.judge(user_request(self.task, self.transcript, trial=self.trial,
                                                     temperature=self.settings.temperature))
        if verdict.skipped:
            raise NotCollected(f"the simulated user's call was not made: {verdict.error}")
        self.user_usage["input_tokens"] += verdict.input_tokens
        self.user_usage["output_tokens"] += verdict.output_tokens
        self.user_usage["cost_usd"] += verdict.cost_usd or 0.0
        if verdict.error is not None:
            return None, None, f"the simulated user's call failed: {verdict.error}"
        move: UserTurn = verdict.parsed  # type: ignore[assignment]
        broke = role_break(move, self.task, self.transcript[-1][1] if self.transcript else None)
        if broke is not None:
            return None, None, f"the simulated user broke its role: {broke}"
        message = move.message.strip()
        if move.stop == "gave_up" or (move.stop != "continue" and not message):
            return None, move.stop, None
        return message, None if move.stop == "continue" else move.stop, None

    async def _agent_turn(self, text: str) -> tuple[Turn, str | None]:
        """The agent's answer to one user message: calls until it replies with text, tools run between."""
        calls: list[ToolCall] = []
        tokens_in = tokens_out = 0
        cost: float | None = None
        latency = 0.0
        for _ in range(self.settings.max_steps):
            request = AgentRequest(messages=tuple(self.messages), schema=AgentReply, key=self.key, repeat=self.trial,
                                   temperature=self.settings.temperature, max_tokens=self.settings.max_tokens,
                                   tools=self.schemas, task_id=self.task.id, seed=self.seed)  # type: ignore[arg-type]
            verdict = await self.agent.judge(request)
            if verdict.skipped:
                raise NotCollected(f"the agent's call was not made: {verdict.error}")
            tokens_in += verdict.input_tokens
            tokens_out += verdict.output_tokens
            if verdict.cost_usd is not None:
                cost = (cost or 0.0) + verdict.cost_usd
            latency += verdict.latency_s * 1000
            usage = _usage(tokens_in, tokens_out, cost)
            if verdict.error is not None:
                return Turn(input=text, tool_calls=calls, usage=usage, latency_ms=latency), f"agent: {verdict.error}"
            reply: AgentReply = verdict.parsed  # type: ignore[assignment]
            for what, n in reply.truncated.items():
                self.truncated[what] = self.truncated.get(what, 0) + n
            if not reply.tool_calls:
                self.messages.append({"role": "assistant", "content": reply.content})
                return Turn(input=text, output=reply.content, tool_calls=calls, usage=usage, latency_ms=latency), None
            room = self.settings.max_tool_calls - self.n_calls
            if len(reply.tool_calls) > room:
                self.truncated["tool_calls"] = self.truncated.get("tool_calls", 0) + len(reply.tool_calls) - room
                reply.tool_calls = reply.tool_calls[:room]
            if not reply.tool_calls:
                return Turn(input=text, tool_calls=calls, usage=usage, latency_ms=latency), \
                    f"agent: over {self.settings.max_tool_calls} tool calls in one trial (the rest were not run)"
            self.n_calls += len(reply.tool_calls)
            latency += await self._run_tools(reply, calls)
        return Turn(input=text, tool_calls=calls, usage=_usage(tokens_in, tokens_out, cost), latency_ms=latency), \
            f"agent: no reply after {self.settings.max_steps} calls (still calling tools)"

    async def _run_tools(self, reply: AgentReply, calls: list[ToolCall]) -> float:
        """Run the tool calls of ``reply``, recording them in ``calls`` and answering them in the messages;
        returns the milliseconds they took."""
        asked = []
        for i, call in enumerate(reply.tool_calls):
            arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(
                call.arguments if call.arguments is not None else {})
            asked.append({"id": call.id or f"call_{len(calls) + i}", "type": "function",
                          "function": {"name": call.name, "arguments": arguments}})
        self.messages.append({"role": "assistant", "content": reply.content or None, "tool_calls": asked})
        spent = 0.0
        for call, spec in zip(reply.tool_calls, asked):
            arguments = {} if call.arguments is None else call.arguments
            result, error, ms = await self.tools.run(call.name, arguments)
            spent += ms
            calls.append(ToolCall(name=call.name, arguments=arguments if isinstance(arguments, dict) else {},
                                  result=result, error=error, duration_ms=round(ms, 3), id=spec["id"]))
            self.messages.append(_tool_message(spec["id"], result, error))
        return spent


def _unreachable(error: str) -> bool:
    """Whether an agent error says the agent could not be reached (as opposed to failing once reached)."""
    return "connection error:" in error and "closed the connection" not in error


def _about(task: Task) -> dict[str, Any]:
    """What the simulated user played, for graders: ``metadata.persona``, ``scenario``, ``user_instructions``."""
    return {key: value for key, value in (("persona", task.persona), ("scenario", task.scenario),
                                          ("user_instructions", task.instructions)) if value is not None}


def _expected(task: Task) -> Any:
    """The task's expected block, with its ``goal`` as ``expected.goal`` unless the block names one."""
    if task.goal is None or (task.expected is not None and task.expected.goal):
        return task.expected
    if task.expected is None:
        return Expected(goal=task.goal)
    return msgspec.structs.replace(task.expected, goal=task.goal)


def _command(agent: Any) -> CommandAgent | None:
    """The command agent under the stack's layers, if that is the agent."""
    for _ in range(32):
        if agent is None or isinstance(agent, CommandAgent):
            return agent
        agent = getattr(agent, "inner", None)
    return None


def _usage(tokens_in: int, tokens_out: int, cost: float | None) -> Usage | None:
    """None when the agent reported nothing (a function, a command): unknown is not zero."""
    if not tokens_in and not tokens_out and cost is None:
        return None
    return Usage(input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost)


async def collect_async(tasks: list[Task], agent: Any, user: Any, settings: Settings, *,
                        done: dict[str, tuple[Trace, str | None]] | None = None,
                        on_trial: Callable[[Trace, str | None], None] | None = None,
                        cancel: threading.Event | None = None, concurrency: int = CONCURRENCY,
                        code: Code | None = None) -> Collected:
    """Every task x trial not in ``done``; traces in task order, then trial order. ``code``: the tools'
    code, checked (else the tasks may name no code)."""
    if code is None:
        code = Code(tasks, CodePolicy())  # refuses code and loads each tool once before any agent call
    done = dict(done or {})
    resumed = len(done)
    gate = asyncio.Semaphore(concurrency)

    skipped: list[tuple[str, int, str]] = []

    async def one(task: Task, trial: int) -> None:
        async with gate:
            if cancel is not None and cancel.is_set():
                return
            try:
                trace, fault = await run_trial(task, trial, agent, user, settings, code)
            except NotCollected as exc:
                skipped.append((task.id, trial, str(exc)))  # type: ignore[arg-type]
                return
        done[trial_key(task.id, trial)] = (trace, fault)  # type: ignore[arg-type]
        if on_trial is not None:
            on_trial(trace, fault)

    todo = [asyncio.ensure_future(one(task, trial)) for task in tasks for trial in range(settings.trials)
            if trial_key(task.id, trial) not in done]  # type: ignore[arg-type]
    interrupted = False
    if todo:
        waiter = asyncio.ensure_future(asyncio.wait(todo))
        stopper = asyncio.ensure_future(_wait_for(cancel)) if cancel is not None else None
        finished, _ = await asyncio.wait([waiter, *([stopper] if stopper else [])],
                                         return_when=asyncio.FIRST_COMPLETED)
        if stopper is not None and stopper in finished:
            for t in todo:
                t.cancel()
            await asyncio.gather(*todo, return_exceptions=True)
        elif stopper is not None:
            stopper.cancel()
        for t in todo:
            if t.done() and not t.cancelled() and t.exception() is not None:
                raise t.exception()  # type: ignore[misc]  # a fatal ProviderError: every call would fail
        # trials still waiting for a slot return at once when cancelled, so the wait may end first
        interrupted = cancel is not None and cancel.is_set() and \
            len(done) + len(skipped) < len(tasks) * settings.trials
    out = Collected(interrupted=interrupted, resumed=resumed, not_collected=sorted(skipped))
    for task in tasks:
        for trial in range(settings.trials):
            item = done.get(trial_key(task.id, trial))  # type: ignore[arg-type]
            if item is not None:
                (out.simulator_errors if item[1] is not None else out.traces).append(item[0])
    return out


async def _wait_for(event: threading.Event) -> None:
    while not event.is_set():
        await asyncio.sleep(0.05)


def check_settings(trials: int, max_turns: int) -> None:
    if trials < 1:
        raise ConfigError(f"trials: expected at least 1, got {trials}")
    if max_turns < 1:
        raise ConfigError(f"max_turns: expected at least 1, got {max_turns}")
