"""The metric seam: a small declarative definition, a registry, and the context metrics see.

A metric is a frozen dataclass whose fields are its parameters (so a run can be reproduced
from its output) with one ``score(ctx)`` method, sync or async::

    @metric("tool_selection_accuracy", dimension="tool_calling", requires=("expected_tools",))
    @dataclass(frozen=True, kw_only=True)
    class ToolSelectionAccuracy:
        threshold: float = 0.7
        def score(self, ctx: MetricContext) -> MetricResult:
            return ctx.result(1.0, reason="...")

or a subclass of :class:`Metric` (``class Mine(Metric, name="mine", dimension="custom")``), or a
plain function ``def mine(ctx) -> float | MetricResult`` under ``@metric``. The engine fills in
name, threshold and passed; a metric only returns ``ctx.result(...)`` or ``ctx.null(...)``.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from ..errors import ConfigError
from ..model import MetricResult, Trace, Turn, Warning


class Requirement(StrEnum):
    """What a metric needs from the data (or the run) to produce a score."""

    EXPECTED_TOOLS = "expected_tools"
    EXPECTED_OUTPUT = "expected_output"
    GROUND_TRUTH = "ground_truth"
    CONTEXT = "context"
    TOOL_CALLS = "tool_calls"
    MULTI_AGENT = "multi_agent"
    MULTI_TURN = "multi_turn"
    REASONING = "reasoning"
    ROLE = "role"
    """A role to adhere to: expected.role or a system prompt."""
    INSTRUCTIONS = "instructions"
    """Instructions to comply with: expected.instructions or a system prompt."""
    GOAL = "goal"
    """Something to achieve: expected goal, success criteria or expected output."""
    EXPECTED_STATE = "expected_state"
    """An expected final environment state (expected.state)."""
    USAGE = "usage"
    LATENCY = "latency"
    THROUGHPUT = "throughput"
    JUDGE = "judge"


def _has_expected_output(t: Trace) -> bool:
    return (t.expected is not None and t.expected.output is not None) or any(
        u.expected is not None and u.expected.output is not None for u in t.turns)


_DATA_CHECKS: dict[Requirement, Callable[[Trace], bool]] = {
    Requirement.EXPECTED_TOOLS: lambda t: t.expected_tool_calls() is not None,
    Requirement.EXPECTED_OUTPUT: _has_expected_output,
    Requirement.GROUND_TRUTH: lambda t: t.expected is not None or any(u.expected is not None for u in t.turns),
    Requirement.CONTEXT: lambda t: any(u.context for u in t.turns),
    Requirement.TOOL_CALLS: lambda t: any(u.tool_calls for u in t.turns),
    Requirement.MULTI_AGENT: lambda t: bool(t.agents or t.handoffs),
    Requirement.MULTI_TURN: lambda t: sum(u.input is not None for u in t.turns) >= 2,
    Requirement.REASONING: lambda t: any(u.reasoning for u in t.turns),
    Requirement.ROLE: lambda t: bool(t.system) or (t.expected is not None and bool(t.expected.role)),
    Requirement.INSTRUCTIONS: lambda t: bool(t.system) or (t.expected is not None and bool(t.expected.instructions)),
    Requirement.GOAL: lambda t: t.expected is not None and bool(
        t.expected.goal or t.expected.success_criteria or t.expected.output),
    Requirement.EXPECTED_STATE: lambda t: t.expected is not None and t.expected.state is not None,
    Requirement.USAGE: lambda t: t.total_usage() is not None,
    Requirement.LATENCY: lambda t: t.total_latency_ms() is not None,
    Requirement.THROUGHPUT: lambda t: t.throughput_rps is not None,
}


def data_meets(requirement: Requirement, trace: Trace) -> bool:
    """Whether ``trace`` has what ``requirement`` asks for (JUDGE is not about data: True)."""
    check = _DATA_CHECKS.get(requirement)
    return True if check is None else check(trace)


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """Everything the engine and the CLI need to know about a metric class."""

    name: str
    dimension: str
    requires: tuple[Requirement, ...] = ()
    summary: str = ""
    """One line: the formula or the judging basis, shown by ``assay metrics``."""
    version: str = "1"
    """Bumped when scoring changes; part of the judge cache key."""
    level: str = "trace"
    """'trace': scored once per trace; 'turn': once per turn, then averaged by the engine."""
    after: tuple[str, ...] = ()
    """Metrics whose results this one reads from ``ctx.results`` (run before it when selected)."""
    default: bool = True
    """Part of the default set when its requirements are met (opt-in metrics say False)."""
    judge_calls: str = "0"
    """Judge calls per trace (or per turn), for ``assay metrics`` and dry-run estimates."""

    @property
    def needs_judge(self) -> bool:
        return Requirement.JUDGE in self.requires


class _ContextType(type):
    """``MetricContext.null(...)`` / ``.result(...)`` on the class (shared helpers that have no context)
    build a result the engine names afterwards; ``ctx.null(...)`` builds it complete.

    The class-level forms are properties of this metaclass, so that on an instance ``result`` and
    ``null`` stay plain methods: a metric calls one per trace, and a descriptor of our own would
    double the cost of that call.
    """

    @property
    def result(cls) -> Callable[..., MetricResult]:
        return types.MethodType(_result, _NO_CONTEXT)

    @property
    def null(cls) -> Callable[..., MetricResult]:
        return types.MethodType(_null, _NO_CONTEXT)


def _result(ctx: Any, score: float, reason: str = "", evidence: Iterable[str] = (),
            details: dict[str, Any] | None = None, warning: Warning | None = None) -> MetricResult:
    """A scored result; name, threshold and passed come from the metric being scored."""
    score = float(score)
    threshold = ctx.metric_threshold
    return MetricResult(ctx.metric_name, score,
                        None if threshold is None or not 0.0 <= score <= 1.0 else score >= threshold,
                        threshold, reason, list(evidence) if evidence else [], warning,
                        {} if details is None else details)


def _null(ctx: Any, warning: Warning | str, reason: str, details: dict[str, Any] | None = None) -> MetricResult:
    """No score, and why: never a silent 0."""
    return MetricResult(ctx.metric_name, None, None, ctx.metric_threshold, reason, [], Warning(warning),
                        {} if details is None else details)


@dataclass(slots=True)
class MetricContext(metaclass=_ContextType):
    """What a metric sees: the trace, the judge (if any) and earlier results on this trace."""

    trace: Trace
    judge: Any = None
    """An ``assay.judge.Judge`` or None; metrics only talk to this protocol."""
    results: dict[str, MetricResult] = field(default_factory=dict)
    turn_index: int | None = None
    """Set for turn-level metrics: the turn being scored."""
    repeat: int = 0
    metric_name: str = ""
    """The metric being scored (set by the engine), so ``result`` / ``null`` build complete results."""
    metric_threshold: float | None = None
    memo: Any = None
    """Derived data shared by the metrics of one scoring pass (``metrics._memo``)."""

    @property
    def turn(self) -> Turn | None:
        return None if self.turn_index is None else self.trace.turns[self.turn_index]

    def for_turn(self, index: int) -> "MetricContext":
        return MetricContext(self.trace, self.judge, self.results, index, self.repeat, self.metric_name,
                             self.metric_threshold, self.memo)

    def for_metric(self, name: str, threshold: float | None) -> "MetricContext":
        """This context for scoring metric ``name`` (its own object: async metrics run concurrently)."""
        return MetricContext(self.trace, self.judge, self.results, self.turn_index, self.repeat, name, threshold,
                             self.memo)

    result = _result
    """``ctx.result(score, reason="", evidence=(), details=None, warning=None)``: a scored result."""
    null = _null
    """``ctx.null(warning, reason, details=None)``: no score, and why (never a silent 0)."""


_NO_CONTEXT = MetricContext(None)  # type: ignore[arg-type]


class Metric:
    """Base class alternative to ``@metric``: ``class M(Metric, name=..., dimension=...)``.

    Subclasses become frozen keyword-only dataclasses with a ``threshold`` field (default 0.7).
    """

    spec: ClassVar[MetricSpec]
    threshold: float

    def __init_subclass__(cls, *, name: str | None = None, dimension: str = "custom", register: bool = True,
                          **spec_kwargs: Any) -> None:  # spec_kwargs: those of @metric (registry, replace, ...)
        super().__init_subclass__()
        if name is not None:
            metric(name, dimension=dimension, register=register, **spec_kwargs)(cls)

    def score(self, ctx: MetricContext) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


def metric(name: str, *, dimension: str, requires: Iterable[str] = (), summary: str = "", version: str = "1",
           level: str = "trace", after: Iterable[str] = (), default: bool = True, judge_calls: str | int = 0,
           register: bool = True, registry: "Registry | None" = None, replace: bool = False) -> Callable[[Any], Any]:
    """Declare a metric class (or function) and add it to the registry.

    ``replace=True`` lets it take the name of a built-in or plugin metric (otherwise an error).
    A class may define ``check_definition()`` (a classmethod): it runs here, so a bad definition
    (a missing rubric, labels that do not match) fails before any trace is scored.
    """
    try:
        reqs = tuple(Requirement(r) for r in requires)
    except ValueError as exc:
        raise ConfigError.unknown("requirement", str(exc).split("'")[1], [r.value for r in Requirement]) from None
    if level not in ("trace", "turn"):
        raise ConfigError(f"metric {name!r}: level must be 'trace' or 'turn', got {level!r}")
    spec = MetricSpec(name, dimension, reqs, summary, version, level, tuple(after), default, str(judge_calls))

    def wrap(obj: Any) -> Any:
        cls: Any = obj if isinstance(obj, type) else _function_metric(obj)
        if not dataclasses.is_dataclass(cls):
            if "threshold" not in getattr(cls, "__annotations__", {}):
                cls.__annotations__ = {**getattr(cls, "__annotations__", {}), "threshold": float}
                if not hasattr(cls, "threshold"):
                    cls.threshold = 0.7
            cls = dataclass(frozen=True, kw_only=True)(cls)
        if "threshold" not in {f.name for f in dataclasses.fields(cls)}:
            raise ConfigError(f"metric {name!r}: its dataclass needs a 'threshold: float' field")
        cls.spec = spec
        if not spec.summary and cls.__doc__:
            cls.spec = dataclasses.replace(spec, summary=cls.__doc__.strip().splitlines()[0])
        check = getattr(cls, "check_definition", None)
        if check is not None:
            check()
        if register:
            (registry or REGISTRY).add(cls, replace=replace)
        return cls

    return wrap


def _function_metric(fn: Callable[..., Any]) -> type:
    """Wrap ``def f(ctx) -> float | MetricResult`` (sync or async) as a metric class."""
    is_async = inspect.iscoroutinefunction(fn)

    def coerce(ctx: MetricContext, value: Any) -> MetricResult:
        return value if isinstance(value, MetricResult) else ctx.result(value)

    if is_async:
        async def score(self: Any, ctx: MetricContext) -> MetricResult:
            return coerce(ctx, await fn(ctx))
    else:
        def score(self: Any, ctx: MetricContext) -> MetricResult:
            return coerce(ctx, fn(ctx))

    return type(fn.__name__, (), {"__doc__": fn.__doc__, "__module__": fn.__module__, "score": score,
                                  "__annotations__": {"threshold": float}, "threshold": 0.7})


def is_async_metric(m: Any) -> bool:
    return inspect.iscoroutinefunction(type(m).score)


@dataclass(frozen=True, slots=True)
class Entry:
    """One registered metric: its class, where it came from, and whether it replaced another."""

    cls: Any
    """A metric class: ``@metric`` gave it ``spec`` (its type says no more)."""
    origin: str
    """'built-in', 'plugin DIST' (an ``assay.metrics`` entry point) or 'module NAME' (user code)."""
    replace: bool = False


class Registry:
    """Name -> metric class, in three layers: built-ins, then plugins, then user registrations.

    Built-in families are imported on first use (a registration counts as a use, so a name clash
    with a built-in is reported where the user's metric is defined); the ``assay.metrics`` entry
    points of installed plugins are read on the first lookup. Registering a name that another
    layer (or an earlier registration) holds is a ConfigError naming both, unless ``replace=True``;
    the outcome never depends on import order. Redefining a class (same module and qualified name,
    as when a notebook cell runs again) replaces it.
    """

    def __init__(self, builtins: str | None = None, *, plugins: str | None = None) -> None:
        self._entries: dict[str, Entry] = {}
        self._builtins = builtins
        self._plugins = plugins
        self._builtins_loaded = builtins is None
        self._plugins_loaded = plugins is None
        self._origin: str | None = None
        """Origin of registrations made while built-ins or a plugin are being imported."""

    def add(self, cls: Any, *, replace: bool = False, origin: str | None = None) -> None:
        """Register *cls* under ``cls.spec.name``; a clash is an error unless ``replace=True``."""
        if origin is None and self._origin is None and self._builtins is not None \
                and cls.__module__.startswith(self._builtins + "."):
            origin = "built-in"  # a built-in module imported directly (its siblings load later)
        else:
            self._load_builtins()
        name = cls.spec.name
        entry = Entry(cls, self._origin or origin or f"module {cls.__module__}", replace)  # a plugin owns all it adds
        held = self._entries.get(name)
        if held is not None and held.cls is not cls and not replace and not _redefined(held.cls, cls):
            if held.replace and held.origin.startswith("module ") and entry.origin.startswith("plugin "):
                return  # the user's replace=True registration outranks a plugin read later
            raise ConfigError(f"metric {name!r} from {entry.origin} ({_where(cls)}) clashes with {name!r} from "
                              f"{held.origin} ({_where(held.cls)}); rename one, or register with replace=True")
        if held is not None and held.cls is cls and held.origin.startswith("plugin "):
            return  # a plugin's class registering itself again keeps its plugin origin
        self._entries[name] = entry

    def remove(self, name: str) -> None:
        """Forget *name* (tests and notebooks); unknown names are an error."""
        self.get(name)
        del self._entries[name]

    def _load_builtins(self) -> None:
        if not self._builtins_loaded:
            self._builtins_loaded = True
            import importlib
            import pkgutil
            pkg = importlib.import_module(self._builtins)  # type: ignore[arg-type]
            self._origin = "built-in"
            try:
                for mod in pkgutil.iter_modules(pkg.__path__):
                    if not mod.name.startswith("_"):
                        importlib.import_module(f"{self._builtins}.{mod.name}")
            finally:
                self._origin = None

    def _load(self) -> None:
        self._load_builtins()
        if not self._plugins_loaded:
            self._plugins_loaded = True
            from .. import _plugins
            for ep in _plugins.entry_points(self._plugins):  # type: ignore[arg-type]
                origin = _plugins.origin_of(ep)
                self._origin = origin
                try:
                    obj = _plugins.load(ep)
                    if isinstance(obj, type) and isinstance(getattr(obj, "spec", None), MetricSpec):
                        self.add(obj, origin=origin)
                    elif not inspect.ismodule(obj):
                        raise ConfigError(f"{origin}: entry point {ep.group}:{ep.name} = {ep.value!r} is neither "
                                          "a metric class nor a module of metrics")
                finally:
                    self._origin = None

    def _get_builtin(self, name: str) -> type | None:
        """A built-in metric from its own module alone, before the rest are imported (CLI start-up:
        the judge metrics' modules cost more than scoring a small file); None when that cannot be
        known without loading everything (a plugin is installed, or the index does not have it)."""
        if self._builtins_loaded or self._builtins != __name__.rsplit(".", 1)[0]:
            return None
        from ._catalog import BUILTIN_MODULES
        module = BUILTIN_MODULES.get(name)
        if module is None:
            return None
        if not self._plugins_loaded:
            from .. import _plugins
            if _plugins.entry_points(self._plugins):  # type: ignore[arg-type]
                return None  # a plugin may replace a built-in: load in the usual order
            self._plugins_loaded = True
        import importlib
        importlib.import_module(f"{self._builtins}.{module}")  # its metrics register as built-ins
        entry = self._entries.get(name)
        return entry.cls if entry is not None else None

    def names(self) -> list[str]:
        self._load()
        return sorted(self._entries)

    def specs(self) -> list[MetricSpec]:
        self._load()
        return [self._entries[n].cls.spec for n in sorted(self._entries)]

    def origins(self) -> dict[str, str]:
        """Every metric name and where it comes from."""
        self._load()
        return {n: self._entries[n].origin for n in sorted(self._entries)}

    def get(self, name: str) -> Any:
        cls = self._get_builtin(name)
        if cls is not None:
            return cls
        self._load()
        try:
            return self._entries[name].cls
        except KeyError:
            raise ConfigError.unknown("metric", name, self._entries) from None

    def __contains__(self, name: str) -> bool:
        self._load()
        return name in self._entries

    def default_names(self) -> list[str]:
        """The default set: DEFAULT_METRICS for the built-in registry, else every ``default`` metric."""
        self._load()
        if self._builtins is not None:
            from ._defaults import DEFAULT_METRICS
            return [n for n in DEFAULT_METRICS if n in self._entries]
        return [n for n in sorted(self._entries) if self._entries[n].cls.spec.default]

    def describe(self, name: str) -> str:
        """Plain-text documentation of one metric: spec, parameters with defaults, docstring."""
        cls = self.get(name)
        spec = cls.spec
        params = [f"  {f.name} = {f.default!r}" if f.default is not dataclasses.MISSING else f"  {f.name} (required)"
                  for f in dataclasses.fields(cls) if f.init]
        lines = [f"{spec.name} ({spec.dimension}{'' if spec.default else ', opt-in'}, "
                 f"{'per turn' if spec.level == 'turn' else 'per trace'}, version {spec.version})",
                 f"from: {self._entries[name].origin}",
                 f"formula: {spec.summary}",
                 f"needs: {', '.join(map(str, spec.requires)) or 'nothing beyond turns'}",
                 f"judge calls: {spec.judge_calls}",
                 *([f"runs after: {', '.join(spec.after)}"] if spec.after else []),
                 "parameters:", *params,
                 *[f"  {alias}: another name for {name}" for alias, name in getattr(cls, "aliases", {}).items()],
                 "", inspect.getdoc(cls) or ""]
        return "\n".join(lines).rstrip() + "\n"

    def create(self, name: str, **params: Any) -> Any:
        """An instance of metric ``name`` with ``params``, checked and coerced to the field types."""
        cls = self.get(name)
        return build(cls, params)


def _redefined(old: type, new: type) -> bool:
    return (old.__module__, old.__qualname__) == (new.__module__, new.__qualname__)


def _where(cls: Any) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def build(cls: Any, params: dict[str, Any]) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    hints = _hints(cls)
    aliases: dict[str, str] = getattr(cls, "aliases", {})
    """Other systems' names for a parameter (UAEF's ``penalty_mode`` for ``penalty``)."""
    kwargs = {}
    for key, value in params.items():
        if key in aliases:
            if aliases[key] in params:
                raise ConfigError(f"metric {cls.spec.name!r}: give {aliases[key]!r} or {key!r}, not both")
            key = aliases[key]
        if key not in fields:
            raise ConfigError.unknown(f"parameter of metric {cls.spec.name!r}:", key, fields)
        kwargs[key] = _coerce(cls.spec.name, key, value, hints.get(key))
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"metric {cls.spec.name!r}: {exc}") from None


_PLAIN = {"float": float, "int": int, "bool": bool, "str": str}


def _hints(cls: Any) -> dict[str, Any]:
    """The parameters' types, for reading ``key=value`` strings; never a NameError.

    With ``from __future__ import annotations`` a metric defined inside a function may annotate
    with names only that function sees (``extra: Any`` after a local import): ``get_type_hints``
    cannot resolve them, so each field is then resolved on its own and one it cannot is left as
    it is (its values are passed on unconverted); plain ``float``/``int``/``bool``/``str`` always
    resolve.
    """
    try:
        return typing.get_type_hints(cls)
    except Exception:
        module = vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}
        out: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            hint = f.type
            if isinstance(hint, str):
                try:
                    hint = eval(hint, dict(module), {})  # what get_type_hints does, one field at a time
                except Exception:
                    hint = _PLAIN.get(hint.strip())
            out[f.name] = hint
        return out


def _coerce(metric_name: str, key: str, value: Any, hint: Any) -> Any:
    if not isinstance(value, str) or hint is None or hint is str:
        return value
    try:
        if hint is float:
            v = float(value)
            if not math.isfinite(v):
                raise ValueError
            return v
        if hint is int:
            return int(value)
        if hint is bool:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        return json.loads(value)
    except ValueError:
        if typing.get_origin(hint) in (typing.Union, __import__("types").UnionType) and str in typing.get_args(hint):
            return value
        raise ConfigError(f"metric {metric_name!r}: parameter {key}: cannot read {value!r} as {getattr(hint, '__name__', hint)}") from None


def parse_metric_arg(text: str) -> tuple[str, dict[str, str]]:
    """``"latency_score:threshold_ms=1000,threshold=0.8"`` -> name and raw parameters.

    The name may carry an instance label (``"contains@refund:values=..."``, see
    :func:`split_instance`); commas inside ``[...]``, ``{...}`` or quotes belong to the value, so a
    JSON list can be given as one parameter (``values=["refund", "money back"]``).
    """
    name, _, rest = text.partition(":")
    params: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in _split_params(rest))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--metric {text!r}: expected NAME[@LABEL][:param=value,...], got {item!r}")
        params[key.strip()] = value.strip()
    return name.strip(), params


def _split_params(text: str) -> list[str]:
    parts, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(text):
        if quote:
            if c == quote and text[i - 1] != "\\":
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == "," and depth <= 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


_LABEL = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def split_instance(text: str) -> tuple[str, str]:
    """``"contains@refund"`` -> ``("contains", "contains@refund")``: the metric and the instance name.

    Without ``@LABEL`` the instance is named after its metric. The instance name keys the results,
    so two instances of one metric (different parameters) run side by side.
    """
    metric_name, at, label = text.partition("@")
    if not at:
        return text, text
    check_instance_name(label, f"label in {text!r}")
    return metric_name, text


def check_instance_name(name: Any, what: str = "metric instance name") -> str:
    if not isinstance(name, str) or not _LABEL.match(name.replace("@", "_", 1)):
        raise ConfigError(f"{what}: expected letters, digits, '_', '.' or '-', got {name!r}")
    return name


REGISTRY = Registry(builtins=__name__.rsplit(".", 1)[0], plugins="assay.metrics")
"""The default registry: built-in metrics, installed plugins, then what users register."""
