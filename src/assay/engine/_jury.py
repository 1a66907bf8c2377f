"""Juries: several judges score the same judge metrics; their results are combined per metric.

Each juror is a composed judge of its own (its calls cached and accounted separately). Per trace
and metric every juror scores the metric; a juror whose verdict failed (judge error, or a backend
that refused) is dropped for that item and the weights of the others are renormalised. A label
metric (one with ``weights``: failure_rate, goal_achievement_rate, a ``[[criteria]]`` label set) is
decided by the weighted majority label, a tie going to the tied label of lowest weight; its score is
that label's weight (goal_achievement_rate: the mean score of the jurors who chose it, penalties
included) and ``details['verdict']`` the label. Scores are combined by the weighted mean or the
weighted median. ``details['jury']`` keeps each juror's score and label,
the jurors dropped and why; ``details['jury_disagree']`` is set when the jurors' pass/fail
verdicts (or labels) differ. The run's ``statistics['jury']`` holds per metric Krippendorff's
alpha across jurors (nominal on labels and pass/fail, interval on scores) and the counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError, ProviderError
from ..model import MetricResult, TraceResult, Warning
from ..model._options import JudgeOptions

AGGREGATES = ("mean", "median")


class Jury:
    """Judges that score together; pass one as ``judge=`` wherever a judge goes.

    ``weights``: one per juror (default equal), finite and >= 0 with a positive sum; ``scores``:
    ``"mean"`` or ``"median"`` for score metrics. A metric that calls ``jury.judge`` itself
    (outside the engine) is answered by the first juror.
    """

    def __init__(self, jurors: Sequence[Any], weights: Sequence[float] | None = None, *, scores: str = "mean") -> None:
        self.jurors = list(jurors)
        if len(self.jurors) < 2:
            raise ConfigError(f"a jury needs at least two judges, got {len(self.jurors)}")
        if weights is None:
            weights = [1.0] * len(self.jurors)
        weights = [float(w) for w in weights]
        if len(weights) != len(self.jurors):
            raise ConfigError(f"{len(weights)} judge weights for {len(self.jurors)} judges")
        if any(not (w >= 0 and w < float("inf")) for w in weights) or sum(weights) <= 0:
            raise ConfigError(f"judge weights must be finite, >= 0 and not all 0, got {weights!r}")
        if scores not in AGGREGATES:
            raise ConfigError.unknown("jury score aggregate", scores, AGGREGATES)
        self.weights, self.scores = weights, scores
        self.model = "jury(" + ", ".join(str(getattr(j, "model", type(j).__name__)) for j in self.jurors) + ")"

    @property
    def stats(self) -> "JuryStats":
        """The jurors' counters summed, read live (each juror keeps its own in ``juror.stats``)."""
        return JuryStats(self.jurors)

    async def judge(self, request: Any) -> Any:
        return await self.jurors[0].judge(request)

    def info(self) -> list[dict[str, Any]]:
        """Per juror: model, weight and its own accounting (run information)."""
        out = []
        for j, w in zip(self.jurors, self.weights):
            s = getattr(j, "stats", None)
            out.append({"model": getattr(j, "model", type(j).__name__), "weight": w,
                        **(s.as_dict() if s is not None and hasattr(s, "as_dict") else {})})
        return out

    async def score(self, run_one: Any, labels: Mapping[str, float] | None = None) -> MetricResult:
        """Every juror's result from ``await run_one(juror)``, combined (``combine``). A refusing backend
        drops its juror."""
        import asyncio

        async def guarded(j: Any) -> MetricResult:
            try:
                return await run_one(j)
            except ProviderError as exc:
                return MetricResult(score=None, warning=Warning.JUDGE_ERROR, reason=f"judge refused: {exc}")

        parts = list(await asyncio.gather(*(guarded(j) for j in self.jurors)))
        if all(p.score is None and p.reason.startswith("judge refused: ") for p in parts):
            raise ProviderError(f"every juror refused: {parts[0].reason}")
        return self.combine(parts, labels)

    def combine(self, parts: Sequence[MetricResult], labels: Mapping[str, float] | None = None) -> MetricResult:
        """The jurors' results as one. ``labels``: a label metric's label -> weight (its ``weights``):
        the verdict is then the weighted majority label (``majority_label``), jurors' labels kept."""
        models = [str(getattr(j, "model", type(j).__name__)) for j in self.jurors]
        ok = [(p, w, m) for p, w, m in zip(parts, self.weights, models) if p.score is not None]
        failed = {m: p.reason for p, m in zip(parts, models) if p.score is None and p.errored}
        verdicts = [p.details.get("verdict") if p.score is not None else None for p in parts]
        jury: dict[str, Any] = {"jurors": models, "scores": [p.score for p in parts], "verdicts": verdicts}
        if failed:
            jury["failed"] = failed
        calls = sum(p.judge_calls for p in parts)
        tokens = sum(p.tokens for p in parts)
        made = [p.cost_usd for p in parts if p.judge_calls]
        cost = None if not made or any(c is None for c in made) else sum(made)  # type: ignore[arg-type]
        if not ok:
            first = next((p for p in parts if p.errored), parts[0])
            return first.replace(details={**first.details, "jury": jury}, judge_calls=calls, tokens=tokens,
                                 cost_usd=cost, reason=f"no juror scored: {first.reason}")
        total = sum(w for _, w, _ in ok)
        weights = [w / total if total > 0 else 1 / len(ok) for _, w, _ in ok]
        jury["weights"] = dict(zip([m for _, _, m in ok], weights))
        if labels is None and all("label_weights" in p.details for p, _, _ in ok):
            labels = ok[0][0].details["label_weights"]
        labelled = bool(labels) and all(p.details.get("verdict") in labels for p, _, _ in ok)  # type: ignore[operator]
        extra: dict[str, Any] = {}
        if labelled:
            votes: dict[str, float] = {}
            for (p, _, _), w in zip(ok, weights):
                votes[p.details["verdict"]] = votes.get(p.details["verdict"], 0.0) + w
            label = majority_label(votes, labels)  # type: ignore[arg-type]
            chosen = [(p.score, w) for (p, _, _), w in zip(ok, weights) if p.details["verdict"] == label]
            mass = sum(w for _, w in chosen)
            # the label's weight (a metric that lowers it, as goal_achievement_rate's penalty does: the
            # mean score of the jurors who chose the label), never a mean across labels
            score = sum(sc * w for sc, w in chosen) / mass if mass > 0 else float(labels[label])  # type: ignore[index,operator]
            jury["aggregate"] = "majority"
            jury["verdict"] = label
            jury["votes"] = votes
            if sum(1 for v in votes.values() if abs(v - votes[label]) < 1e-12) > 1:
                jury["tie"] = "broken toward the lowest-weight label"
            extra = {"verdict": label, "label_weights": dict(labels)}  # type: ignore[arg-type]
            disagree = len(votes) > 1
        else:
            scored = [(p.score, w) for (p, _, _), w in zip(ok, weights)]
            if self.scores == "median":
                score = _weighted_median(scored)  # type: ignore[arg-type]
            else:
                score = sum(s * w for s, w in scored)  # type: ignore[operator]
            jury["aggregate"] = self.scores
            threshold = ok[0][0].threshold
            disagree = threshold is not None and len({s >= threshold for s, _ in scored}) > 1  # type: ignore[operator]
        reason = " | ".join(f"{m}: {p.reason}" for p, _, m in ok if p.reason)
        evidence = [e for p, _, _ in ok for e in p.evidence]
        details = {**extra, "jury": jury, "jury_disagree": disagree}
        return MetricResult(score=min(1.0, max(0.0, score)), reason=reason, evidence=evidence, details=details,
                            judge_calls=calls, tokens=tokens, cost_usd=cost)


class JuryStats:
    """A live sum of the jurors' JudgeStats: every attribute read adds up their current values."""

    def __init__(self, jurors: Sequence[Any]) -> None:
        self._jurors = jurors

    def as_dict(self) -> dict[str, Any]:
        from ..judge._stats import JudgeStats  # here: a run without a jury does not load the judge package

        total = None
        for j in self._jurors:
            s = getattr(j, "stats", None)
            if s is None or not hasattr(s, "as_dict"):
                continue
            s = s if isinstance(s, JudgeStats) else JudgeStats.from_dict(s.as_dict())
            total = s.copy() if total is None else total.merge(s)
        return {} if total is None else total.as_dict()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.as_dict()[name]
        except KeyError:
            raise AttributeError(name) from None


def make_jury(specs: Sequence[Any], weights: Sequence[float] | None = None, *, scores: str = "mean",
              **options: Any) -> Any:
    """A Jury of ``make_judge(spec, **options)`` for each spec (one spec: that judge alone)."""
    return jury_of(specs, weights, scores, JudgeOptions.of(options))


def jury_of(specs: Sequence[Any], weights: Sequence[float] | None, scores: str, options: JudgeOptions) -> Any:
    """``make_jury`` with its options already typed (``JudgeSpec.build``)."""
    from ..judge import build_judge  # here: a run without a judge does not load the judge package
    specs = list(specs)
    if len(specs) == 1 and not weights:
        return build_judge(specs[0], options)
    return Jury([build_judge(s, options) for s in specs], weights, scores=scores)


def majority_label(votes: Mapping[str, float], labels: Mapping[str, float]) -> str:
    """The label with the most (weighted) votes; a tie goes to the tied label of lowest weight (the
    more conservative verdict: ``stall`` over ``honest_fallback``), then to the one listed first."""
    best = max(votes.values())
    tied = [v for v in votes if abs(votes[v] - best) < 1e-12]
    order = {label: i for i, label in enumerate(labels)}
    return min(tied, key=lambda v: (labels[v], order.get(v, len(order))))


def _weighted_median(scored: list[tuple[float, float]]) -> float:
    """The smallest score whose cumulative weight reaches half (the lower median for even splits)."""
    half = sum(w for _, w in scored) / 2
    acc = 0.0
    for s, w in sorted(scored):
        acc += w
        if acc >= half - 1e-12:
            return s
    return sorted(scored)[-1][0]


class JuryTotals:
    """Run-level jury figures, fed one TraceResult at a time."""

    def __init__(self, judged: Sequence[str], jurors: Sequence[str]) -> None:
        self.names, self.jurors = list(judged), list(jurors)
        self.units: dict[str, list[list[Any]]] = {n: [] for n in self.names}
        self.label_units: dict[str, list[list[Any]]] = {n: [] for n in self.names}
        self.counts = {n: {"n": 0, "disagree": 0, "failed": {}} for n in self.names}

    def add(self, t: TraceResult) -> None:
        for name in self.names:
            r = t.metrics.get(name)
            jury = r.details.get("jury") if r is not None else None
            if not jury:
                continue
            c = self.counts[name]
            c["n"] += 1
            c["disagree"] += bool(r.details.get("jury_disagree"))  # type: ignore[union-attr]
            for model in jury.get("failed", {}):
                failed: dict[str, int] = c["failed"]  # type: ignore[assignment]
                failed[model] = failed.get(model, 0) + 1
            if len(self.units[name]) < 200_000:
                self.units[name].append(list(jury["scores"]))
                self.label_units[name].append(list(jury["verdicts"]))

    def finish(self) -> dict[str, dict[str, Any]]:
        from ..stats import krippendorff_alpha  # at a run's end: `assay.stats` is not on the way to its first call

        out = {}
        for name in self.names:
            c = self.counts[name]
            if not c["n"]:
                continue
            labelled = any(v is not None for u in self.label_units[name] for v in u)
            alpha = krippendorff_alpha(self.label_units[name] if labelled else self.units[name],
                                       "nominal" if labelled else "interval")
            out[name] = {"n": c["n"], "jurors": self.jurors, "alpha": alpha,
                         "alpha_level": "nominal" if labelled else "interval", "disagreements": c["disagree"],
                         "juror_failures": dict(c["failed"])}
        return out
