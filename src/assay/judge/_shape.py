"""Verdict shapes: a flat verdict model's fields as data, so that its JSON schema needs no pydantic.

A judge request carries the verdict's JSON schema (response format, field guide, output bound,
cache key); only a reply needs the pydantic model that validates it. Importing pydantic and
building the first model is the largest single cost between a run's start and its first request
(~50 ms), and the first reply comes a judge latency later. A :class:`VerdictShape` gives the JSON
schema at once, in exactly the form pydantic writes for the same model (a test holds the two
equal, so cache keys do not change), and builds the model when a reply first needs it, or before:
:func:`build_pending` builds every shape's model, and the engine calls it in a background thread
the first time a run waits for its judge. Wrap a shape in :func:`assay.judge.ordered` to use it as
a request's schema; a pydantic model class is as good a schema, built at once.

Measured (issue #43, 1,000 conversations, a 100 ms judge): spawn to first request 0.29 s instead of
0.35 s, but the build (~60-100 ms in the thread) then meets the first round of replies, so the wall
time did not change; the gain is whole with a judge slower than the build.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    import pydantic

Kind = Literal["string", "integer", "boolean", "array", "enum"]
_KINDS: tuple[str, ...] = get_args(Kind)


@dataclass(frozen=True, slots=True)
class VerdictField:
    """One field of a verdict: a string, an integer, a boolean, a list of strings, or one of *options*.

    ``minimum``/``maximum`` bound an integer and are validated; ``max_length`` (of a string, or of
    each entry of a list) and ``max_items`` reach the judge as schema keywords only (a grammar-
    constrained backend enforces them; validation does not, so a longer reply from elsewhere counts).
    """

    name: str
    kind: Kind
    description: str | None = None
    minimum: int | None = None
    maximum: int | None = None
    max_length: int | None = None
    max_items: int | None = None
    options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"verdict field {self.name!r}: kind {self.kind!r} is not one of {', '.join(_KINDS)}")
        if (self.kind == "enum") != bool(self.options):
            raise ValueError(f"verdict field {self.name!r}: options are for kind 'enum', and it needs them")
        misplaced = [k for k, kinds in (("minimum", ("integer",)), ("maximum", ("integer",)),
                                        ("max_length", ("string", "array")), ("max_items", ("array",)))
                     if getattr(self, k) is not None and self.kind not in kinds]
        if misplaced:
            raise ValueError(f"verdict field {self.name!r}: {', '.join(misplaced)} do not apply to kind {self.kind!r}")

    def json_schema(self) -> dict[str, Any]:
        """The property's JSON schema as pydantic writes it (keys sorted)."""
        node: dict[str, Any] = {"title": self.name.title().replace("_", " ")}
        if self.description is not None:
            node["description"] = self.description
        if self.kind == "array":
            node["type"] = "array"
            node["items"] = {"type": "string"} if self.max_length is None else {
                "maxLength": self.max_length, "type": "string"}
            if self.max_items is not None:
                node["maxItems"] = self.max_items
        elif self.kind == "enum":
            node["type"], node["enum"] = "string", list(self.options)
        else:
            node["type"] = self.kind
            if self.kind == "string" and self.max_length is not None:
                node["maxLength"] = self.max_length
            if self.minimum is not None:
                node["minimum"] = self.minimum
            if self.maximum is not None:
                node["maximum"] = self.maximum
        return dict(sorted(node.items()))

    def annotation(self) -> tuple[Any, Any]:
        """``(type, pydantic.Field(...))`` for ``pydantic.create_model``."""
        import pydantic

        extra: dict[str, Any] = {}
        if self.kind == "array":
            kind: Any = list[str]
            if self.max_items is not None:
                extra["maxItems"] = self.max_items
            if self.max_length is not None:
                extra["items"] = {"type": "string", "maxLength": self.max_length}
        elif self.kind == "enum":
            kind = Literal[self.options]  # type: ignore[valid-type]
        else:
            kind = {"string": str, "integer": int, "boolean": bool}[self.kind]
            if self.kind == "string" and self.max_length is not None:
                extra["maxLength"] = self.max_length
        bounds = {k: v for k, v in (("ge", self.minimum), ("le", self.maximum)) if v is not None}
        if self.description is None and not extra and not bounds:
            return (kind, ...)
        return (kind, pydantic.Field(description=self.description, json_schema_extra=extra or None, **bounds))


@dataclass(frozen=True, slots=True)
class VerdictShape:
    """A flat verdict model as data: its name and fields in order (extra keys in a reply are ignored).

    Equal shapes share one model. ``json_schema`` builds a new dict each time: the judge stack keeps one per
    shape (``assay.judge._parse``), so build once, not per request.
    """

    name: str
    fields: tuple[VerdictField, ...]

    def __post_init__(self) -> None:
        with _PENDING_LOCK:
            if self not in _MODELS:
                _PENDING.add(self)

    def json_schema(self) -> dict[str, Any]:
        """The model's JSON schema as pydantic writes it (properties in field order)."""
        return {"properties": {f.name: f.json_schema() for f in self.fields},
                "required": [f.name for f in self.fields], "title": self.name, "type": "object"}

    @property
    def model(self) -> type[pydantic.BaseModel]:
        """The pydantic model (built on first use, once: a build in another thread is waited for)."""
        model = _MODELS.get(self)
        if model is None:
            with _BUILD_LOCK:
                model = _MODELS.get(self)
                if model is None:
                    model = _MODELS[self] = _build(self)
            with _PENDING_LOCK:
                _PENDING.discard(self)
        return model


def _build(shape: VerdictShape) -> type[pydantic.BaseModel]:
    import pydantic

    return pydantic.create_model(shape.name, __config__=pydantic.ConfigDict(extra="ignore"),
                                 **{f.name: f.annotation() for f in shape.fields})


_BUILD_LOCK = threading.Lock()
"""Held while a model is built: a thread that needs one being built waits for it (one class per shape)."""
_PENDING_LOCK = threading.Lock()
_MODELS: dict[VerdictShape, Any] = {}
_PENDING: set[VerdictShape] = set()


def pending() -> bool:
    """Whether a shape made so far has no model yet."""
    return bool(_PENDING)


def build_pending() -> None:
    """Build the model of every shape made so far that has none yet (imports pydantic if there is one).

    For a background thread: a run's first replies then find their models ready."""
    while True:
        with _PENDING_LOCK:
            if not _PENDING:
                return
            shape = _PENDING.pop()
        try:
            shape.model  # noqa: B018 - built and kept
        except Exception:  # noqa: BLE001 - the reply that needs it builds it again and reports the error there
            return
