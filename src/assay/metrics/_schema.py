"""A validator for the common subset of JSON Schema, so ``json_schema_valid`` needs no extra."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
SUPPORTED_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "uniqueItems",
    "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
    "pattern", "anyOf", "oneOf", "allOf", "not", "$ref", "$defs", "definitions", "minProperties",
    "maxProperties", "multipleOf",
    # annotations: no effect on validity
    "$schema", "$id", "$comment", "title", "description", "default", "examples", "format", "readOnly",
    "writeOnly", "deprecated",
})


def keywords(schema: Any) -> set[str]:
    """Every keyword used anywhere in ``schema``."""
    out: set[str] = set()
    if isinstance(schema, dict):
        for k, v in schema.items():
            out.add(k)
            if k in ("properties", "$defs", "definitions"):
                for sub in (v.values() if isinstance(v, dict) else ()):
                    out |= keywords(sub)
            elif k in ("anyOf", "oneOf", "allOf"):
                for sub in (v if isinstance(v, list) else ()):
                    out |= keywords(sub)
            elif k in ("items", "additionalProperties", "not"):
                out |= keywords(v)
    return out


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def schema_errors(value: Any, schema: Any, root: Any = None, path: str = "$") -> list[str]:
    """Violations of the common JSON-schema subset (``SUPPORTED_KEYWORDS``); empty when valid."""
    root = schema if root is None else root
    if schema is True or schema == {}:
        return []
    if schema is False:
        return [f"{path}: no value is allowed here"]
    errs: list[str] = []
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#"):
            return [f"{path}: only local $ref ('#/...') is supported, got {ref!r}"]
        target: Any = root
        for part in filter(None, ref[1:].split("/")):
            target = target.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(target, dict) else {}
        errs += schema_errors(value, target, root, path)
    t = schema.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        if not any(_TYPE_CHECKS.get(x, lambda v: False)(value) for x in types):
            return errs + [f"{path}: expected {' or '.join(types)}, got {_json_type(value)}"]
    if "enum" in schema and not any(_eq(value, e) for e in schema["enum"]):
        errs.append(f"{path}: {value!r} is not one of {schema['enum']!r}")
    if "const" in schema and not _eq(value, schema["const"]):
        errs.append(f"{path}: expected {schema['const']!r}, got {value!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for kw, bad in (("minimum", lambda v, b: v < b), ("maximum", lambda v, b: v > b),
                        ("exclusiveMinimum", lambda v, b: v <= b), ("exclusiveMaximum", lambda v, b: v >= b)):
            if kw in schema and isinstance(schema[kw], (int, float)) and bad(value, schema[kw]):
                errs.append(f"{path}: {value!r} violates {kw} {schema[kw]!r}")
        if "multipleOf" in schema and schema["multipleOf"]:
            q = value / schema["multipleOf"]
            if not math.isclose(q, round(q), abs_tol=1e-9):
                errs.append(f"{path}: {value!r} is not a multiple of {schema['multipleOf']!r}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errs.append(f"{path}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errs.append(f"{path}: longer than {schema['maxLength']}")
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            errs.append(f"{path}: does not match {schema['pattern']!r}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errs.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errs.append(f"{path}: more than {schema['maxItems']} items")
        if schema.get("uniqueItems"):
            seen = [json.dumps(v, sort_keys=True) for v in value]
            if len(set(seen)) < len(seen):
                errs.append(f"{path}: items are not unique")
        items = schema.get("items")
        if isinstance(items, (dict, bool)):
            for i, v in enumerate(value):
                errs += schema_errors(v, items, root, f"{path}[{i}]")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            if k not in value:
                errs.append(f"{path}: missing required property {k!r}")
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            errs.append(f"{path}: fewer than {schema['minProperties']} properties")
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            errs.append(f"{path}: more than {schema['maxProperties']} properties")
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                errs += schema_errors(v, props[k], root, f"{path}.{k}")
            elif extra is False:
                errs.append(f"{path}: unexpected property {k!r}")
            elif isinstance(extra, dict):
                errs += schema_errors(v, extra, root, f"{path}.{k}")
    for sub in schema.get("allOf", []):
        errs += schema_errors(value, sub, root, path)
    if "anyOf" in schema and not any(not schema_errors(value, s, root, path) for s in schema["anyOf"]):
        errs.append(f"{path}: matches none of anyOf")
    if "oneOf" in schema:
        n = sum(not schema_errors(value, s, root, path) for s in schema["oneOf"])
        if n != 1:
            errs.append(f"{path}: matches {n} of oneOf, expected exactly 1")
    if "not" in schema and not schema_errors(value, schema["not"], root, path):
        errs.append(f"{path}: must not match the 'not' schema")
    return errs


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(v), type(v).__name__)
