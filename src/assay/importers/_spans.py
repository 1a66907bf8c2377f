"""Spans -> traces: the half of the OpenTelemetry and OpenInference importers they share.

A ``Convention`` says what a span is (an LLM call, a tool execution, an agent, a retrieval) and
reads its attributes; ``assemble`` turns one trace's spans into assay's shape: LLM calls of an
agent are grouped into turns by the user message they answer, tool and retrieval spans join the
turn in whose time window they start, agent spans nested under another agent become ``agents``
with a ``handoffs`` entry, and the latency is the root span's. Reading files is ``_otlp``'s job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

from ..errors import DataError
from ..model import Trace
from ._common import build_trace

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(slots=True)
class Event:
    name: str
    time_ns: int | None
    attrs: dict[str, Any]


@dataclass(slots=True)
class Span:
    """One span, whatever file shape it came from."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int | None
    end_ns: int | None
    attrs: dict[str, Any]
    events: list[Event]
    status: str
    status_message: str | None
    resource: dict[str, Any]
    line: int
    field: str
    order: int = 0

    def at(self, attr: str) -> str:
        """Field path of one attribute, for issues."""
        return f"{self.field}.attributes[{attr}]" if self.field else f"attributes[{attr}]"

    @property
    def duration_ms(self) -> float | None:
        if self.start_ns is None or self.end_ns is None:
            return None
        return (self.end_ns - self.start_ns) / 1e6


@dataclass(slots=True)
class Msg:
    """A chat message in the few parts assay keeps."""

    role: str
    text: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Tool calls requested: {'name', 'arguments', 'id'}."""
    results: list[tuple[str | None, Any]] = field(default_factory=list)
    """Tool results given back: (tool call id, result)."""
    reasoning: str | None = None


@dataclass(slots=True)
class LlmCall:
    inputs: list[Msg] = field(default_factory=list)
    outputs: list[Msg] = field(default_factory=list)
    system: str | None = None
    usage: dict[str, Any] | None = None
    model: str | None = None


class Convention(Protocol):
    """How one family of semantic conventions says what a span did."""

    def kind(self, span: Span) -> str:
        """'llm', 'tool', 'agent', 'retriever', 'chain', 'create_agent' or 'other'."""

    def agent_name(self, span: Span) -> str | None: ...

    def llm(self, span: Span) -> LlmCall: ...

    def tool(self, span: Span) -> dict[str, Any]:
        """{'name', 'arguments', 'result', 'error', 'id'}; raises DataError for bad attributes."""

    def documents(self, span: Span) -> list[str]: ...

    def io(self, span: Span) -> tuple[str | None, str | None]:
        """The input and output text of an agent or chain span, when it records them."""

    def trace_meta(self, spans: list[Span]) -> dict[str, Any]: ...


# ---------------------------------------------------------------- assembling one trace

def iso(ns: int | None) -> str | None:
    if ns is None:
        return None
    return (EPOCH + timedelta(microseconds=ns // 1000)).isoformat(timespec="milliseconds").replace("+00:00", "Z")



def _fail(span: Span, exc: DataError) -> DataError:
    """A DataError located at the span's line."""
    return DataError(exc.detail, line=span.line, field=exc.field or span.field)


def assemble(trace_id: str, spans: list[Span], conv: Convention) -> Trace:
    spans = sorted(spans, key=lambda s: (s.start_ns if s.start_ns is not None else 0, s.order))
    by_id = {s.span_id: s for s in spans}
    kinds = {s.span_id: conv.kind(s) for s in spans}
    names: dict[str, str] = {}
    for s in spans:
        if kinds[s.span_id] == "agent":
            names[s.span_id] = conv.agent_name(s) or s.name

    def parent(s: Span) -> Span | None:
        return by_id.get(s.parent_id) if s.parent_id else None

    _one_agent(spans, kinds, names, parent)

    scope_memo: dict[str, str | None] = {}

    def scope(s: Span | None) -> str | None:
        """The agent span that owns ``s`` (itself for an agent), merged with same-named parents; None: no agent.

        A loop up the parents, not recursion: a chain of thousands of nested agents is linear, and a
        parent cycle is a located error rather than a RecursionError."""
        chain: list[Span] = []
        on_chain: set[str] = set()
        while s is not None and s.span_id not in scope_memo:
            if s.span_id in on_chain:
                raise DataError(f"span {s.span_id!r} is its own ancestor: its parentSpanId chain loops back to "
                                f"it after {len(chain) - chain.index(s)} span(s)", line=s.line, field=s.field)
            on_chain.add(s.span_id)
            chain.append(s)
            s = parent(s)
        up = None if s is None else scope_memo[s.span_id]
        for c in reversed(chain):  # from the topmost unresolved ancestor down
            if kinds[c.span_id] == "agent" and (up is None or names[up] != names[c.span_id]):
                up = c.span_id
            scope_memo[c.span_id] = up
        return up if not chain else scope_memo[chain[0].span_id]

    owner = {s.span_id: scope(s) for s in spans}
    top = {a for a in names if owner[a] == a and scope(parent(by_id[a])) is None}
    main_name = next((names[a] for a in names if a in top), None)

    def bucket(s: Span) -> str:
        o = owner[s.span_id]
        return "" if o is None or o in top else names[o]

    buckets: dict[str, list[Span]] = {}
    for s in spans:
        buckets.setdefault(bucket(s), []).append(s)
    if main_name is None:
        main_name = next((n for s in spans if kinds[s.span_id] == "llm" for n in [conv.agent_name(s)] if n), None)

    # the spans whose input/output stand for the main thread's: its agents, else a root chain
    main_io = [by_id[a] for a in sorted(top, key=lambda a: by_id[a].order)] or [
        s for s in spans if parent(s) is None and kinds[s.span_id] == "chain"]
    scope_spans = {"": main_io}
    for a, n in names.items():
        if owner[a] == a and a not in top:
            scope_spans.setdefault(n, []).append(by_id[a])

    data: dict[str, Any] = {"id": trace_id, "metadata": {}}
    system: str | None = None
    models: list[str] = []
    agents: dict[str, Any] = {}
    for key, members in buckets.items():
        agent = main_name if key == "" else key
        turns, sys_text, used = _turns(members, kinds, conv, agent, scope_spans.get(key, []))
        models += [m for m in used if m not in models]
        if key == "":
            data["turns"] = turns
            system = sys_text
        else:
            agents[key] = {"turns": turns}
    data.setdefault("turns", [])
    if system:
        data["system"] = system
    if agents:
        data["agents"] = agents
    first_llm: dict[str, Span] = {}  # each agent's first LLM span, found in one pass (not one scan per agent)
    for b in spans:
        if kinds[b.span_id] == "llm" and owner[b.span_id] is not None:
            first_llm.setdefault(owner[b.span_id], b)  # type: ignore[arg-type]
    handoffs = []
    for n, members in scope_spans.items():
        if n == "":
            continue
        for span in members:
            up = scope(parent(span))
            source = main_name if up is None or up in top else names[up]
            message = conv.io(span)[0]
            if message is None:
                first = first_llm.get(span.span_id)
                if first is not None:
                    message = _last_user(conv.llm(first).inputs)
            handoffs.append({"from": source or "main", "to": n, "kind": "delegate", "message": message,
                             "timestamp": iso(span.start_ns)})
    if handoffs:
        data["handoffs"] = sorted(handoffs, key=lambda h: h["timestamp"] or "")
    roots = [s for s in spans if parent(s) is None]
    timed = [r for r in roots if r.start_ns is not None and r.end_ns is not None]
    if timed:
        data["latency_ms"] = (max(r.end_ns for r in timed) - min(r.start_ns for r in timed)) / 1e6  # type: ignore[type-var]
    if any(r.status == "ERROR" for r in roots):
        data["status"] = "failed"
    elif roots and all(r.status == "OK" for r in roots):
        data["status"] = "completed"
    meta = conv.trace_meta(spans)
    if models:
        meta["models"] = models
    if main_name:
        meta.setdefault("agent_name", main_name)
    if roots:
        meta.setdefault("root_span", roots[0].name)
    data["metadata"] = meta
    return build_trace(data)


def _asks(m: Msg) -> bool:
    """A user message that asks something: not one that only carries tool results back."""
    return m.role == "user" and not (m.results and not m.text)


def _one_agent(spans: list[Span], kinds: dict[str, str], names: dict[str, str], parent: Any) -> None:
    """An agent span that does no work of its own (no model call or tool run under it but through
    one agent span below it) wraps that agent: a workflow span around the agent (OpenAI Agents),
    a create-agent span around its run (Koog). It takes the inner agent's name, so the two read as
    one agent rather than a coordinator that delegated once."""
    def nearest_agent(s: Span) -> str | None:
        p, hops = parent(s), 0
        while p is not None and hops < 10_000:
            if kinds[p.span_id] == "agent":
                return p.span_id
            p, hops = parent(p), hops + 1
        return None

    working: set[str] = set()
    children: dict[str, list[str]] = {}
    for s in spans:
        kind = kinds[s.span_id]
        if kind in ("llm", "tool", "retriever"):
            a = nearest_agent(s)
            if a is not None:
                working.add(a)
        elif kind == "agent":
            a = nearest_agent(s)
            if a is not None:
                children.setdefault(a, []).append(s.span_id)
    changed = True
    rounds = 0
    while changed and rounds < 64:
        changed, rounds = False, rounds + 1
        for a, kids in children.items():
            if a not in working and len(kids) == 1 and names[a] != names[kids[0]]:
                names[a] = names[kids[0]]
                changed = True


def _last_user(msgs: list[Msg]) -> str | None:
    return next((m.text for m in reversed(msgs) if _asks(m)), None)


def _user_key(msgs: list[Msg]) -> tuple[int, str | None] | None:
    users = [m for m in msgs if _asks(m)]
    return (len(users), users[-1].text) if users else None


def _turns(members: list[Span], kinds: dict[str, str], conv: Convention, agent: str | None,
           scopes: list[Span]) -> tuple[list[dict[str, Any]], str | None, list[str]]:
    """The turns of one agent (or of the main thread), its system prompt and the models it used."""
    llms = [s for s in members if kinds[s.span_id] == "llm"]
    calls: dict[str, LlmCall] = {}
    for s in llms:
        try:
            calls[s.span_id] = conv.llm(s)
        except DataError as exc:
            raise _fail(s, exc) from None
    groups: list[list[Span]] = []
    keys: list[tuple[int, str | None] | None] = []
    for s in llms:
        key = _user_key(calls[s.span_id].inputs)
        if groups and (key is None or keys[-1] is None or key == keys[-1]):
            groups[-1].append(s)
            keys[-1] = keys[-1] or key
        else:
            groups.append([s])
            keys.append(key)
    others = [s for s in members if kinds[s.span_id] in ("tool", "retriever")]
    io_in, io_out = (conv.io(scopes[0])[0], conv.io(scopes[-1])[1]) if scopes else (None, None)
    if not groups:
        if not others and io_in is None and io_out is None:
            return [], None, []
        groups = [[]]
    starts = [g[0].start_ns if g else None for g in groups]
    windows: list[list[Span]] = [[] for _ in groups]
    for s in others:
        index = 0
        for i, start in enumerate(starts):
            if start is not None and s.start_ns is not None and start <= s.start_ns:
                index = i
        windows[index].append(s)
    turns = []
    models: list[str] = []
    system = next((calls[s.span_id].system for s in llms if calls[s.span_id].system), None)
    for i, (group, extra) in enumerate(zip(groups, windows)):
        gcalls = [calls[s.span_id] for s in group]
        for c in gcalls:
            if c.model and c.model not in models:
                models.append(c.model)
        turn: dict[str, Any] = {"input": _last_user(gcalls[0].inputs) if gcalls else None}
        if turn["input"] is None and i == 0:
            turn["input"] = io_in
        outputs = [m for c in gcalls for m in c.outputs if m.role in ("assistant", "model") and m.text]
        turn["output"] = outputs[-1].text if outputs else (io_out if i == len(groups) - 1 else None)
        thoughts = [m.reasoning for c in gcalls for m in c.outputs if m.reasoning]
        if thoughts:
            turn["reasoning"] = "\n".join(thoughts)
        turn["usage"] = _sum_usage([c.usage for c in gcalls])
        timed = [s for s in group + extra if s.start_ns is not None and s.end_ns is not None]
        if timed:
            turn["latency_ms"] = (max(s.end_ns for s in timed) - min(s.start_ns for s in timed)) / 1e6  # type: ignore[type-var]
        turn["tool_calls"] = _tool_calls(group, gcalls, [s for s in extra if kinds[s.span_id] == "tool"], conv, agent)
        docs = []
        for s in extra:
            if kinds[s.span_id] == "retriever":
                try:
                    docs += conv.documents(s)
                except DataError as exc:
                    raise _fail(s, exc) from None
        if docs:
            turn["context"] = docs
        if agent is not None:
            turn["agent"] = agent
        turns.append(turn)
    return turns, system, models


def _tool_calls(group: list[Span], gcalls: list[LlmCall], tools: list[Span], conv: Convention,
                agent: str | None) -> list[dict[str, Any]]:
    timed: list[tuple[int, int, dict[str, Any]]] = []
    seen_ids: set[str] = set()
    names_run: set[str] = set()
    for s in tools:
        try:
            call = conv.tool(s)
        except DataError as exc:
            raise _fail(s, exc) from None
        call["timestamp"] = iso(s.start_ns)
        call["duration_ms"] = s.duration_ms
        if agent is not None:
            call["agent"] = agent
        if call.get("id"):
            seen_ids.add(call["id"])
        names_run.add(call["name"])
        timed.append((s.start_ns or 0, s.order, call))
    results: dict[str, Any] = {}
    for c in gcalls:
        for m in c.inputs:
            for call_id, result in m.results:
                if call_id is not None:
                    results[call_id] = result
    # results that name no call id answer the id-less requests in order (the last model call's
    # input holds the whole history, so each such result once)
    loose = [r for m in (gcalls[-1].inputs if gcalls else []) for call_id, r in m.results if call_id is None]
    requested: dict[str, dict[str, Any]] = {}
    claimed: set[str] = set()
    unnamed = [call for _, _, call in timed if not call.get("id")]  # executions that recorded no call id
    # calls the turn made before its first recorded model call (a recording holding only the last
    # request): in that call's input, after the question
    history: list[Msg] = []
    if gcalls:
        inputs = gcalls[0].inputs
        asked = max((i for i, m in enumerate(inputs) if _asks(m)), default=-1)
        history = [m for m in inputs[asked + 1:] if m.role in ("assistant", "model") and m.calls]
    pairs: list[tuple[Span, list[Msg]]] = ([(group[0], history)] if history else []) + [
        (span, c.outputs) for span, c in zip(group, gcalls)]
    for span, outputs in pairs:
        for m in outputs:
            for req in m.calls:
                if req.get("id") and req["id"] in seen_ids:
                    requested[req["id"]] = req
                    continue
                if not req.get("id") and req["name"] in names_run:
                    continue  # an execute span without id covers it
                twin = next((x for x in unnamed if x["name"] == req["name"]), None)
                if twin is None and req.get("id"):  # the execution recorded an id of its own (Google ADK)
                    twin = next((x for _, _, x in timed if x["name"] == req["name"] and x.get("id") in seen_ids
                                 and x["id"] not in requested and x["id"] not in claimed), None)
                    if twin is not None:
                        claimed.add(twin["id"])
                        if not twin.get("arguments"):
                            twin["arguments"] = req.get("arguments") or {}
                        continue
                if twin is not None:  # the first id-less execution of that tool is this request's
                    unnamed.remove(twin)
                    twin["id"] = req["id"]
                    requested[req["id"]] = req
                    continue
                call = {"name": req["name"], "arguments": req.get("arguments") or {}, "id": req.get("id")}
                if req.get("id") in results:
                    call["result"] = results[req["id"]]
                elif not req.get("id") and loose:
                    call["result"] = loose.pop(0)
                if agent is not None:
                    call["agent"] = agent
                timed.append((span.end_ns or span.start_ns or 0, span.order, call))
    for _, _, call in timed:  # an execute span without arguments takes the model's request's
        if not call.get("arguments") and call.get("id") in requested:
            call["arguments"] = requested[call["id"]].get("arguments") or {}
        if call.get("result") is None and not call.get("error") and call.get("id") in results:
            call["result"] = results[call["id"]]  # a tool span that recorded no result: the one the model was given
    timed.sort(key=lambda t: (t[0], t[1]))
    return [call for _, _, call in timed]


def _sum_usage(parts: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Per-field sums over a turn's model calls; a field some call did not record is left out
    (a sum over part of the calls would read as the whole)."""
    if not parts:
        return None
    out: dict[str, Any] = {}
    for key in ("input_tokens", "output_tokens", "total_tokens", "cost_usd"):
        values = [p.get(key) if p else None for p in parts]
        if all(v is not None for v in values):
            out[key] = sum(values)  # type: ignore[arg-type]
    return out or None


def indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened list attributes ``prefix.N.rest`` as a list of {rest: value}, in index order."""
    p = prefix + "."
    items: dict[int, dict[str, Any]] = {}
    for k, v in attrs.items():
        if k.startswith(p):
            idx, _, rest = k[len(p):].partition(".")
            if idx.isdigit() and rest:
                items.setdefault(int(idx), {})[rest] = v
    return [items[i] for i in sorted(items)]


def flatten(value: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Nested attribute values (dicts, lists of dicts) as dotted keys: {'a': [{'b': 1}]} -> {'a.0.b': 1}."""
    out = {} if out is None else out
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i, v in enumerate(value):
            flatten(v, f"{prefix}.{i}", out)
    else:
        out[prefix] = value
    return out


def error_of(span: Span) -> str | None:
    """Why a span failed: its status message, else an exception event's message."""
    if span.status != "ERROR":
        return None
    if span.status_message:
        return span.status_message
    for e in span.events:
        if e.name == "exception":
            msg = e.attrs.get("exception.message") or e.attrs.get("exception.type")
            if msg:
                return str(msg)
    return str(span.attrs.get("error.type") or "error")
