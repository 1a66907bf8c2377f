"""Answers read as probabilities: P(yes) of each yes/no (and label) field of a verdict, from the
reply's token log-probabilities (``Verdict.tokens``, asked for with the ``logprobs`` option).

A field's value is found in the reply's JSON; at each token that spells its beginning, the
alternatives the server listed (``top_logprobs``) are read as other values where their text
continues the same way (``"fa"`` or ``"false"`` against ``true``), and the greedy path carries on
until only one allowed value is left. The mass found for each allowed value is normalised over
the values the schema allows (``true``/``false``, or the label set): a server's probabilities are
the model's before its grammar, so tokens that no allowed value starts with are left out. An
alternative that more than one value starts with is shared between them equally. A value no
listed alternative reaches gets no mass (with ``top_logprobs`` of 10-20 a real contender is
listed), so P(yes) of a field whose other value never shows is 1.0 or 0.0: the greedy answer.
"""

from __future__ import annotations

import json
import math
import typing
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._protocol import TokenLogprob, Verdict

if TYPE_CHECKING:
    import pydantic

_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


def choices_of(schema: type[pydantic.BaseModel]) -> dict[str, tuple[Any, ...]]:
    """The top-level fields of *schema* whose values are a closed set: bools and string Literals."""
    out: dict[str, tuple[Any, ...]] = {}
    for name, info in schema.model_fields.items():
        annotation = info.annotation
        if annotation is bool:
            out[name] = (True, False)
        elif typing.get_origin(annotation) is typing.Literal:
            values = typing.get_args(annotation)
            if values and all(isinstance(v, str) for v in values):
                out[name] = values
    return out


def answer_probs(verdict: Verdict, schema: type[pydantic.BaseModel],
                 fields: Sequence[str] | None = None) -> dict[str, Any]:
    """P(yes) of each yes/no field of *verdict* (a float), and each label field's distribution over its
    labels (``{label: p}``), for the fields of *schema* (or just *fields*) the tokens allow; ``{}`` when
    the verdict has no token log-probabilities (the greedy answer is all there is)."""
    if not verdict.tokens or verdict.parsed is None:
        return {}
    return field_probs(verdict.raw, verdict.tokens, choices_of(schema), fields)


def field_probs(raw: str, tokens: Sequence[TokenLogprob], choices: dict[str, tuple[Any, ...]],
                fields: Sequence[str] | None = None) -> dict[str, Any]:
    """:func:`answer_probs` on a raw reply and its tokens (which must spell it exactly)."""
    if "".join(t.token for t in tokens) != raw:
        return {}
    spans = _value_spans(raw, set(choices))
    if spans is None:
        return {}
    starts, pos = [], 0
    for t in tokens:
        starts.append(pos)
        pos += len(t.token)
    out: dict[str, Any] = {}
    for name, values in choices.items():
        if (fields is not None and name not in fields) or name not in spans:
            continue
        texts = {json.dumps(v): v for v in values}
        mass = _value_mass(raw, tokens, starts, spans[name], tuple(texts))
        total = sum(mass.values())
        if not total > 0:
            continue
        probs = {texts[t]: mass.get(t, 0.0) / total for t in texts}
        out[name] = round(probs[True], 6) if values == (True, False) else {k: round(p, 6) for k, p in probs.items()}
    return out


def _value_spans(raw: str, wanted: set[str]) -> dict[str, tuple[int, int]] | None:
    """Character spans of the top-level values of the first JSON object in *raw* that holds *wanted*'s keys."""
    start = raw.find("{")
    while start >= 0:
        spans = _object_spans(raw, start)
        if spans is not None and wanted & spans.keys():
            return spans
        start = raw.find("{", start + 1)
    return None


def _object_spans(raw: str, i: int) -> dict[str, tuple[int, int]] | None:
    spans: dict[str, tuple[int, int]] = {}
    try:
        i += 1
        while True:
            while raw[i] in _SPACE:
                i += 1
            if raw[i] == "}":
                return spans
            key, i = _DECODER.raw_decode(raw, i)
            while raw[i] in _SPACE:
                i += 1
            if raw[i] != ":" or not isinstance(key, str):
                return None
            i += 1
            while raw[i] in _SPACE:
                i += 1
            _, end = _DECODER.raw_decode(raw, i)
            spans[key] = (i, end)
            i = end
            while raw[i] in _SPACE:
                i += 1
            if raw[i] == ",":
                i += 1
            elif raw[i] != "}":
                return None
    except (ValueError, IndexError):
        return None


def _value_mass(raw: str, tokens: Sequence[TokenLogprob], starts: list[int], span: tuple[int, int],
                values: tuple[str, ...]) -> dict[str, float]:
    """Probability mass of each of *values* (their JSON texts) at the value spanning *span* in *raw*."""
    begin, end = span
    greedy = raw[begin:end]
    if greedy not in values:
        return {}
    first = next((k for k in range(len(tokens)) if starts[k] <= begin < starts[k] + len(tokens[k].token)), None)
    if first is None:
        return {}
    mass: dict[str, float] = {}
    live = set(values)
    logp = 0.0
    for k in range(first, len(tokens)):
        token, at = tokens[k], starts[k]
        lead = raw[at:begin]          # the part of this token before the value (a quote, ":")
        before = raw[begin:at]        # the value's text already spelled by earlier tokens
        alternatives = dict(token.top)
        alternatives.setdefault(token.token, token.logprob)
        for alt, alt_logp in alternatives.items():
            if alt == token.token or not alt.startswith(lead) or len(alt) == len(lead):
                continue
            text = before + alt[len(lead):]
            matching = [v for v in live if v.startswith(text) or text.startswith(v)]
            for v in matching:
                mass[v] = mass.get(v, 0.0) + math.exp(logp + alt_logp) / len(matching)
        logp += token.logprob
        spelled = raw[begin:min(end, at + len(token.token))]
        live = {v for v in live if v.startswith(spelled)}
        if len(live) <= 1 or at + len(token.token) >= end:
            break
    mass[greedy] = mass.get(greedy, 0.0) + math.exp(logp)
    return mass
