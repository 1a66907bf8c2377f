"""Structured-output comparison in the manner of Stickler (UAEF names it and only documents it).

The final answer is parsed as JSON (one Markdown code fence allowed) and compared with the
trace's ``expected.output`` (else the last turn's ``expected.output``), also parsed as JSON.

Similarity (``stickler_overall_score``): objects average their fields (weighted by
``field_weights``, dotted paths, default 1), over the union of keys, so a hallucinated field
scores 0 and a field absent on both sides is not counted; lists are matched by optimal
assignment (Hungarian algorithm) and score sum(matched similarity) / max(len); strings by
normalised Levenshtein similarity (case and whitespace folded; ``string_match="exact"`` for
equality); numbers equal within ``numeric_tolerance`` (relative), numeric strings count as
numbers; booleans exactly. Null, "", [] and {} all mean "no value".

Classification (Stickler's): per leaf value, TP = both present and similarity >=
``match_threshold``; FD (false discovery) = both present, below it; FA (false alarm) = value
where none is expected; FN = expected value missing; TN = both absent. Unmatched list items
count their leaves as FN / FA.

precision = TP / (TP + FA + FD), recall = TP / (TP + FN). The two rates are reported as
1 - rate so that, as for every assay metric, 1.0 is best; the rate itself is in
``details['rate']``: false alarm rate = FA / predicted values, false discovery rate =
FD / predicted values (so precision = 1 - FAR - FDR).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..errors import ConfigError
from ..model import MetricResult, Trace, Warning
from ._base import MetricContext, metric
from .reference import final_answer, parse_json_output

# --------------------------------------------------------------------------- assignment


def linear_sum_assignment(cost: list[list[float]]) -> list[tuple[int, int]]:
    """Minimum-cost matching of rows to columns (Hungarian algorithm with potentials, O(n^2 m)).

    Rectangular matrices are fine: min(rows, cols) pairs are returned, sorted by row.
    """
    n = len(cost)
    m = len(cost[0]) if n else 0
    if n == 0 or m == 0:
        return []
    transposed = n > m
    if transposed:
        cost = [list(col) for col in zip(*cost)]
        n, m = m, n
    inf = math.inf
    u = [0.0] * (n + 1)
    v = [0.0] * (m + 1)
    p = [0] * (m + 1)      # p[j]: row (1-based) matched to column j
    way = [0] * (m + 1)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = [inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0, delta, j1 = p[j0], inf, 0
            row = cost[i0 - 1]
            for j in range(1, m + 1):
                if not used[j]:
                    cur = row[j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j], way[j] = cur, j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    pairs = [(p[j] - 1, j - 1) for j in range(1, m + 1) if p[j] != 0]
    if transposed:
        pairs = [(c, r) for r, c in pairs]
    return sorted(pairs)


# --------------------------------------------------------------------------- similarity


def _empty(v: Any) -> bool:
    return v is None or v == "" or v == [] or v == {}


def levenshtein_similarity(a: str, b: str) -> float:
    """1 - edit distance / longer length, on case- and whitespace-folded text."""
    a, b = " ".join(a.split()).casefold(), " ".join(b.split()).casefold()
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return 1.0 - prev[-1] / len(a)


def _as_number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip().replace(",", ""))
        except ValueError:
            return None
    return None


@dataclass(frozen=True)
class Options:
    match_threshold: float = 0.7
    string_match: str = "levenshtein"
    numeric_tolerance: float = 0.0
    field_weights: tuple[tuple[str, float], ...] = ()


def _leaf_sim(gt: Any, est: Any, o: Options) -> float:
    if isinstance(gt, bool) or isinstance(est, bool):
        return float(type(gt) is type(est) and gt == est)
    g, e = _as_number(gt), _as_number(est)
    if g is not None and e is not None and not (isinstance(gt, str) and isinstance(est, str)):
        return float(math.isclose(g, e, rel_tol=o.numeric_tolerance, abs_tol=0.0) or g == e)
    if isinstance(gt, str) and isinstance(est, str):
        if o.string_match == "exact":
            return float(" ".join(gt.split()) == " ".join(est.split()))
        return levenshtein_similarity(gt, est)
    return float(gt == est)


def similarity(gt: Any, est: Any, o: Options = Options(), path: str = "") -> float:
    """Stickler-style similarity in [0, 1] of two JSON values (see the module doc)."""
    if _empty(gt) and _empty(est):
        return 1.0
    if _empty(gt) or _empty(est):
        return 0.0
    if isinstance(gt, dict) and isinstance(est, dict):
        weights = dict(o.field_weights)
        num = den = 0.0
        for k in gt.keys() | est.keys():
            g, e = gt.get(k), est.get(k)
            if _empty(g) and _empty(e):
                continue
            p = f"{path}.{k}" if path else k
            w = weights.get(p, 1.0)
            num += w * similarity(g, e, o, p)
            den += w
        return num / den if den > 0 else 1.0
    if isinstance(gt, list) and isinstance(est, list):
        matrix = [[similarity(g, e, o, path) for e in est] for g in gt]
        pairs = linear_sum_assignment([[1.0 - s for s in row] for row in matrix])
        return sum(matrix[i][j] for i, j in pairs) / max(len(gt), len(est))
    if isinstance(gt, (dict, list)) or isinstance(est, (dict, list)):
        return 0.0
    return _leaf_sim(gt, est, o)


def _leaves(v: Any) -> int:
    if _empty(v):
        return 0
    if isinstance(v, dict):
        return sum(_leaves(x) for x in v.values())
    if isinstance(v, list):
        return sum(_leaves(x) for x in v)
    return 1


def confusion(gt: Any, est: Any, o: Options = Options()) -> dict[str, int]:
    """Stickler's TP / FA / FD / FN / TN counts over leaf values."""
    c = {"tp": 0, "fa": 0, "fd": 0, "fn": 0, "tn": 0}

    def walk(g: Any, e: Any) -> None:
        if _empty(g) and _empty(e):
            c["tn"] += 1
        elif _empty(g):
            c["fa"] += _leaves(e)
        elif _empty(e):
            c["fn"] += _leaves(g)
        elif isinstance(g, dict) and isinstance(e, dict):
            for k in g.keys() | e.keys():
                walk(g.get(k), e.get(k))
        elif isinstance(g, list) and isinstance(e, list):
            matrix = [[similarity(x, y, o) for y in e] for x in g]
            pairs = linear_sum_assignment([[1.0 - s for s in row] for row in matrix])
            for i, j in pairs:
                if isinstance(g[i], (dict, list)) and isinstance(e[j], (dict, list)):
                    walk(g[i], e[j])
                else:
                    c["tp" if matrix[i][j] >= o.match_threshold else "fd"] += 1
            gi, ej = {i for i, _ in pairs}, {j for _, j in pairs}
            c["fn"] += sum(_leaves(x) for i, x in enumerate(g) if i not in gi)
            c["fa"] += sum(_leaves(y) for j, y in enumerate(e) if j not in ej)
        elif isinstance(g, (dict, list)) or isinstance(e, (dict, list)):
            c["fd"] += max(_leaves(g), 1)
        else:
            c["tp" if _leaf_sim(g, e, o) >= o.match_threshold else "fd"] += 1

    walk(gt, est)
    return c


# --------------------------------------------------------------------------- metrics


@lru_cache(maxsize=1024)
def _compare(expected: str, actual: str | None, o: Options) -> tuple[Any, ...]:
    """(error, similarity, counts) for one expected/actual text pair; memoised across metrics."""
    try:
        gt = parse_json_output(expected)
    except ValueError as exc:
        return (f"expected.output is not valid JSON: {exc}", None, None)
    est: Any = None
    note = ""
    if actual is not None:
        try:
            est = parse_json_output(actual)
        except ValueError as exc:
            note = f"the answer is not valid JSON ({exc}); compared as no value"
    return (note, similarity(gt, est, o), confusion(gt, est, o))


def _expected_text(trace: Trace) -> str | None:
    if trace.expected is not None and trace.expected.output is not None:
        return trace.expected.output
    for t in reversed(trace.turns):
        if t.expected is not None and t.expected.output is not None:
            return t.expected.output
    return None


@dataclass(frozen=True, kw_only=True)
class _Stickler:
    threshold: float = 0.7
    match_threshold: float = 0.7
    """Similarity at or above which a value counts as a match (TP), below as FD."""
    string_match: str = "levenshtein"
    """'levenshtein' (normalised edit similarity) or 'exact'."""
    numeric_tolerance: float = 0.0
    """Relative tolerance for numbers."""
    _options: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        name = type(self).spec.name  # type: ignore[attr-defined]
        if self.string_match not in ("levenshtein", "exact"):
            raise ConfigError(f"metric {name!r}: string_match must be 'levenshtein' or 'exact', "
                              f"got {self.string_match!r}")
        if not 0.0 <= self.match_threshold <= 1.0:
            raise ConfigError(f"metric {name!r}: match_threshold must be in [0, 1], got {self.match_threshold!r}")
        if self.numeric_tolerance < 0:
            raise ConfigError(f"metric {name!r}: numeric_tolerance must be >= 0")
        weights = getattr(self, "field_weights", None) or {}
        if not isinstance(weights, Mapping) or any(not isinstance(v, (int, float)) or v < 0 for v in weights.values()):
            raise ConfigError(f"metric {name!r}: field_weights must map field paths to weights >= 0, got {weights!r}")
        object.__setattr__(self, "_options", Options(self.match_threshold, self.string_match, self.numeric_tolerance,
                                                     tuple(sorted((str(k), float(v)) for k, v in weights.items()))))

    def _compared(self, ctx: MetricContext) -> tuple[MetricResult | None, str, float, dict[str, int]]:
        expected = _expected_text(ctx.trace)
        if expected is None:
            return ctx.null(Warning.MISSING_DATA, "no expected output to compare with"), "", 0.0, {}
        final = final_answer(ctx.trace)
        if final is None:
            return ctx.null(Warning.MISSING_DATA, "no agent answer to compare"), "", 0.0, {}
        note, sim, counts = _compare(expected, final[1], self._options)
        if sim is None:
            return ctx.null(Warning.INVALID_DATA, note), "", 0.0, {}
        return None, note, sim, counts

    def score(self, ctx: MetricContext) -> MetricResult:
        null, note, sim, counts = self._compared(ctx)
        if null is not None:
            return null
        return self._from(ctx, note, sim, counts)

    def _from(self, ctx: MetricContext, note: str, sim: float, c: dict[str, int]) -> MetricResult:
        raise NotImplementedError


def _reason(text: str, note: str, c: dict[str, int]) -> str:
    counts = ", ".join(f"{k.upper()}={v}" for k, v in c.items())
    return f"{text} ({counts})" + (f"; {note}" if note else "")


@metric("stickler_overall_score", dimension="structured_output", requires=("expected_output",), default=False,
        summary="weighted field similarity of the JSON answer vs expected (lists by optimal assignment)")
@dataclass(frozen=True, kw_only=True)
class SticklerOverallScore(_Stickler):
    """Weighted average similarity across all fields of the structured answer."""

    field_weights: dict[str, float] | None = None
    """Weight per dotted field path (list items share their list's path); default 1."""

    def _from(self, ctx: MetricContext, note: str, sim: float, c: dict[str, int]) -> MetricResult:
        return ctx.result(sim, _reason(f"similarity {sim:.2f}", note, c), details={"counts": c})


def _ratio(ctx: MetricContext, num: int, den: int, what: str, note: str, c: dict[str, int],
           invert: bool = False, none_reason: str = "") -> MetricResult:
    if den == 0:
        return ctx.null(Warning.NOT_APPLICABLE, none_reason + (f"; {note}" if note else ""), {"counts": c})
    rate = num / den
    s = 1.0 - rate if invert else rate
    details: dict[str, Any] = {"counts": c}
    if invert:
        details["rate"] = rate
    return ctx.result(s, _reason(f"{what} {rate:.2f}", note, c), details=details)


@metric("stickler_field_precision", dimension="structured_output", requires=("expected_output",), default=False,
        summary="TP / (TP + FA + FD) over leaf values")
@dataclass(frozen=True, kw_only=True)
class SticklerFieldPrecision(_Stickler):
    """Of the values the answer gives, the share that are correct."""

    def _from(self, ctx: MetricContext, note: str, sim: float, c: dict[str, int]) -> MetricResult:
        predicted = c["tp"] + c["fa"] + c["fd"]
        if predicted == 0 and c["fn"] > 0:
            return ctx.result(0.0, _reason("no values predicted", note, c), details={"counts": c})
        return _ratio(ctx, c["tp"], predicted, "precision", note, c, none_reason="nothing expected, nothing predicted")


@metric("stickler_field_recall", dimension="structured_output", requires=("expected_output",), default=False,
        summary="TP / (TP + FN) over leaf values")
@dataclass(frozen=True, kw_only=True)
class SticklerFieldRecall(_Stickler):
    """Of the expected values, the share the answer got right."""

    def _from(self, ctx: MetricContext, note: str, sim: float, c: dict[str, int]) -> MetricResult:
        return _ratio(ctx, c["tp"], c["tp"] + c["fn"], "recall", note, c, none_reason="no expected values")


@metric("stickler_field_f1", dimension="structured_output", requires=("expected_output",), default=False,
        summary="harmonic mean of field precision and recall")
@dataclass(frozen=True, kw_only=True)
class SticklerFieldF1(_Stickler):
    """Harmonic mean of field precision and recall (0 when either is 0)."""

    def _from(self, ctx: MetricContext, note: str, sim: float, c: dict[str, int]) -> MetricResult:
        predicted, relevant = c["tp"] + c["fa"] + c["fd"], c["tp"] + c["fn"]
        if predicted == 0 and relevant == 0:
            return ctx.null(Warning.NOT_APPLICABLE, "nothing expected, nothing predicted", {"counts": c})
        if c["tp"] == 0:
            return ctx.result(0.0, _reason("F1 0.00", note, c), details={"counts": c})
        p, r = c["tp"] / predicted, c["tp"] / relevant
        f1 = 2 * p * r / (p + r)
        return ctx.result(f1, _reason(f"F1 {f1:.2f} (precision {p:.2f}, recall {r:.2f})", note, c),
                          details={"counts": c, "precision": p, "recall": r})


@metric("stickler_false_alarm_rate", dimension="structured_output", requires=("expected_output",), default=False,
        summary="1 - FA / predicted values (FA: a value where none is expected)")
@dataclass(frozen=True, kw_only=True)
class SticklerFalseAlarmRate(_Stickler):
    """Hallucinated values: scored 1 - rate (1.0 = none); the rate is in details['rate']."""

    def _from(self, ctx: MetricContext, note: str, sim: float, c: dict[str, int]) -> MetricResult:
        return _ratio(ctx, c["fa"], c["tp"] + c["fa"] + c["fd"], "false alarm rate", note, c, invert=True,
                      none_reason="no values predicted")


@metric("stickler_false_discovery_rate", dimension="structured_output", requires=("expected_output",),
        default=False, summary="1 - FD / predicted values (FD: a wrong value for an expected field)")
@dataclass(frozen=True, kw_only=True)
class SticklerFalseDiscoveryRate(_Stickler):
    """Wrong values for found fields: scored 1 - rate (1.0 = none); the rate is in details['rate']."""

    def _from(self, ctx: MetricContext, note: str, sim: float, c: dict[str, int]) -> MetricResult:
        return _ratio(ctx, c["fd"], c["tp"] + c["fa"] + c["fd"], "false discovery rate", note, c, invert=True,
                      none_reason="no values predicted")
