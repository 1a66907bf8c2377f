"""Test-retest with ``--repeats N``: does the judge agree with itself, and with itself in another option order?

Each repeat of a judge metric is an independent judge call (its own cache entry and, for label
metrics, its own shuffled option order). Per trace the combined result keeps the mean score, and
its pass/fail verdict is the **majority** of the repeats' verdicts (a tie goes to the mean score);
``details`` records each repeat's verdict, the ``flips`` (repeats that disagree with the
majority) and ``unstable`` when any does. Per metric the run's ``statistics['test_retest']`` holds
the share of unstable traces, the flip total, the self-agreement across repeats (Krippendorff's
alpha: nominal on labels and pass/fail, interval on 1-5 scores) and, for label metrics, the
position agreement: how often two repeats that showed the options in different orders gave the
same label.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..model import MetricResult, TraceResult

MAX_UNITS = 200_000
"""Traces per metric kept for alpha (a few values each); beyond it alpha rests on the first ones."""


def repeat_verdicts(r: MetricResult, parts: Sequence[MetricResult], threshold: float | None) -> MetricResult:
    """*r* (the repeats combined) with each repeat's verdict, the majority and the flip count in details."""
    if threshold is None:
        return r
    verdicts = [None if p.score is None else p.score >= threshold for p in parts]
    given = [v for v in verdicts if v is not None]
    if len(given) < 2:
        return r
    n_pass = sum(given)
    n_fail = len(given) - n_pass
    flips = min(n_pass, n_fail)
    details = {**r.details, "repeat_passed": verdicts, "flips": flips, "unstable": flips > 0}
    if n_pass != n_fail:
        details["majority_passed"] = n_pass > n_fail
    return r.replace(details=details)


class RetestTotals:
    """Run-level test-retest figures, fed one TraceResult at a time (results are streamed)."""

    def __init__(self, judged: Sequence[str]) -> None:
        self.names = list(judged)
        self.stats: dict[str, dict[str, Any]] = {n: {"n": 0, "unstable": 0, "flips": 0, "pairs_reordered": 0,
                                                     "agree_reordered": 0} for n in self.names}
        self.units: dict[str, list[list[Any]]] = {n: [] for n in self.names}
        self.level: dict[str, str] = {}

    def add(self, t: TraceResult) -> None:
        for name in self.names:
            r = t.metrics.get(name)
            if r is None or "repeat_passed" not in r.details:
                continue
            s = self.stats[name]
            s["n"] += 1
            s["unstable"] += bool(r.details.get("unstable"))
            s["flips"] += int(r.details.get("flips", 0))
            values, level = _repeat_values(r)
            self.level.setdefault(name, level)
            if len(self.units[name]) < MAX_UNITS:
                self.units[name].append(values)
            per = r.details.get("per_repeat_details") or []
            shown = [(((d or {}).get("option_order") or {}).get("verdict"), (d or {}).get("verdict")) for d in per]
            for i in range(len(shown)):
                for j in range(i + 1, len(shown)):
                    (oi, vi), (oj, vj) = shown[i], shown[j]
                    if oi and oj and vi is not None and vj is not None and oi != oj:
                        s["pairs_reordered"] += 1
                        s["agree_reordered"] += vi == vj

    def finish(self) -> dict[str, dict[str, Any]]:
        from ..stats import krippendorff_alpha  # at a run's end: `assay.stats` is not on the way to its first call

        out = {}
        for name in self.names:
            s = self.stats[name]
            if not s["n"]:
                continue
            row: dict[str, Any] = {"n": s["n"], "unstable": s["unstable"], "unstable_share": s["unstable"] / s["n"],
                                   "flips": s["flips"], "self_alpha": krippendorff_alpha(self.units[name],
                                                                                         self.level[name]),
                                   "alpha_level": self.level[name]}
            if s["pairs_reordered"]:
                row["position_agreement"] = s["agree_reordered"] / s["pairs_reordered"]
                row["position_pairs"] = s["pairs_reordered"]
            out[name] = row
        return out


def _repeat_values(r: MetricResult) -> tuple[list[Any], str]:
    """What each repeat said, and the alpha level that fits it: labels, raw 1-5 scores, else pass/fail."""
    per = r.details.get("per_repeat_details") or []
    labels = [(d or {}).get("verdict") for d in per]
    if per and any(v is not None for v in labels):
        return labels, "nominal"
    raw = [(d or {}).get("raw_score") for d in per]
    if per and any(v is not None for v in raw):
        return raw, "interval"
    return list(r.details["repeat_passed"]), "nominal"
