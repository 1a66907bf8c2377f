"""Turn a judge's raw reply into a validated verdict, tolerating what models actually write.

Judges wrap JSON in ```json fences, add prose around it, leave trailing commas and write LaTeX
(``\\frac``) with single backslashes. We repair exactly those and nothing that could change a
well-formed answer; anything still invalid becomes an error message the judge can be re-asked with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

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


def _candidates(text: str) -> Iterator[str]:
    """JSON-looking substrings of *text*, most likely first."""
    text = _THINK.sub("", text).strip()
    for match in _FENCED.finditer(text):
        yield match.group(1).strip()
    yield text
    start, tried = text.find("{"), 0
    while start != -1 and tried < 20:
        end = _balanced_end(text, start)
        if end is not None:
            tried += 1
            yield text[start:end + 1]
        start = text.find("{", start + 1)
    if "{" in text and "}" in text:
        yield text[text.index("{"):text.rindex("}") + 1]


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


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in *text*, after repairs; ParseError when there is none."""
    for candidate in _candidates(text):
        try:
            value = json.loads(repair_json(candidate), strict=False)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    snippet = text.strip().replace("\n", " ")
    snippet = snippet[:120] + ("..." if len(snippet) > 120 else "")
    raise ParseError(f"no JSON object found in the reply: {snippet!r}" if snippet else "empty reply")


def validate(obj: Any, schema: type[pydantic.BaseModel]) -> pydantic.BaseModel:
    """*obj* validated against *schema*; ParseError naming each bad field otherwise."""
    try:
        return schema.model_validate(obj)
    except pydantic.ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors())
        raise ParseError(f"reply does not match {schema.__name__}: {problems}") from None


def parse_verdict(text: str, schema: type[pydantic.BaseModel]) -> pydantic.BaseModel:
    """Extract, repair and validate a reply in one step."""
    return validate(extract_json(text), schema)


@lru_cache(maxsize=256)
def json_schema(schema: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The model's JSON schema (cached, so treat it as read-only: it feeds every key and request)."""
    return schema.model_json_schema()


def schema_text(schema: type[pydantic.BaseModel]) -> str:
    return json.dumps(json_schema(schema), sort_keys=True, separators=(",", ":"))


@lru_cache(maxsize=256)
def strict_schema(schema: type[pydantic.BaseModel]) -> dict[str, Any]:
    """A copy that satisfies OpenAI strict mode: closed objects, every property required, no defaults."""
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
    props = json_schema(schema).get("properties", {})
    result = visit(json_schema(schema))
    result["properties"] = {k: visit(v) for k, v in props.items()}  # keep property names even if "title"
    return result


def output_guess(schema: type[pydantic.BaseModel]) -> int:
    """A rough output-token count for one verdict: long for free text, short for numbers and labels."""
    root = json_schema(schema)
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


def schema_instruction(schema: type[pydantic.BaseModel]) -> str:
    """The sentence that asks for bare JSON when the server cannot enforce the schema itself."""
    return ("Reply with only one JSON object, no prose and no code fences, that validates against "
            f"this JSON schema:\n{schema_text(schema)}")


def reask_message(error: str, schema: type[pydantic.BaseModel]) -> str:
    return f"Your previous reply could not be used: {error}\n{schema_instruction(schema)}"
