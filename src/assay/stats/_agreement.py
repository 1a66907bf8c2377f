"""Agreement between raters, and pass rates corrected for a judge's measured error rates.

A judge checked against human labels has a confusion matrix; from it come Cohen's kappa (chance-
corrected agreement; weighted for ordered categories), the judge's true positive and true
negative rates (TPR, TNR: "pass" is the positive class) and, for several raters of the same items
(jury members, repeats of one judge), Krippendorff's alpha.

The Rogan-Gladen estimator turns an observed pass rate p into the true one:
``(p + TNR - 1) / (TPR + TNR - 1)``. Its interval must carry two uncertainties, the run's sampling
of p and the calibration sample's of TPR and TNR; :func:`corrected_pass_rate` draws all three from
their Jeffreys posteriors (Beta(k + 1/2, n - k + 1/2)) and takes percentiles of the corrected
value. ``benchmarks/judge_correction.py`` checks its coverage against known truth.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from assay.stats._bounded import cluster_mean_var, effective_n
from assay.stats._intervals import check_level, cluster_totals
from assay.stats._np import require_numpy


def confusion_matrix(rows: Sequence[Hashable], cols: Sequence[Hashable],
                     categories: Sequence[Hashable]) -> list[list[int]]:
    """Counts ``m[i][j]`` of items rated ``categories[i]`` by the first rater and ``categories[j]`` by the second."""
    if len(rows) != len(cols):
        raise ValueError(f"confusion_matrix: {len(rows)} ratings against {len(cols)}")
    index = {c: i for i, c in enumerate(categories)}
    m = [[0] * len(categories) for _ in categories]
    for a, b in zip(rows, cols):
        try:
            m[index[a]][index[b]] += 1
        except KeyError:
            bad = a if a not in index else b
            raise ValueError(f"confusion_matrix: rating {bad!r} is not one of {list(categories)!r}") from None
    return m


def cohen_kappa(matrix: Sequence[Sequence[int]], *, weights: str | None = None,
                positions: Sequence[float] | None = None) -> float | None:
    """Cohen's kappa of a square confusion matrix; None when chance agreement is total (undefined).

    ``weights``: None (unweighted: any disagreement counts fully), ``"linear"`` or ``"quadratic"``
    (a disagreement counts by its distance, for ordered categories). ``positions`` place the
    categories on a line (a 1-5 scale's values, a label's score); default 0, 1, 2, ...
    """
    k = len(matrix)
    if any(len(r) != k for r in matrix):
        raise ValueError("cohen_kappa: the confusion matrix must be square")
    n = sum(sum(r) for r in matrix)
    if n == 0:
        return None
    pos = list(positions) if positions is not None else list(range(k))
    if len(pos) != k:
        raise ValueError(f"cohen_kappa: {len(pos)} positions for {k} categories")
    span = (max(pos) - min(pos)) if k > 1 else 1.0
    span = span or 1.0

    def w(i: int, j: int) -> float:
        if weights is None:
            return 0.0 if i == j else 1.0
        d = abs(pos[i] - pos[j]) / span
        if weights == "linear":
            return d
        if weights == "quadratic":
            return d * d
        raise ValueError(f"cohen_kappa: weights must be None, 'linear' or 'quadratic', got {weights!r}")

    row = [sum(r) / n for r in matrix]
    col = [sum(matrix[i][j] for i in range(k)) / n for j in range(k)]
    observed = math.fsum(w(i, j) * matrix[i][j] / n for i in range(k) for j in range(k))
    expected = math.fsum(w(i, j) * row[i] * col[j] for i in range(k) for j in range(k))
    if expected <= 1e-15:
        return None
    return 1.0 - observed / expected


def krippendorff_alpha(units: Sequence[Sequence[Any]], level: str = "nominal") -> float | None:
    """Krippendorff's alpha over ``units`` (each the values raters gave one item; None = no rating).

    ``level``: ``"nominal"`` (labels: equal or not), ``"ordinal"`` (ranks: a 1-5 scale, where 2 vs
    4 is a larger disagreement than 4 vs 5 when few ratings lie between them; the distance is the
    number of pairable ratings from one value to the other, less half of each end's) or
    ``"interval"`` (numbers: squared difference). Items with fewer than two ratings do not count.
    None when there is no pairable rating or no variation at all (alpha is undefined).
    """
    if level not in _LEVELS:
        raise ValueError(f"krippendorff_alpha: level must be one of {', '.join(map(repr, _LEVELS))}, got {level!r}")
    pairable = [vs for vs in ([v for v in unit if v is not None] for unit in units) if len(vs) >= 2]
    counts: dict[Any, int] = {}
    for values in pairable:
        for v in values:
            counts[v] = counts.get(v, 0) + 1
    n = sum(counts.values())
    if n < 2:
        return None
    if level == "ordinal":
        try:
            ranked = sorted(counts)
        except TypeError:
            raise ValueError("krippendorff_alpha: ordinal values must be comparable (ranks in sorted order, "
                             "e.g. all numbers)") from None
        below, running = {}, 0.0  # cumulative counts: the rank-based position of each value
        for v in ranked:
            below[v] = running + counts[v] / 2.0
            running += counts[v]

    def delta(a: Any, b: Any) -> float:
        if level == "nominal":
            return 0.0 if a == b else 1.0
        if level == "ordinal":
            return (below[a] - below[b]) ** 2
        return (float(a) - float(b)) ** 2

    observed = 0.0
    for values in pairable:
        m = len(values)
        pairs = math.fsum(delta(a, b) for i, a in enumerate(values) for j, b in enumerate(values) if i != j)
        observed += pairs / (m - 1)
    observed /= n
    distinct = list(counts)
    expected = math.fsum(counts[a] * counts[b] * delta(a, b) for a in distinct for b in distinct if a != b)
    expected /= n * (n - 1)
    if expected <= 1e-15:
        return None
    return 1.0 - observed / expected


_LEVELS = ("nominal", "ordinal", "interval")


def rogan_gladen(p: float, tpr: float, tnr: float) -> float | None:
    """The true pass rate behind an observed one, clipped to [0, 1]; None when TPR + TNR <= 1."""
    youden = tpr + tnr - 1.0
    if youden <= 0:
        return None
    return min(1.0, max(0.0, (p + tnr - 1.0) / youden))


@dataclass(frozen=True, slots=True)
class Correction:
    """A pass rate corrected for a judge's error rates (``corrected_pass_rate``)."""

    raw: float
    """The observed pass rate (the judge's verdicts)."""
    estimate: float
    """Rogan-Gladen: (raw + TNR - 1) / (TPR + TNR - 1), clipped to [0, 1]."""
    low: float
    high: float
    level: float
    n: int
    """Verdicts behind the raw pass rate."""
    tpr: float
    tnr: float
    method: str = "jeffreys_simulation"


def corrected_pass_rate(passed: int | Sequence[bool | int], n: int, *, tp: int, fn: int, tn: int, fp: int,
                        level: float = 0.95, draws: int = 20000, seed: int = 0,
                        clusters: Sequence[Hashable] | None = None) -> Correction | None:
    """The pass rate of ``passed`` of ``n`` verdicts corrected for a judge's calibration counts.

    ``tp``/``fn``: human-passed items the judge passed / failed; ``tn``/``fp``: human-failed items
    the judge failed / passed. None when the point estimates give TPR + TNR <= 1 (the judge is no
    better than chance: nothing to correct with). The interval: percentiles of the corrected value
    over ``draws`` joint draws of the observed rate, TPR and TNR from their Jeffreys posteriors;
    draws where TPR + TNR <= 1 count as the widest answer (0 or 1) on the side they fall, so a
    weakly calibrated judge gets a wide interval, never a falsely narrow one.

    ``clusters``: the task id of each verdict (trials of one task share its difficulty); then
    ``passed`` is the sequence of the n verdicts (True/False or 1/0) rather than their count. The
    observed rate is drawn from a Beta on the effective sample size n_eff = p (1 - p) / v, with v
    the cluster-robust (CR1) variance of the pass rate, t-corrected for the number of tasks and
    capped at n (the ``cluster_wilson`` rule of ``bounded_mean_interval``; the number of tasks when
    every verdict agrees), so the task-level variance carries into the interval: method
    "cluster_jeffreys_simulation". Without it the verdicts count as independent.
    """
    level = check_level(level, "corrected_pass_rate")
    verdicts = None
    if clusters is not None:
        if isinstance(passed, int) or isinstance(passed, bool):
            raise ValueError("corrected_pass_rate: with clusters=, passed must be the sequence of the n verdicts "
                             f"(one per trial), got the count {passed!r}")
        verdicts = list(passed)
        if len(verdicts) != n or len(clusters) != n:
            raise ValueError(f"corrected_pass_rate: n={n} verdicts expected, got {len(verdicts)} verdicts and "
                             f"{len(clusters)} cluster ids")
        for i, verdict in enumerate(verdicts):
            if verdict not in (0, 1):  # True and False compare equal to 1 and 0
                raise ValueError(f"corrected_pass_rate: verdicts[{i}] must be True/False or 1/0, got {verdict!r}")
        passed = int(sum(bool(v) for v in verdicts))
    for name, v in (("passed", passed), ("n", n), ("tp", tp), ("fn", fn), ("tn", tn), ("fp", fp)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"corrected_pass_rate: {name} must be an integer >= 0, got {v!r}")
    if passed > n or n == 0:
        raise ValueError(f"corrected_pass_rate: need 0 <= passed <= n and n >= 1, got passed={passed}, n={n}")
    if tp + fn == 0 or tn + fp == 0:
        return None
    tpr, tnr = tp / (tp + fn), tn / (tn + fp)
    raw = passed / n
    estimate = rogan_gladen(raw, tpr, tnr)
    if estimate is None:
        return None
    np = require_numpy("corrected_pass_rate")
    rng = np.random.default_rng(seed)
    method = "jeffreys_simulation"
    if verdicts is not None and clusters is not None:
        sums, counts = cluster_totals(np, np.asarray(verdicts, dtype=float), list(clusters))
        g = len(counts)
        _, var = cluster_mean_var(np, sums, counts)
        n_eff = float(effective_n(np, raw, var, g, n, level, df=max(g - 1, 1)))
        p = rng.beta(raw * n_eff + 0.5, (1.0 - raw) * n_eff + 0.5, draws)
        method = "cluster_jeffreys_simulation"
    else:
        p = rng.beta(passed + 0.5, n - passed + 0.5, draws)
    se = rng.beta(tp + 0.5, fn + 0.5, draws)
    sp = rng.beta(tn + 0.5, fp + 0.5, draws)
    youden = se + sp - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = (p + sp - 1.0) / youden
    pi = np.where(youden > 0, pi, np.where(p + sp - 1.0 >= 0, 1.0, 0.0))
    pi = np.clip(pi, 0.0, 1.0)
    tail = (1.0 - level) / 2.0
    low, high = (float(x) for x in np.quantile(pi, [tail, 1.0 - tail]))
    return Correction(raw, estimate, min(low, estimate), max(high, estimate), level, n, tpr, tnr, method)
