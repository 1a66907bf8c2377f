"""Turn pydantic validation errors into one readable line: ``field.path: what was wrong``."""

from __future__ import annotations

import re
from typing import Any

_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "integer", float: "number",
               bool: "boolean", type(None): "null"}

_EXPECT = {
    "dict_type": "expected an object", "model_type": "expected an object", "model_attributes_type": "expected an object",
    "list_type": "expected an array", "string_type": "expected a string", "int_type": "expected an integer",
    "int_parsing": "expected an integer", "int_from_float": "expected an integer", "float_type": "expected a number",
    "float_parsing": "expected a number", "bool_type": "expected true or false", "bool_parsing": "expected true or false",
    "missing": "required field is missing", "extra_forbidden": "unknown field (put custom data under 'metadata')",
}

_PATH_PREFIX = re.compile(r"^((?:[A-Za-z_][\w]*|\[\d+\])(?:\.[A-Za-z_]\w*|\[\d+\])*): (.*)$", re.S)


def json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def describe_error(err: dict[str, Any]) -> tuple[str, str]:
    """(field path, message) for one pydantic error dict."""
    kind, loc = err.get("type", ""), tuple(p for p in err.get("loc", ()) if p not in ("function-after", "function-before"))
    field = format_loc(loc)
    if kind == "value_error":
        msg = str(err.get("ctx", {}).get("error", err.get("msg", "")))
        m = _PATH_PREFIX.match(msg)
        if m:  # errors from the messages normaliser carry their own path
            inner, msg = m.group(1), m.group(2)
            field = f"{field}.{inner}" if field else inner
        return field, msg
    if kind == "missing":
        return field, _EXPECT[kind]
    if kind == "extra_forbidden":
        return field, _EXPECT[kind]
    if kind == "literal_error":
        return field, f"expected {err['ctx']['expected']}, got {err.get('input')!r}"
    if kind == "json_invalid":
        return field, f"not valid JSON: {err.get('ctx', {}).get('error', err.get('msg'))}"
    if kind in _EXPECT:
        return field, f"{_EXPECT[kind]}, got {json_type(err.get('input'))}"
    return field, err.get("msg", kind)


def describe_validation_error(exc: Any) -> tuple[str, str]:
    errors = exc.errors(include_url=False)
    field, msg = describe_error(errors[0])
    more = [": ".join(p for p in describe_error(e) if p) for e in errors[1:3]]
    if more:
        msg += "; also " + "; ".join(more)
    if len(errors) > 3:
        msg += f" (and {len(errors) - 3} more)"
    return field, msg
