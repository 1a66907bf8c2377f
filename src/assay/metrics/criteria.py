"""Custom judge criteria (G-Eval style): a metric defined in a few lines or in the config file.

    from assay.metrics.criteria import criteria_metric

    Actionable = criteria_metric(
        "actionable_next_steps",
        "Does the response end with concrete next steps the user can act on?",
        steps=["Find the end of the response", "Check each step is specific and doable"],
    )

or, in the run configuration::

    [[criteria]]
    name = "actionable_next_steps"
    criteria = "Does the response end with concrete next steps the user can act on?"
    scale = [1, 5]            # or: labels = { good = 1.0, partial = 0.5, bad = 0.0 }
    level = "turn"            # "trace" (default): the whole conversation

Scales are normalised (v - low) / (high - low); labels map to their weights. The criteria and
steps are the evaluator's own words and go into the rubric (``rubrics/criteria.md``); the
conversation, as always, only fenced. The request key is ``name@<rubric version>-<digest of the
definition>``, so editing a definition never reuses a cached verdict. Unlike G-Eval, steps are
used as written (none are generated) and the score is the judge's integer, not a
probability-weighted one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from ..errors import ConfigError
from ..model import MetricResult
from ._base import REGISTRY, MetricContext, Registry, metric
from ._judged import LabelJudged, Rubric, ScaleJudged, Session, load_rubric, read_rubric
from ._sections import Section, check_conversation, dialogue, turn_expected_output, turn_sections
from .conversation import expected_outcome

KEYS = ("name", "criteria", "steps", "scale", "labels", "dimension", "threshold", "level")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


@dataclasses.dataclass(frozen=True, slots=True)
class Definition:
    """A custom criterion as given by the user (validated)."""

    name: str
    criteria: str
    steps: tuple[str, ...] = ()
    scale: tuple[int, int] = (1, 5)
    labels: tuple[tuple[str, float], ...] = ()
    dimension: str = "custom"
    threshold: float = 0.7
    level: str = "trace"

    @property
    def digest(self) -> str:
        blob = json.dumps(dataclasses.asdict(self), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def rubric(self) -> Rubric:
        base = load_rubric("criteria")
        if self.labels:
            choices = {"verdict": {label: "" for label, _ in self.labels}}
        else:
            low, high = self.scale
            anchors = {}
            for v in range(low, high + 1):
                anchors[str(v)] = ("fully meets the criteria" if v == high else
                                   "does not meet the criteria at all" if v == low else
                                   f"meets the criteria partly ({(v - low) / (high - low):.0%} of the way)")
            choices = {"score": anchors}
        prompt = base.prompt("labels" if self.labels else "scale")
        return Rubric(self.name, f"{base.version}-{self.digest}", {"main": prompt}, choices)


class _Criteria:
    definition: ClassVar[Definition]

    def session(self, ctx: MetricContext) -> Session:
        rubric = type(self).__dict__.get("_rubric") or self.definition.rubric()
        return Session(ctx, self.definition.name, rubric, f"{self.definition.name}@{rubric.version}")

    def substitutions(self) -> dict[str, str]:
        d = self.definition
        steps = "\n".join(f"{i}. {s}" for i, s in enumerate(d.steps, 1)) if d.steps else \
            "(no steps given: reason from the criteria directly)"
        return {"criteria": d.criteria, "steps": steps}

    def sections(self, ctx: MetricContext) -> Sequence[Section] | MetricResult:
        if self.definition.level == "turn":
            got = turn_sections(ctx, need_input=False)
            if isinstance(got, MetricResult):
                return got
            i = ctx.turn_index if ctx.turn_index is not None else len(ctx.trace.turns) - 1
            t = ctx.trace.turns[i]
            extra = [Section(f"CONTEXT_{j}", c, f"Context passage {j}:") for j, c in enumerate(t.context, 1)]
            ref = turn_expected_output(ctx.trace, i)
            if ref is not None:
                extra.append(Section("EXPECTED_ANSWER", ref, "The reference answer:"))
            return [*extra, *got]
        bad = check_conversation(ctx.trace)
        if bad is not None:
            return bad
        system = [Section("SYSTEM_PROMPT", ctx.trace.system, "The agent's system prompt:")] if ctx.trace.system else []
        return [*system, *expected_outcome(ctx.trace), *dialogue(ctx.trace)]


class _ScaleCriteria(_Criteria, ScaleJudged):
    pass


class _LabelCriteria(_Criteria, LabelJudged):
    pass


def _definition(name: Any, criteria: Any, steps: Any, scale: Any, labels: Any, dimension: Any, threshold: Any,
                level: Any) -> Definition:
    where = f"criteria metric {name!r}"
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"criteria metric name must be a word (letters, digits, _ . -), got {name!r}")
    if not isinstance(criteria, str) or not criteria.strip():
        raise ConfigError(f"{where}: 'criteria' must be a non-empty text, got {criteria!r}")
    if steps is None:
        steps = ()
    if isinstance(steps, str) or not isinstance(steps, Iterable) or not all(isinstance(s, str) and s.strip() for s in steps):
        raise ConfigError(f"{where}: 'steps' must be a list of texts, got {steps!r}")
    if labels is not None:
        if not isinstance(labels, Mapping) or len(labels) < 2:
            raise ConfigError(f"{where}: 'labels' must map at least two labels to weights in [0, 1], got {labels!r}")
        for k, w in labels.items():
            if not isinstance(k, str) or not _NAME.match(k) or isinstance(w, bool) or not isinstance(w, (int, float)) \
                    or not 0.0 <= w <= 1.0:
                raise ConfigError(f"{where}: label {k!r} needs a word as name and a weight in [0, 1], got {w!r}")
        label_items = tuple((k, float(w)) for k, w in labels.items())
    else:
        label_items = ()
    if scale is None:
        scale = (1, 5)
    if isinstance(scale, str) or not isinstance(scale, Sequence) or len(scale) != 2 or \
            not all(isinstance(v, int) and not isinstance(v, bool) for v in scale) or scale[0] >= scale[1] \
            or scale[1] - scale[0] > 100:
        raise ConfigError(f"{where}: 'scale' must be two integers [low, high] with low < high, got {scale!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"{where}: 'threshold' must be a number in [0, 1], got {threshold!r}")
    if level not in ("trace", "turn"):
        raise ConfigError.unknown(f"level of {where}:", str(level), ("trace", "turn"))
    if not isinstance(dimension, str) or not dimension:
        raise ConfigError(f"{where}: 'dimension' must be a name, got {dimension!r}")
    return Definition(name, criteria.strip(), tuple(s.strip() for s in steps), (int(scale[0]), int(scale[1])),
                      label_items, dimension, float(threshold), level)


def criteria_metric(name: str, criteria: str, steps: Sequence[str] | None = None, *,
                    scale: tuple[int, int] | None = None, labels: Mapping[str, float] | None = None,
                    dimension: str = "custom", threshold: float = 0.7, level: str = "trace",
                    register: bool = True, registry: Registry | None = None, origin: str | None = None,
                    replace: bool = False) -> type:
    """A judge metric class for *criteria*, registered under *name* (give ``scale`` or ``labels``).

    One judge call per trace (``level="trace"``: the whole conversation) or per turn
    (``level="turn"``: that turn's message, reply, context and reference, averaged by the engine).
    """
    if scale is not None and labels is not None:
        raise ConfigError(f"criteria metric {name!r}: give either 'scale' or 'labels', not both")
    d = _definition(name, criteria, steps, scale, labels, dimension, threshold, level)
    return _make(d, d.rubric(), register=register, registry=registry,
                 origin=origin or f"criteria in module {_caller()}", replace=replace)


def _make(d: Definition, rubric: Rubric, *, register: bool, registry: Registry | None, origin: str,
          replace: bool) -> type:
    target = registry or REGISTRY
    base = _LabelCriteria if d.labels else _ScaleCriteria
    body: dict[str, Any] = {
        "__doc__": f"Custom criteria: {d.criteria}", "__module__": __name__,
        "__annotations__": {"threshold": float}, "threshold": d.threshold,
        "definition": d, "_rubric": rubric,
    }
    if d.labels:
        body["weights"] = dict(d.labels)
    else:
        body["scale"] = d.scale
    cls = dataclasses.dataclass(frozen=True, kw_only=True)(type(_class_name(d.name), (base,), body))
    summary = (f"judge labels {', '.join(f'{k} {w:g}' for k, w in d.labels)}" if d.labels else
               f"judge {d.scale[0]}-{d.scale[1]}, (v-{d.scale[0]})/{d.scale[1] - d.scale[0]}") + f": {d.criteria}"
    try:
        cls = metric(d.name, dimension=d.dimension, requires=("judge",), level=d.level, judge_calls=1,
                     summary=" ".join(summary.split())[:200], version=d.digest, register=False)(cls)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace(f"({__name__}.{cls.__qualname__})", f"(from {origin})")) from None
    if register:
        held = target.get(d.name) if d.name in target else None
        # a criteria metric defined again (a config read twice) replaces the old definition
        target.add(cls, origin=origin, replace=replace or hasattr(held, "definition"))
    return cls


def _caller() -> str:
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back  # type: ignore[assignment]
    return frame.f_globals.get("__name__", "?") if frame is not None else "?"


def rubric_metric(name: str, rubric: Any, *, steps: Sequence[str] | None = None, scale: tuple[int, int] | None = None,
                  labels: Mapping[str, float] | None = None, dimension: str = "custom", threshold: float = 0.7,
                  level: str = "trace", register: bool = True, registry: Registry | None = None,
                  replace: bool = False) -> type:
    """A judge metric in one line: ``rubric_metric("politeness", "Is the reply polite?", level="turn")``.

    *rubric* is the criterion as text, or a full rubric (``version: N`` and ``@@ main`` /
    ``@@ choices`` blocks), given inline, as a ``pathlib.Path``, as a file name relative to the
    calling module, or as ``"package:PKG/FILE.md"`` package data. It is read and checked now: a
    missing file, a malformed rubric or labels that do not match are a ConfigError here, before
    any trace is scored. The judge sees the whole conversation (``level="trace"``) or each turn
    (``level="turn"``), fenced, as for :func:`criteria_metric`.
    """
    module = _caller()
    text, where = read_rubric(rubric, module=module)
    if not text.lstrip().startswith("version:"):
        return criteria_metric(name, text, steps, scale=scale, labels=labels, dimension=dimension,
                               threshold=threshold, level=level, register=register, registry=registry,
                               origin=f"module {module}", replace=replace)
    try:
        parsed = Rubric.parse(name, text)
    except ConfigError as exc:
        raise ConfigError(f"judge metric {name!r}: {exc} (rubric from {where})") from None
    if scale is None and labels is None and "score" in parsed.choices:
        keys = sorted(int(k) for k in parsed.choices["score"] if k.lstrip("-").isdigit())
        scale = (keys[0], keys[-1]) if keys else None
    if labels is None and "verdict" in parsed.choices:
        raise ConfigError(f"judge metric {name!r}: its rubric lists verdict labels; give labels={{label: weight}}")
    d = _definition(name, text, steps, scale, labels, dimension, threshold, level)
    rubric_obj = Rubric(name, f"{parsed.version}-{d.digest}", parsed.prompts, parsed.choices)
    return _make(d, rubric_obj, register=register, registry=registry, origin=f"module {module}", replace=replace)


def _class_name(name: str) -> str:
    return "Criteria_" + re.sub(r"\W", "_", name)


def register_criteria(entries: Iterable[Mapping[str, Any]], *, registry: Registry | None = None,
                      origin: str = "config [[criteria]]") -> list[type]:
    """Register the config file's ``[[criteria]]`` tables; the metric classes, in order.

    Each table takes ``name`` and ``criteria`` (required), ``steps``, ``scale`` or ``labels``,
    ``dimension``, ``threshold``, ``level``. Unknown keys, duplicate names and names of built-in
    metrics are configuration errors.
    """
    out: list[type] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise ConfigError(f"[[criteria]] entry {i + 1}: expected a table, got {entry!r}")
        unknown = sorted(set(entry) - set(KEYS))
        if unknown:
            raise ConfigError.unknown(f"key in [[criteria]] entry {i + 1}:", unknown[0], KEYS)
        for required in ("name", "criteria"):
            if required not in entry:
                raise ConfigError(f"[[criteria]] entry {i + 1}: missing {required!r}")
        name = entry["name"]
        if name in seen:
            raise ConfigError(f"[[criteria]]: {name!r} is defined twice")
        seen.add(name)
        params = {k: entry[k] for k in KEYS if k in entry and k not in ("name", "criteria", "steps")}
        out.append(criteria_metric(name, entry["criteria"], entry.get("steps"), registry=registry,
                                   origin=origin, **params))
    return out
