"""Reference matchers: deterministic comparisons of the agent's answer with an expected output.

Which answer is compared with which reference: when any turn has ``expected.output``, each
such turn's output is compared with it and the scores are averaged (per-turn scores in
``details['per_turn']``); otherwise the trace's ``expected.output`` is compared with the final
answer (the output of the last turn that has one). A missing answer is null (missing_data),
as in UAEF's edge-case table. All are opt-in (``default=False``): on free-text answers a
string match is usually the wrong yardstick, and it would fail traces by default.

The pure functions (``normalise``, ``token_f1``, ``extract_numbers``, ``numbers_match``) are
public: Fair Forge's agentic correctness falls back to them without a judge.
"""

from __future__ import annotations

import json
import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..model import MetricResult, Trace, Warning
from ._base import MetricContext, metric
from ._schema import SUPPORTED_KEYWORDS, keywords, schema_errors

# --------------------------------------------------------------------------- pure functions

_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation + "\u2018\u2019\u201c\u201d\u2013\u2014\u2026\u00bf\u00a1")


def normalise(text: str) -> str:
    """SQuAD-style answer normalisation.

    Unicode compatibility form (NFKC), lower case, ASCII and typographic punctuation removed,
    the English articles a/an/the removed, whitespace collapsed.
    """
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(expected: str, actual: str) -> float:
    """SQuAD token F1 of the normalised texts (1.0 when both are empty, 0.0 when one is)."""
    gold, pred = normalise(expected).split(), normalise(actual).split()
    if not gold or not pred:
        return float(gold == pred)
    common = sum((Counter(gold) & Counter(pred)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


_NUMBER = re.compile(r"(?<![\w.])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\w)"
                     r"|(?<![\w.])[-+−]?\.\d+(?!\w)|(?<=\d)[-–](?=\d)")


def extract_numbers(text: str) -> list[float]:
    """Numbers written in ``text``: thousands separators, signs, decimals, exponents.

    '1,284.50' -> 1284.5; '5-7' -> 5, 7 (a range, not minus seven); '-3' -> -3.
    """
    out: list[float] = []
    for m in _NUMBER.finditer(text):
        s = m.group()
        if s in ("-", "–"):
            continue
        try:
            out.append(float(s.replace(",", "").replace("−", "-")))
        except ValueError:
            continue
    return out


def _close(a: float, b: float, rel_tol: float, abs_tol: float) -> bool:
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)


def numeric_score(expected: str, actual: str, *, rel_tol: float = 1e-6, abs_tol: float = 1e-9,
                  mode: str = "all") -> float | None:
    """Share of the expected numbers found in ``actual`` (each actual number used once).

    ``mode="last"``: 1.0 if the last number of ``actual`` equals the last expected number.
    None when ``expected`` holds no number.
    """
    exp = extract_numbers(expected)
    if not exp:
        return None
    act = extract_numbers(actual)
    if mode == "last":
        return float(bool(act) and _close(exp[-1], act[-1], rel_tol, abs_tol))
    unused = list(act)
    found = 0
    for e in exp:
        for i, a in enumerate(unused):
            if _close(e, a, rel_tol, abs_tol):
                found += 1
                del unused[i]
                break
    return found / len(exp)


def numbers_match(expected: str, actual: str, *, rel_tol: float = 1e-6, abs_tol: float = 1e-9) -> bool:
    """Whether every number in ``expected`` appears in ``actual`` (False when expected has none)."""
    return numeric_score(expected, actual, rel_tol=rel_tol, abs_tol=abs_tol) == 1.0


def exact_match(expected: str, actual: str, *, normalize: bool = True) -> bool:
    """Equal after ``normalise`` (or after stripping surrounding whitespace only)."""
    if normalize:
        return normalise(expected) == normalise(actual)
    return expected.strip() == actual.strip()


# --------------------------------------------------------------------------- pairs


def final_answer(trace: Trace) -> tuple[int, str] | None:
    """(index, output) of the last turn with an output."""
    for i in range(len(trace.turns) - 1, -1, -1):
        out = trace.turns[i].output
        if out is not None:
            return i, out
    return None


def reference_pairs(trace: Trace) -> list[tuple[str, str, str | None]] | None:
    """(label, expected, actual) to compare; None when the trace has no expected output."""
    per_turn = [(i, t.expected.output, t.output) for i, t in enumerate(trace.turns)
                if t.expected is not None and t.expected.output is not None]
    if per_turn:
        return [(f"turn {i + 1}", e, a) for i, e, a in per_turn]
    if trace.expected is not None and trace.expected.output is not None:
        final = final_answer(trace)
        return [("final answer", trace.expected.output, final[1] if final else None)]
    return None


def _score_pairs(ctx: MetricContext, fn: Callable[[str, str], float | None], what: str) -> MetricResult:
    pairs = reference_pairs(ctx.trace)
    if pairs is None:
        return ctx.null(Warning.MISSING_DATA, "no expected output (expected.output on the trace or its turns)")
    scores: list[float | None] = []
    notes: list[str] = []
    for label, expected, actual in pairs:
        if actual is None:
            scores.append(None)
            notes.append(f"{label}: no answer")
            continue
        s = fn(expected, actual)
        scores.append(s)
        if s is None:
            notes.append(f"{label}: not applicable")
        elif s < 1.0:
            notes.append(f"{label}: {s:.2f}")
    scored = [s for s in scores if s is not None]
    details: dict[str, Any] = {"per_turn": scores} if len(pairs) > 1 or pairs[0][0] != "final answer" else {}
    if not scored:
        if any(a is None for _, _, a in pairs):
            return ctx.null(Warning.MISSING_DATA, "no agent answer to compare: " + "; ".join(notes), details)
        return ctx.null(Warning.NOT_APPLICABLE, f"{what}: " + "; ".join(notes), details)
    mean = sum(scored) / len(scored)
    reason = f"{what} {mean:.2f} over {len(scored)} answer(s)"
    if notes:
        reason += "; " + "; ".join(notes)
    return ctx.result(mean, reason, details=details)


# --------------------------------------------------------------------------- metrics


@metric("exact_match", dimension="response_quality", requires=("expected_output",), default=False,
        summary="1.0 if normalise(answer) == normalise(expected) else 0.0")
@dataclass(frozen=True, kw_only=True)
class ExactMatch:
    """Exact match after SQuAD normalisation (case, punctuation, articles, whitespace).

    ``normalize=false`` compares the texts with only surrounding whitespace stripped.
    """

    threshold: float = 1.0
    normalize: bool = True

    def score(self, ctx: MetricContext) -> MetricResult:
        return _score_pairs(ctx, lambda e, a: float(exact_match(e, a, normalize=self.normalize)), "exact match")


@metric("numeric_match", dimension="response_quality", requires=("expected_output",), default=False,
        summary="share of the expected numbers found in the answer (within rel_tol / abs_tol)")
@dataclass(frozen=True, kw_only=True)
class NumericMatch:
    """Are the expected numbers in the answer? Null (not_applicable) when the reference has none.

    ``mode="last"`` checks only the answer's last number against the last expected one (GSM8K
    style).
    """

    threshold: float = 1.0
    rel_tol: float = 1e-6
    abs_tol: float = 1e-9
    mode: str = "all"

    def __post_init__(self) -> None:
        if self.mode not in ("all", "last"):
            raise ConfigError(f"metric 'numeric_match': mode must be 'all' or 'last', got {self.mode!r}")
        if self.rel_tol < 0 or self.abs_tol < 0:
            raise ConfigError("metric 'numeric_match': rel_tol and abs_tol must be >= 0")

    def score(self, ctx: MetricContext) -> MetricResult:
        return _score_pairs(ctx, lambda e, a: numeric_score(e, a, rel_tol=self.rel_tol, abs_tol=self.abs_tol,
                                                            mode=self.mode), "numeric match")


@metric("token_f1", dimension="response_quality", requires=("expected_output",), default=False,
        summary="SQuAD token F1 between the normalised answer and reference")
@dataclass(frozen=True, kw_only=True)
class TokenF1:
    """Word overlap with the reference: harmonic mean of token precision and recall."""

    threshold: float = 0.5

    def score(self, ctx: MetricContext) -> MetricResult:
        return _score_pairs(ctx, token_f1, "token F1")


@metric("contains", dimension="response_quality", default=False,
        summary="share of the expected substrings found in the answer")
@dataclass(frozen=True, kw_only=True)
class Contains:
    """Does the answer contain the expected text(s)?

    With ``values`` (a list of strings), the final answer must contain each of them; without,
    each answer must contain its expected output. Whitespace runs compare equal;
    ``case_sensitive`` defaults to false.
    """

    threshold: float = 1.0
    values: list[str] | str | None = None
    """Strings the final answer must contain (one string or a list); default: the expected output."""
    case_sensitive: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.values, str):
            object.__setattr__(self, "values", [self.values])
        if self.values is not None and (not self.values or not all(isinstance(v, str) for v in self.values)):
            raise ConfigError(f"metric 'contains': values must be a non-empty list of strings, got {self.values!r}")

    def _fold(self, text: str) -> str:
        text = " ".join(text.split())
        return text if self.case_sensitive else text.casefold()

    def _share(self, needles: Sequence[str], actual: str) -> float:
        hay = self._fold(actual)
        return sum(self._fold(n) in hay for n in needles) / len(needles)

    def score(self, ctx: MetricContext) -> MetricResult:
        if self.values is None:
            return _score_pairs(ctx, lambda e, a: self._share([e], a), "contains")
        final = final_answer(ctx.trace)
        if final is None:
            return ctx.null(Warning.MISSING_DATA, "no agent answer to search")
        hay = self._fold(final[1])
        missing = [v for v in self.values if self._fold(v) not in hay]
        s = 1 - len(missing) / len(self.values)
        reason = f"{len(self.values) - len(missing)} of {len(self.values)} values found"
        if missing:
            reason += f"; missing {missing}"
        return ctx.result(s, reason, details={"missing": missing})


_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


@metric("regex_match", dimension="response_quality", default=False,
        summary="1.0 if the final answer matches pattern (search, or fullmatch) else 0.0")
@dataclass(frozen=True, kw_only=True)
class RegexMatch:
    """Does the final answer match a regular expression? ``flags``: any of 'imsx'.

    A pattern containing commas cannot go through ``--metric name:k=v,...``; give it in a run
    configuration file or as ``{"name": "regex_match", "pattern": ...}``.
    """

    threshold: float = 1.0
    pattern: str = ""
    fullmatch: bool = False
    flags: str = ""
    _compiled: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.pattern:
            raise ConfigError("metric 'regex_match' needs a pattern: regex_match:pattern=...")
        bad = set(self.flags) - set(_FLAGS)
        if bad:
            raise ConfigError(f"metric 'regex_match': unknown flags {''.join(sorted(bad))!r}; choices: i, m, s, x")
        flags = 0
        for f in self.flags:
            flags |= _FLAGS[f]
        try:
            object.__setattr__(self, "_compiled", re.compile(self.pattern, flags))
        except re.error as exc:
            raise ConfigError(f"metric 'regex_match': bad pattern {self.pattern!r}: {exc}") from None

    def score(self, ctx: MetricContext) -> MetricResult:
        final = final_answer(ctx.trace)
        if final is None:
            return ctx.null(Warning.MISSING_DATA, "no agent answer to match")
        m = (self._compiled.fullmatch if self.fullmatch else self._compiled.search)(final[1])
        if m is None:
            return ctx.result(0.0, f"final answer does not match {self.pattern!r}")
        return ctx.result(1.0, f"final answer matches {self.pattern!r}", [m.group()[:200]])


# --------------------------------------------------------------------------- JSON schema

_FENCE = re.compile(r"^\s*```[\w-]*\s*\n(.*?)\n\s*```\s*$", re.S)


def parse_json_output(text: str) -> Any:
    """JSON from an answer, accepting one surrounding Markdown code fence; raises ValueError."""
    m = _FENCE.match(text)
    return json.loads(m.group(1) if m else text)


@metric("json_schema_valid", dimension="response_quality", default=False,
        summary="1.0 if the final answer is JSON valid against schema else 0.0")
@dataclass(frozen=True, kw_only=True)
class JSONSchemaValid:
    """Is the final answer JSON that validates against ``schema``?

    ``schema``: an object, JSON text, or the path of a .json file. The common subset of JSON
    Schema is checked natively (types, properties, required, additionalProperties, items,
    enum/const, numeric and length bounds, pattern, allOf/anyOf/oneOf/not, local $ref); a
    schema using other keywords needs the ``jsonschema`` package. One surrounding Markdown code
    fence is accepted around the JSON.
    """

    threshold: float = 1.0
    schema: dict[str, Any] | str | None = None
    _validate: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        schema = self.schema
        if schema is None or schema == "":
            raise ConfigError("metric 'json_schema_valid' needs a schema: an object, JSON text or a .json file path")
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError:
                p = Path(schema)
                if not p.is_file():
                    raise ConfigError(f"metric 'json_schema_valid': schema {self.schema!r} is neither JSON nor a "
                                      "file") from None
                try:
                    schema = json.loads(p.read_text(encoding="utf-8"))
                except (OSError, json.JSONDecodeError) as exc:
                    raise ConfigError(f"metric 'json_schema_valid': cannot read schema file {str(p)!r}: "
                                      f"{exc}") from None
        if not isinstance(schema, (dict, bool)):
            raise ConfigError(f"metric 'json_schema_valid': schema must be an object, got {type(schema).__name__}")
        unsupported = sorted(keywords(schema) - SUPPORTED_KEYWORDS) if isinstance(schema, dict) else []
        if unsupported:
            validate = _jsonschema_validator(schema, unsupported)
        else:
            def validate(value: Any, _schema: Any = schema) -> list[str]:
                return schema_errors(value, _schema)
        object.__setattr__(self, "_validate", validate)

    def score(self, ctx: MetricContext) -> MetricResult:
        final = final_answer(ctx.trace)
        if final is None:
            return ctx.null(Warning.MISSING_DATA, "no agent answer to validate")
        try:
            value = parse_json_output(final[1])
        except ValueError as exc:
            return ctx.result(0.0, f"final answer is not valid JSON: {exc}")
        errors = self._validate(value)
        if errors:
            return ctx.result(0.0, f"{len(errors)} schema violation(s)", errors[:20], details={"errors": len(errors)})
        return ctx.result(1.0, "final answer is valid against the schema")


def _jsonschema_validator(schema: Any, unsupported: list[str]) -> Callable[[Any], list[str]]:
    try:
        import jsonschema  # imported here: optional, needed only for schemas beyond the native subset
    except ImportError:
        raise ConfigError(f"metric 'json_schema_valid': the schema uses {', '.join(unsupported)}, beyond the "
                          "natively supported subset; that needs the optional package 'jsonschema': "
                          "pip install jsonschema") from None
    cls = jsonschema.validators.validator_for(schema)
    validator = cls(schema)

    def validate(value: Any) -> list[str]:
        return [f"$.{'.'.join(map(str, e.absolute_path))}: {e.message}" if e.absolute_path else f"$: {e.message}"
                for e in validator.iter_errors(value)]

    return validate
