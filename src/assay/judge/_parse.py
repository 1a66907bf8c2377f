"""Turn a judge's raw reply into a validated verdict, strictly.

Which object is the verdict:

- With structured output (a JSON-schema response format or a tool call), the reply *is* the
  object: the whole text (a single surrounding code fence aside) must be one object that
  validates; nothing is searched for.
- From free text, every complete top-level JSON object is a candidate, and the verdict is the
  *last* one that validates against the schema. Judges quote the evaluated text, so an agent's
  ``{"score": 5}`` echoed in the judge's prose must never win over the judge's own verdict (it
  rarely validates against the full schema; when it does and disagrees, see the next point).
- Several valid candidates that disagree are an error (a ``judge_error`` with the raw reply
  kept), never a silent pick.

Validation is strict: ``true`` is not a number, ``"5"`` is not 5, ``1`` is not ``true``. The one
documented coercion is an integral number written with a fraction (``5.0``), which counts as 5.

Repairs stay what models actually get wrong and cannot change a well-formed answer: code fences,
trailing commas, and LaTeX (``\\frac``) written with single backslashes.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeAlias

from ._shape import VerdictShape

if TYPE_CHECKING:
    import pydantic

_FENCED = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\n?(.*?)```", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
# LaTeX commands whose first letter is also a JSON escape (\n, \r, \t): "\neq" is LaTeX, "\nThe" a newline.
_LATEX_NRT = frozenset(
    "neq ne nabla nu not ni newline newcommand nonumber notin nmid nleq ngeq norm "
    "rho right rightarrow rangle rceil rfloor rm rvert rVert "
    "tau theta times text textbf textit textrm texttt tfrac to top tilde tan tanh triangle "
    "tag tt".split())


class ParseError(ValueError):
    """The reply holds no usable JSON object, or the object does not fit the schema."""


def _objects(text: str) -> list[dict[str, Any]]:
    """Every complete top-level JSON object in *text*, in order (after repairs)."""
    out: list[dict[str, Any]] = []
    start = text.find("{")
    while start != -1 and len(out) < 50:
        end = _balanced_end(text, start)
        value = None
        if end is not None:
            try:
                value = _loads(text[start:end + 1])
            except ValueError:
                value = None
        if isinstance(value, dict):
            out.append(value)
            start = text.find("{", end + 1)  # type: ignore[operator]
        else:
            start = text.find("{", start + 1)
    return out


_lenient = json.JSONDecoder(strict=False).decode
"""``json.loads(text, strict=False)`` (control characters allowed inside strings) without building a
decoder per call, which ``json.loads`` does whenever it is given an option."""


def _whole(body: str) -> list[dict[str, Any]]:
    """The common case, fast: the reply is one JSON object and nothing else (what ``_objects`` would
    find too, without its per-character scan)."""
    if not (body.startswith("{") and body.endswith("}")):
        return []
    try:
        value = _lenient(body)
    except ValueError:
        return []
    return [value] if isinstance(value, dict) else []


def _strip(text: str) -> str:
    return _THINK.sub("", text).strip()


def _balanced_end(text: str, start: int) -> int | None:
    """Index of the brace closing the object that opens at *start*, respecting strings."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i
    return None


def repair_json(text: str) -> str:
    """Fix stray backslashes inside strings and drop trailing commas outside them."""
    out: list[str] = []
    i, n, in_string = 0, len(text), False
    while i < n:
        ch = text[i]
        if in_string:
            if ch == "\\" and i + 1 < n:
                out.append(_escape(text, i))
                i += 2
                continue
            if ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "}]":
                i += 1
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _loads(text: str) -> Any:
    """``json.loads`` of the repaired *text*. Text without a backslash that parses as it is needs no
    repair (the repairs touch escapes, and trailing commas that valid JSON cannot hold), so the
    character-by-character pass runs only where it can change something."""
    if "\\" not in text:
        try:
            return _lenient(text)
        except ValueError:
            pass
    return _lenient(repair_json(text))


def _escape(text: str, i: int) -> str:
    """The repaired form of the two-character escape starting at text[i] (a backslash)."""
    nxt = text[i + 1]
    word = re.match(r"[A-Za-z]+", text[i + 1:])
    if nxt in '"\\/':
        return "\\" + nxt
    if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
        return "\\u"
    if nxt in "bf" and word and len(word.group()) > 1:
        return "\\\\" + nxt  # \frac, \beta: form feed or backspace followed by letters is never meant
    if nxt in "nrt" and word and word.group() in _LATEX_NRT:
        return "\\\\" + nxt
    if nxt in "bfnrt":
        return "\\" + nxt
    return "\\\\" + nxt  # an invalid JSON escape (\sqrt, \alpha, \(): keep the backslash literally


def _snippet(text: str) -> str:
    snippet = text.strip().replace("\n", " ")
    return snippet[:120] + ("..." if len(snippet) > 120 else "")


def extract_json(text: str) -> dict[str, Any]:
    """The last complete JSON object in *text*, after repairs; ParseError when there is none."""
    found = _objects(_strip(text))
    if found:
        return found[-1]
    snippet = _snippet(text)
    raise ParseError(f"no JSON object found in the reply: {snippet!r}" if snippet else "empty reply")


def _integral(value: Any) -> Any:
    """5.0 -> 5 (the documented coercion); everything else unchanged."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def validate(obj: Any, schema: Schema) -> pydantic.BaseModel:
    """*obj* validated strictly against *schema*; ParseError naming each bad field otherwise."""
    import pydantic  # loaded by now: the schema's model is built before it validates

    try:
        return schema.model_validate_json(json.dumps(_integral(obj)), strict=True)
    except (pydantic.ValidationError, TypeError, ValueError) as exc:
        if not isinstance(exc, pydantic.ValidationError):
            raise ParseError(f"reply does not match {schema.__name__}: {exc}") from None
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors())
        raise ParseError(f"reply does not match {schema.__name__}: {problems}") from None


def parse_verdict(text: str, schema: Schema, *, structured: bool = False) -> pydantic.BaseModel:
    """The verdict in *text* (see the module docstring for which object that is)."""
    body = _strip(text)
    if structured:
        fenced = _FENCED.fullmatch(body)
        if fenced:
            body = fenced.group(1).strip()
        try:
            value = _loads(body)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            snippet = _snippet(text)
            raise ParseError(f"structured reply is not one JSON object: {snippet!r}" if snippet else "empty reply")
        return validate(value, schema)
    found = _whole(body) or _objects(body)
    if not found:
        snippet = _snippet(text)
        raise ParseError(f"no JSON object found in the reply: {snippet!r}" if snippet else "empty reply")
    valid: list[pydantic.BaseModel] = []
    last_error: ParseError | None = None
    for obj in found:
        try:
            valid.append(validate(obj, schema))
        except ParseError as exc:
            last_error = exc
    if not valid:
        assert last_error is not None
        raise last_error
    final = valid[-1]
    if any(v != final for v in valid[:-1]):
        raise ParseError(f"the reply holds {len(valid)} different verdicts that each match {schema.__name__}; "
                         "cannot tell which is the judge's")
    return final


class VerdictSchema:
    """A verdict model (a pydantic model class or a :class:`VerdictShape`) with its option lists
    (enums) in one request's order.

    Options are listed in a per-request order, so a model per order would mean a new pydantic
    model, and its JSON schema, for nearly every call. The order is no part of what is valid, so
    one model validates every order; only what the provider sees (and the cache key) carries the
    order: the model's cached JSON schema with its enum lists reordered, a small dict walk. The
    class answers what the judge stack asks of a model class (``__name__``, ``model_validate*``,
    ``model_json_schema``), so a backend or a scripted judge treats both alike. Make them with
    :func:`ordered` (cached per order); treat every schema it hands out as read-only. A shape's
    pydantic model is built only when something validates (see :mod:`assay.judge._shape`).
    """

    __slots__ = ("base", "orders", "__name__", "_json", "_strict", "_text", "_digest")

    def __init__(self, base: type[pydantic.BaseModel] | VerdictShape, orders: tuple[tuple[str, ...], ...]) -> None:
        self.base, self.orders = base, orders
        self.__name__ = base.name if isinstance(base, VerdictShape) else base.__name__
        self._json: dict[str, Any] | None = None
        self._strict: dict[str, Any] | None = None
        self._text: str | None = None
        self._digest: str | None = None

    def __repr__(self) -> str:
        return f"VerdictSchema({self.__name__}, {self.orders!r})"

    @property
    def model(self) -> type[pydantic.BaseModel]:
        """The pydantic model that validates the verdicts (a shape's is built now if not yet)."""
        return self.base.model if isinstance(self.base, VerdictShape) else self.base

    @property
    def json(self) -> dict[str, Any]:
        if self._json is None:
            self._json = self.reorder(_root(self.base))
        return self._json

    @property
    def strict(self) -> dict[str, Any]:
        if self._strict is None:
            self._strict = self.reorder(_strict(self.base))
        return self._strict

    @property
    def text(self) -> str:
        """``json.dumps(self.json, sort_keys=True, separators=(",", ":"))``, from the base's text cut at its
        option lists (nearly every request has an order of its own: serialising the whole schema for each
        cost 12 us of a failure_rate call's cache key, the lists alone 2)."""
        if self._text is None:
            pieces, lists = _text_template(self.base)
            if not lists:
                self._text = json.dumps(self.json, sort_keys=True, separators=(",", ":"))
            else:
                out = [pieces[0]]
                for (values, original), piece in zip(lists, pieces[1:]):
                    order = self._order_of(values)
                    out.append(original if order is None else _compact(list(order)))
                    out.append(piece)
                self._text = "".join(out)
        return self._text

    @property
    def digest(self) -> str:
        """sha256 of :attr:`text` (the cache key's share of the schema)."""
        if self._digest is None:
            self._digest = hashlib.sha256(self.text.encode("utf-8")).hexdigest()
        return self._digest

    def reorder(self, schema: dict[str, Any]) -> dict[str, Any]:
        """*schema* (a JSON schema of the model, or a rewrite that keeps its layout) with every enum
        whose values are an order's in that order; only the nodes on the way to an enum are copied,
        so the result is as read-only as its source."""
        for path, values in _enums(self.base):
            order = self._order_of(values)
            if order is not None:
                schema = _with_enum(schema, path, list(order))
        return schema

    def _order_of(self, values: frozenset[str]) -> tuple[str, ...] | None:
        """The request's order of an option list with these *values* (None: it keeps the model's)."""
        return next((o for o in self.orders if len(o) == len(values) and set(o) == values), None)

    # what the judge stack (and a scripted judge) asks of a model class
    def model_json_schema(self) -> dict[str, Any]:
        return self.json

    def model_validate(self, obj: Any, **kw: Any) -> pydantic.BaseModel:
        return self.model.model_validate(obj, **kw)

    def model_validate_json(self, data: str | bytes, **kw: Any) -> pydantic.BaseModel:
        return self.model.model_validate_json(data, **kw)

    def model_construct(self, **values: Any) -> pydantic.BaseModel:
        return self.model.model_construct(**values)


Base: TypeAlias = "type[pydantic.BaseModel] | VerdictShape"
"""What a schema is made from: a pydantic model class, or a shape whose model is built when needed."""


@lru_cache(maxsize=256)
def _enums(base: Base) -> tuple[tuple[tuple[Any, ...], frozenset[str]], ...]:
    """Where the model's JSON schema lists options: (path to the node holding ``enum``, its values)."""
    found: list[tuple[tuple[Any, ...], frozenset[str]]] = []

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "enum" and isinstance(value, list):
                    found.append((path, frozenset(value)))
                else:
                    walk(value, (*path, key))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, (*path, i))
    walk(_root(base), ())
    return tuple(found)


_compact = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps' own, made once (it builds one per call)


@lru_cache(maxsize=256)
def _text_template(base: Base) -> tuple[tuple[str, ...], tuple[tuple[frozenset[str], str], ...]]:
    """The base's sorted JSON text cut where its option lists are: (the pieces around them, each list's
    values and its text in the base's order). Joined with each list in a request's order it is that
    order's schema text (:attr:`VerdictSchema.text`). No lists, or a list the cut cannot find once:
    ((), ()), and the text is serialised whole."""
    enums = _enums(base)
    marked = _root(base)
    for i, (path, _) in enumerate(enums):
        marked = _with_enum(marked, path, f"\x00{i}\x00")  # type: ignore[arg-type]
    pieces = re.split(r'"\\u0000(\d+)\\u0000"', json.dumps(marked, sort_keys=True, separators=(",", ":")))
    found = [int(n) for n in pieces[1::2]]
    if not enums or found != list(range(len(enums))):
        return (), ()
    root = _root(base)
    lists = []
    for path, values in enums:
        node: Any = root
        for key in path:
            node = node[key]
        lists.append((values, _compact(node["enum"])))
    return tuple(pieces[0::2]), tuple(lists)


def _with_enum(node: Any, path: tuple[Any, ...], order: list[str]) -> Any:
    """A copy of *node* whose node at *path* lists *order* as its enum (unchanged where there is none)."""
    if not path:
        return {**node, "enum": order} if isinstance(node, dict) and "enum" in node else node
    try:
        child = node[path[0]]
    except (KeyError, IndexError, TypeError):
        return node
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[path[0]] = _with_enum(child, path[1:], order)
    return copy


Schema: TypeAlias = "type[pydantic.BaseModel] | VerdictSchema"
"""What a request's verdict must validate against: a model class, or one in a given option order."""


def ordered(base: Base | VerdictSchema, *orders: tuple[str, ...]) -> VerdictSchema:
    """*base* (a model class, a :class:`VerdictShape`, or another order's schema) with each enum whose
    values are one of *orders* listed in that order (see :class:`VerdictSchema`); one object per order."""
    return _ordered(base.base if isinstance(base, VerdictSchema) else base, orders)


@lru_cache(maxsize=1024)
def _ordered(base: Base, orders: tuple[tuple[str, ...], ...]) -> VerdictSchema:
    return VerdictSchema(base, orders)


def model_of(schema: Schema) -> type[pydantic.BaseModel]:
    """The model class that validates *schema*'s verdicts (builds a shape's model if not yet built)."""
    return schema.model if isinstance(schema, VerdictSchema) else schema


def base_of(schema: Schema) -> Base:
    """What *schema* is made from, whatever the option order: a key for what is the same in every order."""
    return schema.base if isinstance(schema, VerdictSchema) else schema


@lru_cache(maxsize=256)
def _root(base: Base) -> dict[str, Any]:
    return base.json_schema() if isinstance(base, VerdictShape) else base.model_json_schema()


def json_schema(schema: Schema | Base) -> dict[str, Any]:
    """The JSON schema (cached, so treat it as read-only: it feeds every key and request)."""
    return schema.json if isinstance(schema, VerdictSchema) else _root(schema)


def schema_text(schema: Schema) -> str:
    if isinstance(schema, VerdictSchema):
        return schema.text
    return json.dumps(json_schema(schema), sort_keys=True, separators=(",", ":"))


def strict_schema(schema: Schema | Base) -> dict[str, Any]:
    """A copy that satisfies OpenAI strict mode: closed objects, every property required, no defaults."""
    return schema.strict if isinstance(schema, VerdictSchema) else _strict(schema)


@lru_cache(maxsize=256)
def _strict(schema: Base) -> dict[str, Any]:
    def visit(node: Any) -> Any:
        if isinstance(node, dict):
            node = {k: visit(v) for k, v in node.items() if k not in ("default", "title")}
            if node.get("type") == "object" and "properties" in node:
                node["additionalProperties"] = False
                node["required"] = list(node["properties"])
            return node
        if isinstance(node, list):
            return [visit(v) for v in node]
        return node
    props = _root(schema).get("properties", {})
    result = visit(_root(schema))
    result["properties"] = {k: visit(v) for k, v in props.items()}  # keep property names even if "title"
    return result


def bounded_schema(schema: Schema | Base, text: int = 400, quote: int = 160, items: int = 3) -> tuple[dict[str, Any], int]:
    """A copy whose strings and lists have a length cap, and the output tokens that cap allows (see
    :func:`_bounded`); an option order changes the enums, not the bound."""
    if isinstance(schema, VerdictSchema):
        bounded, bound = _bounded(schema.base, text, quote, items)
        return schema.reorder(bounded), bound
    return _bounded(schema, text, quote, items)


@lru_cache(maxsize=256)
def _bounded(schema: Base, text: int, quote: int, items: int) -> tuple[dict[str, Any], int]:
    """A copy whose strings and lists have a length cap, and the output tokens that cap allows.

    For grammar-constrained backends (llama.cpp): the grammar then forces the reply to close in
    time, so a small model cannot loop inside ``reasoning`` until max_tokens and leave nothing
    that parses. Strings in lists (quotes) get *quote* characters, other strings *text*, lists
    *items* entries, or the schema's own bounds where tighter. Validation keeps the original schema, so a longer reply from elsewhere is fine.
    """
    def visit(node: Any, in_list: bool = False) -> Any:
        if isinstance(node, list):
            return [visit(v, in_list) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: ({n: visit(v) for n, v in node[k].items()} if k in ("properties", "$defs")
                   else visit(v, True) if k == "items" else visit(v, in_list) if k in ("anyOf", "oneOf", "allOf")
                   else v) for k, v in node.items()}
        # A schema's own bound (the compact form's) stands when it is the tighter one.
        if out.get("type") == "string" and "enum" not in out:
            out["maxLength"] = min(out.get("maxLength", 1 << 30), quote if in_list else text)
        elif out.get("type") == "array":
            # ... but never below the schema's minItems (one entry per agent reply, say).
            out["maxItems"] = max(out.get("minItems", 0), min(out.get("maxItems", 1 << 30), items))
        return out

    bounded = visit(_root(schema))
    defs = bounded.get("$defs", {})

    def tokens(node: dict[str, Any]) -> int:
        if "$ref" in node:
            return tokens(defs.get(node["$ref"].rsplit("/", 1)[-1], {}))
        kind = node.get("type")
        if kind == "object" or "properties" in node:
            return 4 + sum(6 + tokens(v) for v in node.get("properties", {}).values())
        if kind == "array":
            return 2 + node.get("maxItems", items) * (2 + tokens(node.get("items", {})))
        if kind == "string" and "enum" not in node:
            return node.get("maxLength", text) // 3 + 2  # ~3 characters per token for English prose
        return 6
    return bounded, tokens(bounded)


def output_guess(schema: Schema) -> int:
    """A rough output-token count for one verdict: long for free text, short for numbers and labels."""
    return _output_guess(base_of(schema))


@lru_cache(maxsize=256)
def _output_guess(schema: Base) -> int:
    root = _root(schema)
    defs = root.get("$defs", {})

    def size(node: dict[str, Any], depth: int = 0) -> int:
        if depth > 5:
            return 10
        if "$ref" in node:
            return size(defs.get(node["$ref"].rsplit("/", 1)[-1], {}), depth + 1)
        for key in ("anyOf", "oneOf", "allOf"):
            if key in node:
                return max(size(n, depth + 1) for n in node[key])
        kind = node.get("type")
        if kind == "object" or "properties" in node:
            return 4 + sum(6 + size(v, depth + 1) for v in node.get("properties", {}).values())
        if kind == "array":
            return 5 * size(node.get("items", {}), depth + 1)
        if kind == "string" and "enum" not in node:
            return 60
        return 4
    return max(16, size(root))


def schema_instruction(schema: Schema) -> str:
    """The sentence that asks for bare JSON when the server cannot enforce the schema itself."""
    return ("Reply with only one JSON object, no prose and no code fences, that validates against "
            f"this JSON schema:\n{schema_text(schema)}")


def reask_message(error: str, schema: Schema) -> str:
    return f"Your previous reply could not be used: {error}\n{schema_instruction(schema)}"
