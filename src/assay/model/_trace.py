"""The input contract: one agent run (a trace) and its parts.

The types are msgspec Structs: decoding and validating a trace from JSON costs less than
``json.loads`` alone (pydantic took 2.3x json.loads), which is what lets assay score large files
at close to the speed they can be read. ``model_validate`` / ``model_validate_json`` /
``model_dump`` keep the familiar pydantic-style spelling.

Only ``id`` plus ``turns`` (or OpenAI-style ``messages``) are required; ``null`` for any optional
field means the same as leaving it out. Unknown fields are rejected so that a typo
(``tool_call`` for ``tool_calls``) is reported, with the closest field name, instead of silently
scoring nothing; free-form data belongs in ``metadata``.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Literal

import msgspec

from ._messages import messages_to_turns


class TraceValidationError(ValueError):
    """A value does not match the trace format; ``path`` is like ``turns[2].tool_calls[0].arguments``."""

    def __init__(self, path: str, message: str) -> None:
        self.path, self.message = path, message
        super().__init__(f"{path}: {message}" if path else message)


class _Struct(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    @classmethod
    def model_validate(cls, obj: Any) -> Any:
        """Build from Python data (dicts, lists); raises TraceValidationError."""
        try:
            return msgspec.convert(obj, cls)
        except msgspec.ValidationError as exc:
            if _NULL in str(exc) and isinstance(obj, dict):
                return cls._without_nulls(obj)
            raise _translate(exc, cls) from None

    @classmethod
    def model_validate_json(cls, data: str | bytes) -> Any:
        """Decode and validate JSON text; raises TraceValidationError."""
        try:
            return _decoder(cls).decode(data)
        except msgspec.ValidationError as exc:
            if _NULL in str(exc):  # the rare record with nulls takes the slow path
                obj = msgspec.json.decode(data)
                if isinstance(obj, dict):
                    return cls._without_nulls(obj)
            raise _translate(exc, cls) from None
        except msgspec.DecodeError as exc:
            raise TraceValidationError("", f"not valid JSON: {exc}") from None

    @classmethod
    def _without_nulls(cls, obj: dict[str, Any]) -> Any:
        try:
            return msgspec.convert(_drop_nulls(obj, cls), cls)
        except msgspec.ValidationError as exc:
            raise _translate(exc, cls) from None

    def model_dump(self, *, include: Any = None, exclude: Any = None, mode: str = "python",
                   exclude_none: bool = False, exclude_defaults: bool = True) -> dict[str, Any]:
        """Plain JSON-ready data, defaults (and so every unset field) omitted.

        ``include`` / ``exclude`` take pydantic's forms: a set of field names, or a dict mapping a
        name to ``True`` or to a nested include/exclude (list items by index or ``"__all__"``).
        ``mode`` and ``exclude_none`` are accepted for pydantic-style callers; the output is always
        JSON-ready, and ``None`` never appears because it is every optional field's default.
        """
        if mode not in ("python", "json"):
            raise ValueError(f"model_dump: mode must be 'python' or 'json', not {mode!r}")
        if not exclude_defaults:
            raise ValueError("model_dump: exclude_defaults=False is not supported; defaults are always omitted")
        data = msgspec.to_builtins(self)
        if include is not None:
            data = _select(data, include, keep=True)
        if exclude is not None:
            data = _select(data, exclude, keep=False)
        return data

    def model_dump_json(self, *, include: Any = None, exclude: Any = None, **options: Any) -> str:
        """``model_dump`` encoded as compact JSON text."""
        if include is None and exclude is None and not options:
            return msgspec.json.encode(self).decode()
        return msgspec.json.encode(self.model_dump(include=include, exclude=exclude, **options)).decode()

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Any:
        return msgspec.structs.replace(self, **(update or {}))


def _select(data: Any, spec: Any, *, keep: bool) -> Any:
    """Apply a pydantic-style include (``keep``) or exclude spec to dumped data."""
    if isinstance(spec, (set, frozenset, list, tuple)):
        spec = dict.fromkeys(spec, True)
    if not isinstance(spec, dict):
        raise TypeError(f"model_dump: include/exclude must be a set or a dict, not {type(spec).__name__}")
    if isinstance(data, list):
        every = spec.get("__all__")
        out = []
        for i, item in enumerate(data):
            sub = spec.get(i, every)
            if sub is True:
                if keep:
                    out.append(item)
            elif sub is None or sub is False:
                if not keep:
                    out.append(item)
            else:
                out.append(_select(item, sub, keep=keep))
        return out
    if not isinstance(data, dict):
        return data
    out_d: dict[str, Any] = {}
    for key, value in data.items():
        sub = spec.get(key, spec.get("__all__"))
        if sub is True:
            if keep:
                out_d[key] = value
        elif sub is None or sub is False:
            if not keep:
                out_d[key] = value
        else:
            out_d[key] = _select(value, sub, keep=keep)
    return out_d


@functools.cache
def _decoder(cls: type) -> msgspec.json.Decoder:
    return msgspec.json.Decoder(cls)


class Usage(_Struct):
    """Token and cost accounting of one turn, one agent or the whole trace."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    """When absent, input + output."""
    cost_usd: float | None = None

    @property
    def tokens(self) -> int | None:
        if self.total_tokens is not None:
            return self.total_tokens
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


class ExpectedToolCall(_Struct):
    """A tool call the agent should make; ``arguments`` None means 'any arguments'."""

    name: str
    arguments: dict[str, Any] | None = None
    step: int | None = None
    """Position in the expected sequence (Fair Forge's ``step``)."""


class ToolCall(_Struct):
    """A tool call the agent made, with its result or error."""

    name: str
    arguments: dict[str, Any] = {}
    result: Any = None
    error: str | None = None
    timestamp: str | None = None
    duration_ms: float | None = None
    agent: str | None = None
    id: str | None = None
    step: int | None = None


class TurnExpected(_Struct):
    """Ground truth for one turn."""

    output: str | None = None
    tool_calls: list[ExpectedToolCall] | None = None
    tool_order: Literal["strict", "any"] | None = None


class Turn(_Struct):
    """One user input and the agent's response to it, with what happened in between."""

    input: str | None = None
    output: str | None = None
    tool_calls: list[ToolCall] = []
    context: list[str] = []
    """Retrieved passages the agent was given for this turn."""
    reasoning: str | None = None
    latency_ms: float | None = None
    usage: Usage | None = None
    expected: TurnExpected | None = None
    uses_tool_results: bool | None = None
    """Whether the answer uses the tool results (Fair Forge's ``final_answer_uses_tools``)."""
    agent: str | None = None


class Expected(_Struct):
    """Ground truth and instructions for the whole trace."""

    output: str | None = None
    goal: str | None = None
    success_criteria: list[str] = []
    role: str | None = None
    instructions: str | None = None
    tool_calls: list[ExpectedToolCall] | None = None
    tool_order: Literal["strict", "any"] = "strict"
    turns: int | None = None
    """Expected number of user turns (turn_efficiency)."""
    state: Any = None
    """The environment's expected final state (a JSON value; ``state_match`` compares ``Trace.state`` with it)."""


def _turns_from(obj: Any) -> None:
    """Fill ``obj.turns`` from ``obj.messages`` (OpenAI chat format), or insist on turns."""
    if obj.messages is not None:
        if obj.turns is not None:
            raise ValueError("give either 'turns' or 'messages', not both")
        system, turns = messages_to_turns(obj.messages)
        obj.messages = None
        obj.turns = msgspec.convert(turns, list[Turn])
        if system is not None and hasattr(obj, "system") and obj.system is None:
            obj.system = system
    elif obj.turns is None:
        raise ValueError("turns: required field is missing (give 'turns' or 'messages')")


class AgentRun(_Struct):
    """What one agent of a multi-agent system did."""

    turns: list[Turn] | None = None
    messages: list[Any] | None = None
    usage: Usage | None = None
    role: str | None = None

    def __post_init__(self) -> None:
        if self.messages is not None or self.turns is None:
            if self.messages is None:
                self.turns = []
            else:
                _turns_from(self)


class Handoff(_Struct):
    """A coordination event between agents: delegation, handoff, message, result."""

    from_agent: str = msgspec.field(name="from")
    to_agent: str = msgspec.field(name="to")
    kind: str = "delegate"
    message: str | None = None
    timestamp: str | None = None


class Trace(_Struct):
    """One run of an agent on one task: the unit that metrics score."""

    id: str | int
    task_id: str | int | None = None
    """Groups repeated trials of one task; without it the trace is its own task."""
    trial: int | None = None
    system: str | None = None
    """System prompt, when the trace came as chat messages."""
    turns: list[Turn] | None = None
    messages: list[Any] | None = None
    """OpenAI chat messages; normalised into ``turns`` on load (then None)."""
    expected: Expected | None = None
    agents: dict[str, AgentRun] = {}
    handoffs: list[Handoff] = []
    status: Literal["completed", "failed", "partial"] | None = None
    usage: Usage | None = None
    latency_ms: float | None = None
    throughput_rps: float | None = None
    state: Any = None
    """The environment's state when the run ended (a stateful task's tools, ``assay collect``)."""
    metadata: dict[str, Any] = {}

    def __post_init__(self) -> None:
        if type(self.id) is not str:
            self.id = str(self.id)
        if self.task_id is not None and type(self.task_id) is not str:
            self.task_id = str(self.task_id)
        if self.turns is None or self.messages is not None:
            _turns_from(self)

    @property
    def task(self) -> str:
        """The task this trace is a trial of (its own id when no task_id)."""
        return self.task_id if self.task_id is not None else self.id  # type: ignore[return-value]

    def all_tool_calls(self) -> list[ToolCall]:
        """Tool calls of every turn, in order (main agent only)."""
        out: list[ToolCall] = []
        for t in self.turns:  # type: ignore[union-attr]
            if t.tool_calls:
                out += t.tool_calls
        return out

    def expected_tool_calls(self) -> list[ExpectedToolCall] | None:
        """Trace-level expected calls, else the concatenation of per-turn ones; None if none given."""
        if self.expected is not None and self.expected.tool_calls is not None:
            return self.expected.tool_calls
        out: list[ExpectedToolCall] | None = None
        for t in self.turns:  # type: ignore[union-attr]
            te = t.expected
            if te is not None and te.tool_calls is not None:
                if out is None:
                    out = []
                out += te.tool_calls
        return out

    def total_usage(self) -> Usage | None:
        """Trace usage if given, else the sum over turns and agents; None if nothing recorded."""
        if self.usage is not None:
            return self.usage
        parts = [t.usage for t in self.turns if t.usage is not None]  # type: ignore[union-attr]
        if self.agents:
            parts += [a.usage for a in self.agents.values() if a.usage is not None]
        if not parts:
            return None
        # one pass, no per-field closures: scoring calls this several times per trace
        i = o = tt = c = None
        negative = False
        for u in parts:
            if u.input_tokens is not None:
                i = u.input_tokens if i is None else i + u.input_tokens
                negative |= u.input_tokens < 0
            if u.output_tokens is not None:
                o = u.output_tokens if o is None else o + u.output_tokens
                negative |= u.output_tokens < 0
            if u.total_tokens is not None:
                tt = u.total_tokens if tt is None else tt + u.total_tokens
                negative |= u.total_tokens < 0
            if u.cost_usd is not None:
                c = u.cost_usd if c is None else c + u.cost_usd
                negative |= u.cost_usd < 0
        total = Usage(input_tokens=i, output_tokens=o, total_tokens=tt, cost_usd=c)
        if negative:  # a negative part is invalid even when the sum is not: the total shows it
            for u in parts:
                for name in ("input_tokens", "output_tokens", "total_tokens", "cost_usd"):
                    v = getattr(u, name)
                    if v is not None and v < 0:
                        total = msgspec.structs.replace(total, **{name: v})
        return total

    def total_latency_ms(self) -> float | None:
        """Trace latency if given, else the sum of turn latencies."""
        if self.latency_ms is not None:
            return self.latency_ms
        total = None
        for t in self.turns:  # type: ignore[union-attr]
            if t.latency_ms is not None:
                if t.latency_ms < 0:
                    return t.latency_ms  # a negative part makes the total invalid, whatever the sum
                total = t.latency_ms if total is None else total + t.latency_ms
        return total


_NULL = "got `null`"


@functools.cache
def _schema(cls: type) -> tuple[frozenset[str], dict[str, tuple[str, type]]]:
    """(optional fields that do not take null, nested struct fields: name -> (shape, struct)).

    Shape is 'one', 'list' or 'dict'. Names are the JSON names.
    """
    info = msgspec.inspect.type_info(cls)
    no_null: set[str] = set()
    nested: dict[str, tuple[str, type]] = {}
    for f in info.fields:  # type: ignore[attr-defined]
        t = f.type
        options = t.types if isinstance(t, msgspec.inspect.UnionType) else (t,)
        if not f.required and not any(isinstance(o, msgspec.inspect.NoneType) for o in options):
            no_null.add(f.encode_name)
        for o in options:
            if isinstance(o, msgspec.inspect.StructType):
                nested[f.encode_name] = ("one", o.cls)
            elif isinstance(o, msgspec.inspect.ListType) and isinstance(o.item_type, msgspec.inspect.StructType):
                nested[f.encode_name] = ("list", o.item_type.cls)
            elif isinstance(o, msgspec.inspect.DictType) and isinstance(o.value_type, msgspec.inspect.StructType):
                nested[f.encode_name] = ("dict", o.value_type.cls)
    return frozenset(no_null), nested


def _drop_nulls(obj: dict[str, Any], cls: type) -> dict[str, Any]:
    """A copy of ``obj`` without the nulls of optional fields, following the schema (not user data:
    ``metadata`` and ``arguments`` keep their nulls). Recursion is bounded by the schema's depth."""
    no_null, nested = _schema(cls)
    out = {k: v for k, v in obj.items() if not (v is None and k in no_null)}
    for name, (shape, sub) in nested.items():
        v = out.get(name)
        if shape == "one" and isinstance(v, dict):
            out[name] = _drop_nulls(v, sub)
        elif shape == "list" and isinstance(v, list):
            out[name] = [_drop_nulls(x, sub) if isinstance(x, dict) else x for x in v]
        elif shape == "dict" and isinstance(v, dict):
            out[name] = {k: _drop_nulls(x, sub) if isinstance(x, dict) else x for k, x in v.items()}
    return out


def _fields_at(cls: type, path: str) -> list[str] | None:
    """The JSON field names of the struct at ``path`` (``turns[0].tool_calls[1]``), None if not a struct."""
    for part in [p for p in re.split(r"\.|\[\d+\]|\[\.\.\.\]", path) if p]:
        nested = _schema(cls)[1]
        if part in nested:
            cls = nested[part][1]
        else:
            return None
    return [f.encode_name for f in msgspec.inspect.type_info(cls).fields]  # type: ignore[attr-defined]


def negative_values(trace: Trace) -> list[tuple[str, float]]:
    """(field path, value) of each negative latency, duration, token count, cost or throughput.

    They cannot be right; the metrics that read them score ``invalid_data`` and ``assay validate``
    warns about them.
    """
    out: list[tuple[str, float]] = []

    def usage(u: Usage | None, where: str) -> None:
        if u is not None:
            for name in ("input_tokens", "output_tokens", "total_tokens", "cost_usd"):
                v = getattr(u, name)
                if v is not None and v < 0:
                    out.append((f"{where}.{name}", v))

    for name in ("latency_ms", "throughput_rps"):
        v = getattr(trace, name)
        if v is not None and v < 0:
            out.append((name, v))
    usage(trace.usage, "usage")
    for i, t in enumerate(trace.turns or ()):
        if t.latency_ms is not None and t.latency_ms < 0:
            out.append((f"turns[{i}].latency_ms", t.latency_ms))
        usage(t.usage, f"turns[{i}].usage")
        for j, c in enumerate(t.tool_calls):
            if c.duration_ms is not None and c.duration_ms < 0:
                out.append((f"turns[{i}].tool_calls[{j}].duration_ms", c.duration_ms))
    for name, a in trace.agents.items():
        usage(a.usage, f"agents.{name}.usage")
    return out


_CHOICES = {"status": "'completed', 'failed' or 'partial'", "tool_order": "'strict' or 'any'"}
_TYPES = {"object": "an object", "array": "an array", "str": "a string", "int": "an integer", "float": "a number",
          "bool": "true or false", "null": "null"}
_GOT = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "array": "array",
        "object": "object", "null": "null"}


_TURN_FIELDS = frozenset({"input", "output", "tool_calls", "context", "reasoning"})


def _translate(exc: msgspec.ValidationError, cls: type | None = None) -> TraceValidationError:
    """msgspec's ``Expected `object`, got `str` - at `$.turns[0]...``` -> our path and wording."""
    text = str(exc)
    path = ""
    m = re.match(r"^(.*) - at `\$(.*)`$", text, re.S)
    if m:
        text, path = m.group(1), m.group(2).lstrip(".")
    if (m := re.match(r"^(.*?): (.*)$", text, re.S)) and re.fullmatch(r"[\w.\[\]]+", m.group(1)):
        inner, text = m.group(1), m.group(2)  # our own errors carry their path in the text
        path = f"{path}.{inner}" if path else inner
    elif m := re.fullmatch(r"Expected `(.+?)`, got `(.+?)`", text):
        want = " or ".join(_TYPES.get(w.strip(), w.strip()) for w in m.group(1).split("|"))
        text = f"expected {want}, got {_GOT.get(m.group(2), m.group(2))}"
    elif m := re.fullmatch(r"Object missing required field `(.+?)`", text):
        path, text = f"{path}.{m.group(1)}" if path else m.group(1), "required field is missing"
    elif m := re.fullmatch(r"Object contains unknown field `(.+?)`", text):
        import difflib  # here: only a bad record pays for it

        fields = _fields_at(cls, path) if cls is not None else None
        close = difflib.get_close_matches(m.group(1), fields or (), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        if not path and m.group(1) in _TURN_FIELDS:  # a flat {"input", "output"} record: the commonest first try
            hint = 'a turn\'s field: write turns: [{"input": "...", "output": "..."}]; '
        path, text = f"{path}.{m.group(1)}" if path else m.group(1), f"unknown field ({hint}put custom data under 'metadata')"
    elif m := re.fullmatch(r"Invalid enum value (.+)", text):
        field = path.rsplit(".", 1)[-1]
        text = f"expected {_CHOICES.get(field, 'one of the allowed values')}, got {m.group(1)}"
    return TraceValidationError(path, text)
