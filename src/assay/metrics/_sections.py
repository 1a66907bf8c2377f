"""What the judge sees, and checking what it quotes back.

Sections are the pieces of evaluated text a judge metric shows (each fenced by the session);
the helpers build the usual views (the dialogue, the current turn with its ground truth or
context) and return a null result instead when the data does not allow a score. Quotes the
judge returns as evidence are verified against the text it was shown: a normalised substring,
else a difflib similarity of at least QUOTE_CUTOFF over a window of the text, compared only where
the quote's 3-grams occur in the text aligned closely enough to reach it (each 3-gram found by
``str.find``: a quote costs a C search per 3-gram of its own, no Python pass over the text).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from ..model import MetricResult, Trace, Turn, Warning
from ._base import MetricContext

MAX_SECTION_CHARS = 12_000
"""Longer fenced texts are clipped in the middle (the judge would drown in them anyway)."""
QUOTE_CUTOFF = 0.9
"""Minimum difflib similarity for a quote that is not a normalised substring of the text."""


@dataclass(frozen=True, slots=True)
class Section:
    """One piece of evaluated text, fenced under ``label`` and introduced by ``heading``."""

    label: str
    text: str
    heading: str = ""
    source: bool = True
    """Part of the evaluated data, so quotes may come from it (False for judge-derived text)."""


def clip(text: str, limit: int = MAX_SECTION_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters omitted ...]\n{text[-half:]}"


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def tool_text(call: Any) -> str:
    out = f"{call.name}({_json(call.arguments)})"
    if call.error is not None:
        return f"{out}\nerror: {call.error}"
    return f"{out}\nresult: {call.result if isinstance(call.result, str) else _json(call.result)}"


_new, _set_label, _set_text = object.__new__, Section.label.__set__, Section.text.__set__  # type: ignore[attr-defined]
_set_heading, _set_source = Section.heading.__set__, Section.source.__set__  # type: ignore[attr-defined]


def _section(label: str, text: str, heading: str) -> Section:
    """``Section(label, text, heading)`` without the frozen dataclass's ``__init__`` (a third of the
    cost): the fields are set through their slots, as that ``__init__`` does. For the hundreds of
    sections of a long dialogue."""
    s = _new(Section)
    _set_label(s, label)
    _set_text(s, text)
    _set_heading(s, heading)
    _set_source(s, True)
    return s


_TURN_NAMES: list[tuple[str, str, str, str, str]] = []
_NAMED_TURNS = 4096
"""Turns whose section labels and headings are kept once made (a dialogue's names are the same every call)."""


def _turn_names(n: int) -> tuple[str, str, str, str, str]:
    """Labels and headings of 1-based turn *n*: user label, user heading, agent label, agent heading, no-reply heading."""
    if n <= len(_TURN_NAMES):
        return _TURN_NAMES[n - 1]
    names = (f"TURN_{n}_USER", f"Turn {n}, user message:", f"TURN_{n}_AGENT", f"Turn {n}, agent reply:",
             f"Turn {n}: the agent gave no reply (empty section).")
    if n == len(_TURN_NAMES) + 1 and n <= _NAMED_TURNS:
        _TURN_NAMES.append(names)
    return names


def dialogue(trace: Trace, *, tools: bool = True) -> list[Section]:
    """Every message of the conversation as its own fenced section, so no message can forge another."""
    out: list[Section] = []
    add, named = out.append, _TURN_NAMES
    for n, t in enumerate(trace.turns, 1):
        user, user_heading, agent, agent_heading, silent = named[n - 1] if n <= len(named) else _turn_names(n)
        if t.input is not None:
            add(_section(user, t.input, user_heading))
        if tools and t.tool_calls:
            out += [Section(f"TURN_{n}_TOOL_{j}", tool_text(c), f"Turn {n}, tool call {j}:")
                    for j, c in enumerate(t.tool_calls, 1)]
        if t.output is not None:
            add(_section(agent, t.output, agent_heading))
        else:
            add(_section(agent, "", silent))
    return out


def turn_expected_output(trace: Trace, index: int) -> str | None:
    """The turn's expected output; the trace's expected output stands for the last turn's."""
    t = trace.turns[index]
    if t.expected is not None and t.expected.output is not None:
        return t.expected.output
    if index == len(trace.turns) - 1 and trace.expected is not None:
        return trace.expected.output
    return None


def check_output(turn: Turn | None) -> MetricResult | None:
    """missing_data without a reply, invalid_data for an empty one; None when there is text to judge."""
    if turn is None or turn.output is None:
        return MetricContext.null(Warning.MISSING_DATA, "no agent response to judge")
    if not turn.output.strip():
        return MetricContext.null(Warning.INVALID_DATA, "the agent response is empty")
    return None


def check_conversation(trace: Trace) -> MetricResult | None:
    """The conversation-level form of :func:`check_output`: some turn must have a non-empty reply."""
    outputs = [t.output for t in trace.turns if t.output is not None]
    if not outputs:
        return MetricContext.null(Warning.MISSING_DATA, "no agent response in the conversation")
    if not any(o.strip() for o in outputs):
        return MetricContext.null(Warning.INVALID_DATA, "every agent response is empty")
    return None


def exchanges(trace: Trace) -> int:
    """Turns with both a user message and an agent reply (system and tool messages never count)."""
    return sum(1 for t in trace.turns if t.input and t.input.strip() and t.output and t.output.strip())


# -- quote verification -------------------------------------------------------------------------

_TRANSLATE = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u201c": '"',
                            "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"', "\u2013": "-",
                            "\u2014": "-", "\u2212": "-", "\u00a0": " ", "`": "", "*": ""})
_SPEAKER = re.compile(r"^\s*(?:\[?turn\s*\d+\]?[,:]?\s*)?(?:user|agent|assistant|ai|bot)\s*:\s*", re.IGNORECASE)
_EDGES = " \t\n\"'.,;:!?()[]"


def normalise_text(text: str) -> str:
    """Case, quotes, dashes, markdown emphasis and whitespace folded away."""
    text = unicodedata.normalize("NFKC", text).translate(_TRANSLATE).casefold()
    return " ".join(text.split())


_GRAM = 3
_INDEXED = 2000
"""Texts longer than this are compared only where their quote's 3-grams align; shorter ones by difflib too."""
_WINDOWS = 16
"""Windows compared per quote in an indexed text at most, the best-supported alignments first."""


def _starts(hay: str, gram: str) -> list[int]:
    """Where *gram* starts in *hay*, overlapping occurrences included, in order: found by str.find,
    so a quote costs a search per 3-gram of its own (in C), not a Python pass over the whole text."""
    out: list[int] = []
    at = hay.find(gram)
    while at != -1:
        out.append(at)
        at = hay.find(gram, at + 1)
    return out


def _needed(n: int, cutoff: float) -> tuple[float, int]:
    """How many of a quote's 3-grams must occur in the text for some window to reach *cutoff*, and
    the widest spread of their alignments (text position minus quote position).

    A window reaching similarity c = 2M/(n+S) matches M >= c n / (2 - c) of the quote's n characters
    in blocks whose alignments differ by at most G = 2M (1/c - 1) (every gap widens the span S), so
    at least M - (1 + G)(q - 1) of the quote's 3-grams lie inside those blocks.
    """
    most = cutoff * n / (2 - cutoff)
    return most - (1 + 2 * most * (1 / cutoff - 1)) * (_GRAM - 1), int(2 * n * (1 / cutoff - 1))


def _anchors(quote: str, hay: str) -> list[int]:
    """Alignments of the longest match of each third of the quote anywhere in *hay* (a short text)."""
    n = len(quote)
    finder = SequenceMatcher(None, hay, quote, autojunk=False)
    part = max(4, n // 3)
    found = (finder.find_longest_match(0, len(hay), lo, min(n, lo + part)) for lo in range(0, n, part))
    return [m.a - m.b for m in found if m.size]


def _indexed(quote: str, hay: str, need: float, band: int) -> list[int]:
    """Alignments in *hay* (a long text) where a window could reach the cutoff, best supported first:
    those within *band* of others that together hold *need* of the quote's 3-grams."""
    found: dict[str, list[int]] = {}
    hits: dict[int, int] = {}
    for j in range(len(quote) - _GRAM + 1):
        gram = quote[j:j + _GRAM]
        starts = found.get(gram)
        if starts is None:
            starts = found[gram] = _starts(hay, gram)
        for p in starts:
            hits[p - j] = hits.get(p - j, 0) + 1
    alignments = sorted(hits)
    good: list[int] = []
    held = end = covered = 0
    for start, d in enumerate(alignments):  # a sliding band [d, d + band] over the alignments
        while end < len(alignments) and alignments[end] <= d + band:
            held += hits[alignments[end]]
            end += 1
        if held >= need:
            good += alignments[max(start, covered):end]
            covered = end
        held -= hits[d]
    return sorted(good, key=lambda d: -hits[d])[:_WINDOWS]


def _alignments(quote: str, hay: str, need: float, band: int) -> Iterator[int]:
    """Where to compare windows: in a long text where its 3-gram index says; in a short one first at
    the best-supported alignment (a near-verbatim quote ends there), then at the anchors."""
    if need > 0:
        found = _indexed(quote, hay, need, band)
        if len(hay) > _INDEXED:
            yield from found
            return
        yield from found[:1]
    yield from _anchors(quote, hay)


def _similar(quote: str, hay: str, cutoff: float = QUOTE_CUTOFF) -> float:
    """Best similarity of *quote* to a region of *hay* (difflib ratio over an aligned window), or 0.0
    when no region can reach *cutoff*; stops at the first region that does.

    A quote whose 3-grams are too few in the text for any window to reach the cutoff is rejected
    without a comparison. Otherwise windows are compared where :func:`_alignments` says: a quote
    costs about its own length, not the text's; a short text still gets every window it got before.
    """
    n = len(quote)
    if n == 0 or not hay:
        return 0.0
    need, band = _needed(n, cutoff)
    if need > 0:
        shared = sum(quote[j:j + _GRAM] in hay for j in range(n - _GRAM + 1))
        if shared < need:
            return 0.0
    slack = max(3, n // 5)
    best = 0.0
    for d in _alignments(quote, hay, need, band):
        window = hay[max(0, d - slack):d + n + slack]
        blocks = [m for m in SequenceMatcher(None, window, quote, autojunk=False).get_matching_blocks() if m.size]
        if not blocks:
            continue
        matched = sum(m.size for m in blocks)
        span = blocks[-1].a + blocks[-1].size - blocks[0].a
        best = max(best, 2.0 * matched / (n + span))
        if best >= cutoff:
            break
    return best


def quote_found(quote: str, haystack: str, cutoff: float = QUOTE_CUTOFF) -> bool:
    """Whether *quote* (after normalising) occurs in the already-normalised *haystack*.

    Quotes joined with an ellipsis are checked piece by piece; a piece of at most 3 characters must
    match exactly, longer ones may match approximately (difflib similarity >= *cutoff*).
    """
    q = _SPEAKER.sub("", normalise_text(quote))
    pieces = [p.strip(_EDGES) for p in q.split("...")]
    pieces = [p for p in pieces if p]
    if not pieces:
        return False
    for p in pieces:
        if p in haystack:
            continue
        if len(p) <= 3 or _similar(p, haystack, cutoff) < cutoff:
            return False
    return True


def turn_sections(ctx: MetricContext, *, expected: bool = False, context: bool = False,
                  need_input: bool = True) -> Sequence[Section] | MetricResult:
    """The current turn's user message and reply (and ground truth / context) as sections.

    Missing reply -> missing_data, empty reply -> invalid_data; ``expected``/``context`` turn a
    missing reference or context into missing_data.
    """
    t, i = ctx.turn, ctx.turn_index
    if t is None or i is None:  # called on a whole trace: judge its last turn
        i = len(ctx.trace.turns) - 1
        t = ctx.trace.turns[i] if i >= 0 else None
    bad = check_output(t)
    if bad is not None:
        return bad
    assert t is not None and i is not None
    out: list[Section] = []
    if t.input is not None:
        out.append(Section("USER_MESSAGE", t.input, "The user's message:"))
    elif need_input:
        return MetricContext.null(Warning.MISSING_DATA, "the turn has no user message")
    if expected:
        ref = turn_expected_output(ctx.trace, i)
        if ref is None:
            return MetricContext.null(Warning.MISSING_DATA, "no expected output (ground truth) for this turn")
        out.append(Section("EXPECTED_ANSWER", ref, "The reference answer:"))
    if context:
        if not t.context:
            return MetricContext.null(Warning.MISSING_DATA, "no context passages for this turn")
        out += [Section(f"CONTEXT_{j}", c, f"Context passage {j}:") for j, c in enumerate(t.context, 1)]
    out.append(Section("AGENT_RESPONSE", t.output or "", "The agent's response:"))
    return out
