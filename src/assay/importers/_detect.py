"""What detection says when it cannot decide, and a second look at the lines of mixed files.

``closest(head)`` names the built-in format whose fields the first record comes nearest to and
the first of that format's fields it lacks, for the "cannot tell the input format" message.

``other_text(head)`` names what a file with no JSON in its head is instead (CSV, YAML, ...), and
``assay_output(head)`` which of assay's own outputs (results, a comparison) a file given as traces is.

``Relines`` reads single lines of a JSON Lines file again (through a second handle, forward
only), so that a line the file's format could not read is detected on its own: a proxy log may
hold a Responses API line after chat-completions lines.
"""

from __future__ import annotations

import re
from typing import Any

from ._sniff import inspect
from ._stream import _sniff_mode

SHAPES: dict[str, tuple[tuple[str, ...], ...]] = {
    "assay": (("id", "turns"), ("id", "messages")),
    "openai": (("messages",), ("request", "response")),
    "anthropic": (("messages", "system"), ("request", "response")),
    "openai_responses": (("object", "output"), ("input", "output")),
    "openai_batch": (("custom_id", "response", "error"), ("custom_id", "method", "url", "body")),
    "langfuse": (("id", "observations"), ("trace", "observations"), ("traceId", "type", "parentObservationId")),
    "uaef": (("trace", "ground_truth"), ("multi_agent_trace",), ("test_cases",)),
    "deepeval": (("input", "actual_output", "retrieval_context"), ("turns", "scenario")),
    "eval_lib": (("input", "actual_output", "tools_called"),),
    "fair_forge": (("session_id", "assistant_id", "conversation"),),
    "inspect": (("version", "eval", "samples"),),
    "langchain": (("type", "content"), ("lc", "type", "id", "kwargs"), ("messages",)),
    "otel": (("resourceSpans",),),
    "openinference": (("name", "context", "span_kind", "attributes"),),
    "gemini": (("candidates", "usageMetadata", "modelVersion"), ("contents", "systemInstruction", "generationConfig")),
    "tau_bench": (("task_id", "reward", "info", "traj", "trial"),),
    "adk_evalset": (("eval_set_id", "eval_cases", "name"), ("eval_id", "conversation", "session_input"),
                    ("query", "expected_tool_use", "reference")),
    "swe_agent": (("trajectory", "history", "info", "environment"), ("info", "messages", "trajectory_format")),
    "langsmith": (("id", "trace_id", "run_type", "inputs", "outputs"), ("post", "patch")),
}
"""Top-level fields of each built-in format's records, most telling first (one tuple per shape)."""


def closest(head: bytes) -> str:
    """'the closest is FORMAT (no field 'X' in the first record); ' for the head, or '' without a first record."""
    h = inspect(head)
    rec = h.first
    keys = frozenset(rec) if isinstance(rec, dict) else h.keys
    if not keys:
        return ""
    if isinstance(rec, dict) and isinstance(rec.get("input"), str) and isinstance(rec.get("output"), str):
        return ("its first record has 'input' and 'output' at the top, one turn of assay's own format, which "
                'puts them in turns: {"id": "...", "turns": [{"input": "...", "output": "..."}]}; or ')
    best: tuple[tuple[int, float], str, tuple[str, ...]] | None = None
    for name, shapes in SHAPES.items():
        for fields in shapes:
            shared = len(keys & set(fields))
            if not shared:
                continue
            score = (shared, shared / len(keys | set(fields)))  # the fields shared first, then how much else differs
            if best is None or score > best[0]:
                best = (score, name, fields)
    if best is None:
        return f"its first record has the fields {sorted(keys)[:8]}, which no format uses; "
    _, name, fields = best
    missing = next((f for f in fields if f not in keys), None)
    why = f"no field {missing!r}" if missing else "the values did not fit"
    return f"the closest is {name} ({why} in the first record); "


ASSAY_OUTPUTS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"run", "summary", "traces"}), "assay results (what `assay run -o results.json` writes)"),
    (frozenset({"source", "overall", "passed", "metrics"}), "assay results (what `assay run -o results.jsonl` writes)"),
    (frozenset({"wins_b"}), "the output of `assay versus`"),
    (frozenset({"ranking"}), "the output of `assay tournament`"),
    (frozenset({"regressions"}), "the output of `assay compare`"),
)
"""The top-level fields that tell each of assay's own JSON outputs, and what to call it."""


def assay_output(head: bytes) -> str | None:
    """Which of assay's own outputs the first record of ``head`` is (results, a comparison, ...), or None."""
    h = inspect(head)
    keys = frozenset(h.first) if isinstance(h.first, dict) else frozenset(h.keys)  # keys: a record over the head
    return next((what for fields, what in ASSAY_OUTPUTS if fields <= keys), None)


_KEY_VALUE = re.compile(r"[A-Za-z_][\w .-]*:(\s|$)")


def other_text(head: bytes) -> str | None:
    """What a head no JSON record could be read from looks like (CSV, TSV, YAML, XML or HTML), or None.

    Asked only when no line of the head is a JSON record, so JSON Lines whose first lines are broken
    (their fragments hold braces, or quoted keys) still go to the native reader, which names each line.
    """
    lines = [ln.strip() for ln in head.lstrip(b"\xef\xbb\xbf").decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        return None
    first = lines[0]
    if first.startswith("<"):
        return "an XML or HTML document"
    if any(c in first for c in "{}[]") or '":' in first:
        return None
    if first == "---" or first.startswith("- ") or _KEY_VALUE.match(first):
        return "YAML"
    for sep, name in ((",", "CSV"), ("\t", "TSV"), (";", "CSV")):
        if first.count(sep) and len(lines) > 1 and lines[1].count(sep) >= first.count(sep):
            shown = (first if len(first) <= 60 else first[:57] + "...").replace("\t", "\\t")
            return f"{name} (its first line reads as a header: {shown})"
    return None


def is_lines(head: bytes) -> bool:
    """Whether the file whose head this is is read as JSON Lines."""
    return _sniff_mode(iter([head]))[0] == "lines"


class Relines:
    """Lines of a file by number, read forward through their own handle (numbers must not go back)."""

    def __init__(self, path: str) -> None:
        self._f: Any = None
        self._path, self._n = path, 0

    def line(self, n: int) -> bytes | None:
        if self._f is None:
            self._f = open(self._path, "rb")  # noqa: SIM115 (closed by close())
        if n <= self._n:
            return None
        for raw in self._f:
            self._n += 1
            if self._n == n:
                return raw
        return None

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
