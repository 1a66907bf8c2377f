"""The judge card: how far one judge agrees with human labels, per metric and rubric version.

Made by ``assay calibrate`` / ``assay.calibrate``; kept in the run store and as a JSON file; read
by ``assay run --judge-card`` to correct pass rates for the judge's measured error rates. "pass"
is the positive class: TPR is the share of human-passed items the judge passed, TNR the share of
human-failed items it failed.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import DataError

CARD_FORMAT = 1


class Disagreement(msgspec.Struct, kw_only=True):
    """One labelled item where the judge and the human differ, with what the judge said."""

    trace_id: str
    human: Any
    judge: Any
    reason: str = ""
    evidence: list[str] = []


class PassFail(msgspec.Struct, kw_only=True):
    """The 2x2 table of human vs judge pass/fail, with rates and their Wilson intervals."""

    tp: int
    """Human pass, judge pass."""
    fn: int
    """Human pass, judge fail."""
    tn: int
    """Human fail, judge fail."""
    fp: int
    """Human fail, judge pass."""
    tpr: float | None = None
    tpr_ci: tuple[float, float] | None = None
    """95% plain Wilson score interval (no continuity correction) of TPR; ``tnr_ci`` likewise."""
    tnr: float | None = None
    tnr_ci: tuple[float, float] | None = None
    agreement: float | None = None
    kappa: float | None = None

    @property
    def youden(self) -> float | None:
        """TPR + TNR - 1: above 0 the judge beats chance; a correction needs it."""
        return None if self.tpr is None or self.tnr is None else self.tpr + self.tnr - 1.0


class LabelAgreement(msgspec.Struct, kw_only=True):
    """One category of a card compared on categories: how often each side chose it, and recall/precision."""

    human: int
    """Items the human gave this category."""
    judge: int
    """Items the judge gave it."""
    agreed: int
    """Items both gave it."""
    recall: float | None = None
    """agreed / human: of the human's items in this category, the share the judge found."""
    precision: float | None = None
    """agreed / judge: of the judge's items in this category, the share the human agrees with."""


class MetricCard(msgspec.Struct, kw_only=True):
    """The calibration figures of one metric."""

    metric: str
    """The metric's registered name (the instance may be named apart)."""
    rubric: str | None
    """``name@version`` of the rubric the judge was given: a card applies only to that version."""
    metric_version: str | None = None
    threshold: float | None = None
    kind: str
    """``label`` (categories), ``scale`` (integers low..high) or ``score`` (a number in [0, 1])."""
    compared_on: str
    """What the agreement and kappa compare: ``categories`` (the human gave labels or scale values) or ``pass_fail``."""
    n_labelled: int
    """Traces with a human label for this metric."""
    n_compared: int
    """Of those, traces the judge scored (errors and not-applicable excluded)."""
    n_errored: int = 0
    n_not_scored: int = 0
    """Labelled traces with no judge score for another reason (not applicable, missing data)."""
    error_rate: float | None = None
    """n_errored / n_labelled: judge errors and parse failures."""
    categories: list[Any] = []
    confusion: list[list[int]] = []
    """Rows: the human's category, columns: the judge's (``categories`` order); pass/fail when compared_on says so."""
    per_label: dict[str, LabelAgreement] = {}
    """Per category (compared on categories): counts, recall and precision."""
    agreement: float | None = None
    """Exact agreement: the share of compared items where judge and human chose the same category."""
    within_one: float | None = None
    """For ordered categories (scales, level labels): the share where the judge is at most one level off."""
    kappa: float | None = None
    weighted_kappa: float | None = None
    """Quadratic-weighted kappa, for ordered categories (scales, labels with ordered scores)."""
    mae: float | None = None
    """Mean absolute difference between the human's score (a score, or the weight of the label given)
    and the judge's score, both on [0, 1]; None for pass/fail labels."""
    pass_fail: PassFail | None = None
    disagreements: list[Disagreement] = []


class JudgeCard(msgspec.Struct, kw_only=True):
    """One judge measured against one label set. ``card.metrics[name]`` per metric instance."""

    id: str
    created_at: str
    judge: dict[str, Any]
    """``model`` (as verdicts report it), ``backend`` (endpoint kind), ``base_url`` when known."""
    labels: dict[str, Any]
    """``sha256`` of the label set, ``n`` labels, ``source`` (file or ``metadata.labels``)."""
    metrics: dict[str, MetricCard]
    inputs: list[str] = []
    assay_version: str = ""
    format: int = CARD_FORMAT

    def to_dict(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)

    def to_json(self, indent: int = 2) -> bytes:
        return msgspec.json.format(msgspec.json.encode(self), indent=indent)

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "<card>") -> "JudgeCard":
        try:
            return msgspec.convert(d, cls)
        except msgspec.ValidationError as exc:
            raise DataError(f"not an assay judge card: {exc}", source=source) from None

    @classmethod
    def from_json(cls, data: bytes | str, source: str = "<card>") -> "JudgeCard":
        try:
            return msgspec.json.decode(data, type=cls)
        except msgspec.ValidationError as exc:
            raise DataError(f"not an assay judge card: {exc}", source=source) from None
        except msgspec.DecodeError as exc:
            raise DataError(f"not JSON: {exc}", source=source) from None

    def summary(self) -> str:
        """A few lines for the terminal: per metric agreement, kappa, TPR/TNR."""
        lines = [f"judge card {self.id}: {self.judge.get('model')} on {self.labels.get('n', 0)} labels"]
        for name, m in self.metrics.items():
            pf = m.pass_fail
            parts = [f"{m.n_compared}/{m.n_labelled} compared"]
            if m.agreement is not None:
                parts.append(f"agreement {m.agreement:.1%}")
            if m.kappa is not None:
                parts.append(f"kappa {m.kappa:.3f}")
            if m.weighted_kappa is not None:
                parts.append(f"weighted kappa {m.weighted_kappa:.3f}")
            if m.within_one is not None:
                parts.append(f"within one {m.within_one:.1%}")
            if pf is not None and pf.tpr is not None:
                parts.append(f"TPR {pf.tpr:.3f} {_ci(pf.tpr_ci)}")
            if pf is not None and pf.tnr is not None:
                parts.append(f"TNR {pf.tnr:.3f} {_ci(pf.tnr_ci)}")
            if m.mae is not None:
                parts.append(f"MAE {m.mae:.3f}")
            if m.n_errored:
                parts.append(f"{m.n_errored} errored")
            parts.append(f"{len(m.disagreements)} disagreements")
            lines.append(f"  {name} ({m.rubric}): " + ", ".join(parts))
        return "\n".join(lines)


def _ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
