"""Calibrating a judge against human labels (the judge card), and correcting run pass rates with one.

Labels come from a CSV or JSON Lines file (``trace_id, metric, label|score``; ``metric`` may be
left out when one metric is calibrated) or from each trace's ``metadata.labels`` (``{"metric":
"pass" | "<label>" | <score> | {"label": ..., "score": ...}}``). A label is ``pass`` / ``fail``,
one of a label metric's verdict labels, or a score: on the metric's scale (1-5) for scale metrics,
in [0, 1] otherwise. The judge scores the labelled traces through the ordinary engine (its cache
included); the card holds per metric the agreement figures of ``assay.stats`` and the items where
judge and human differ.
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import io
import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import ConfigError, DataError, InputWarning
from ..model import Disagreement, JudgeCard, LabelAgreement, MetricCard, MetricResult, PassFail, RunResult, TraceResult
from ..stats import cohen_kappa, confusion_matrix, corrected_pass_rate, wilson_interval

PASS_WORDS = {"pass": True, "passed": True, "true": True, "yes": True, "fail": False, "failed": False,
              "false": False, "no": False}
MAX_DISAGREEMENTS = 500
"""Disagreements kept per metric on a card (the counts are always complete)."""


@dataclass(frozen=True, slots=True)
class Label:
    """One human label: a trace, a metric instance, and a label or a score."""

    trace_id: str
    metric: str | None
    label: str | None
    score: float | None
    source: str
    """``file:line`` (or ``trace <id> metadata.labels``), for error messages."""


# -- reading labels -------------------------------------------------------------------------------

def read_labels(path: str | Path) -> list[Label]:
    """Labels from a CSV (header ``trace_id,metric,label,score``; ``;`` or tab separated too) or JSON Lines file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DataError(f"cannot read the labels file: {exc.strerror or exc}", source=str(path)) from None
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if p.suffix.lower() in (".jsonl", ".ndjson", ".json") or first.lstrip().startswith("{"):
        return _jsonl_labels(text, str(path))
    return _csv_labels(text, str(path))


def _jsonl_labels(text: str, source: str) -> list[Label]:
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise DataError(f"not a JSON object: {exc}", source=source, line=lineno) from None
        if not isinstance(rec, dict):
            raise DataError(f"expected an object with trace_id and label or score, got {type(rec).__name__}",
                            source=source, line=lineno)
        out.append(_label(rec, f"{source}:{lineno}", source, lineno))
    return out


def _csv_labels(text: str, source: str) -> list[Label]:
    header = next((ln for ln in text.splitlines() if ln.strip()), "")
    # The separator the header is written with: a spreadsheet saves ';' where ',' is the decimal mark, or tabs.
    delimiter = next((d for d in (",", ";", "\t") if {"trace_id", "id"} & {f.strip().strip('"').lower()
                                                                        for f in header.split(d)}), ",")
    reader = csv.DictReader(io.StringIO(text), delimiter=delimiter)
    fields = {(f or "").strip().lower() for f in reader.fieldnames or ()}
    if not fields & {"trace_id", "id"} or not fields & {"label", "score"}:
        raise DataError(f"a labels CSV needs a header with trace_id (or id) and label or score, got "
                        f"{sorted(f for f in fields if f)}", source=source, line=1)
    out = []
    for row in reader:
        rec = {(k or "").strip().lower(): (v.strip() if isinstance(v, str) else v) for k, v in row.items()}
        rec = {k: v for k, v in rec.items() if v not in ("", None)}
        if "score" in rec:
            try:
                rec["score"] = float(rec["score"])
            except ValueError:
                raise DataError(f"score {rec['score']!r} is not a number", source=source,
                                line=reader.line_num, field="score") from None
        out.append(_label(rec, f"{source}:{reader.line_num}", source, reader.line_num))
    return out


def _label(rec: Mapping[str, Any], where: str, source: str, line: int | None) -> Label:
    trace_id = rec.get("trace_id", rec.get("id"))
    if trace_id is None or isinstance(trace_id, (dict, list, bool)):
        raise DataError("no trace_id", source=source, line=line, field="trace_id")
    metric = rec.get("metric")
    if metric is not None and not isinstance(metric, str):
        raise DataError(f"metric must be a name, got {metric!r}", source=source, line=line, field="metric")
    label, score = rec.get("label"), rec.get("score")
    if isinstance(label, bool):
        label = "pass" if label else "fail"
    if label is not None and not isinstance(label, str):
        if isinstance(label, (int, float)) and score is None:
            label, score = None, label
        else:
            raise DataError(f"label must be a string, got {label!r}", source=source, line=line, field="label")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float)) or score != score):
        raise DataError(f"score must be a number, got {score!r}", source=source, line=line, field="score")
    if label is None and score is None:
        raise DataError("give a label or a score", source=source, line=line)
    return Label(str(trace_id), metric, label, None if score is None else float(score), where)


def labels_in(trace: Any) -> list[Label]:
    """The labels a trace carries in ``metadata.labels``."""
    raw = (getattr(trace, "metadata", None) or {}).get("labels")
    if raw is None:
        return []
    where = f"trace {trace.id!r} metadata.labels"
    if not isinstance(raw, Mapping):
        raise DataError(f"{where}: expected an object metric -> label, got {type(raw).__name__}")
    out = []
    for metric, value in raw.items():
        rec = dict(value) if isinstance(value, Mapping) else (
            {"score": value} if isinstance(value, (int, float)) and not isinstance(value, bool) else {"label": value})
        out.append(_label({**rec, "trace_id": trace.id, "metric": metric}, f"{where}.{metric}", where, None))
    return out


# -- what a metric's human and judge values mean ---------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Kind:
    kind: str                   # label | scale | score
    categories: tuple[Any, ...]  # label: labels by descending weight; scale: low..high
    positions: tuple[float, ...]  # where each category sits on [0, 1] (for weighted kappa)
    threshold: float
    ordinal: bool = False       # the categories are levels of one scale (within-one agreement means something)


def _kind(m: Any) -> _Kind:
    from ..metrics._judged import ScaleJudged  # here: a deterministic run never loads the judge machinery

    threshold = float(m.threshold)
    # A label metric says so with ``weights`` (label -> score) on its class: the LabelJudged
    # family, [[criteria]] label sets, and hand-written ones such as failure_rate.
    weights = getattr(type(m), "weights", None)
    if m.spec.level != "turn" and isinstance(weights, dict) and len(weights) >= 2:
        labels = sorted(weights, key=lambda k: -weights[k])
        return _Kind("label", tuple(labels), tuple(float(weights[k]) for k in labels), threshold,
                     bool(getattr(type(m), "ordinal", False)))
    if m.spec.level != "turn" and isinstance(m, ScaleJudged):
        low, high = m.scale
        values = tuple(range(low, high + 1))
        return _Kind("scale", values, tuple((v - low) / (high - low) for v in values), threshold, True)
    return _Kind("score", (), (), threshold)


def _human(label: Label, k: _Kind) -> tuple[Any, bool, float | None]:
    """(category or None, passed, normalised score or None) of one human label; DataError when it cannot mean anything."""
    if label.label is not None:
        word = label.label.strip()
        if word.lower() in PASS_WORDS:
            return None, PASS_WORDS[word.lower()], None
        if k.kind == "label" and word in k.categories:
            pos = k.positions[k.categories.index(word)]
            return word, pos >= k.threshold, pos
        if k.kind == "scale" and word.lstrip("-").isdigit():
            return _human(Label(label.trace_id, label.metric, None, float(word), label.source), k)
        choices = ["pass", "fail", *k.categories] if k.kind == "label" else ["pass", "fail"]
        raise DataError(f"label {word!r} means nothing for metric {label.metric!r}; expected one of "
                        f"{', '.join(map(str, choices))}" + (" or a score" if k.kind != "label" else ""),
                        source=label.source)
    score = float(label.score)  # type: ignore[arg-type]
    if k.kind == "scale":
        low, high = k.categories[0], k.categories[-1]
        if score != int(score) or not low <= score <= high:
            raise DataError(f"score {label.score!r} for metric {label.metric!r}: expected an integer "
                            f"{low}..{high} (the judge's scale)", source=label.source)
        norm = (score - low) / (high - low)
        return int(score), norm >= k.threshold, norm
    if k.kind == "label":
        hits = [c for c, p in zip(k.categories, k.positions) if p == score]
        if len(hits) == 1:
            return hits[0], score >= k.threshold, score
        if not hits:
            raise DataError(f"score {label.score!r} for label metric {label.metric!r}: give a label "
                            f"({', '.join(k.categories)}), pass/fail or one of the labels' scores "
                            f"({', '.join(sorted({f'{p:g}' for p in k.positions}))})", source=label.source)
        return None, score >= k.threshold, score  # several labels score this: pass/fail and MAE only
    if not 0.0 <= score <= 1.0:
        raise DataError(f"score {label.score!r} for metric {label.metric!r}: expected a number in [0, 1]",
                        source=label.source)
    return None, score >= k.threshold, score


def _judge_category(r: MetricResult, k: _Kind) -> Any:
    if k.kind == "label":
        return r.details.get("verdict")
    if k.kind == "scale":
        return r.details.get("raw_score")
    return None


def metric_rubric(m: Any) -> str | None:
    """``name@version`` of the rubric a judge metric sends (what a card is tied to); None for others.

    A metric defined with a rubric carries it on its class; assay's own multi-call metrics
    (failure_rate, goal_achievement_rate, ...) open ``rubrics/<name>.md`` per call, so that one.
    """
    from ..metrics._judged import load_rubric

    rubric = getattr(type(m), "_rubric", None)
    if rubric is None and m.spec.needs_judge and type(m).__module__.startswith("assay.metrics."):
        try:
            rubric = load_rubric(m.spec.name)
        except ConfigError:
            rubric = None  # a judge metric of assay's without a rubric file of its own (integrations)
    version = getattr(rubric, "version", None)
    return f"{m.spec.name}@{version}" if version is not None else None


def judge_identity(judge: Any) -> dict[str, Any]:
    """The judge as a card records it: model, endpoint kind (backend), base URL when known, and the
    prompt form it was asked in (a card measured on the compact form says nothing of the full one)."""
    from ..judge import answer_thresholds, prompt_style
    from ..judge._cache import endpoint_of  # the judge package loads only when a judge is in use

    info: dict[str, Any] = {"model": getattr(judge, "model", type(judge).__name__)}
    endpoint = endpoint_of(judge) or {}
    for key in ("backend", "base_url"):
        if endpoint.get(key) is not None:
            info[key] = endpoint[key]
    info["prompt_style"] = prompt_style(judge)
    thresholds = answer_thresholds(judge)
    if thresholds:  # only when set: answers decided by P(yes) are another judge's answers
        info["thresholds"] = dict(thresholds)
    return info


def _own(thresholds: Mapping[str, float] | None, metric: str) -> dict[str, float]:
    return {k: v for k, v in (thresholds or {}).items() if k.partition(".")[0] == metric}


# -- the card --------------------------------------------------------------------------------------

def metric_card(name: str, m: Any, labels: Sequence[Label], results: Mapping[str, TraceResult]) -> MetricCard:
    """The figures of one metric instance from its labels and the judge's results on those traces."""
    k = _kind(m)
    human, judged, errored, not_scored = [], [], 0, 0
    for label in labels:
        h = _human(label, k)
        r = results[label.trace_id].metrics.get(name)
        if r is None or r.score is None:
            if r is not None and r.errored:
                errored += 1
            else:
                not_scored += 1
            continue
        human.append((label, h))
        judged.append(r)
    by_category = bool(human) and k.kind != "score" and all(h[0] is not None for _, h in human) and \
        all(_judge_category(r, k) in k.categories for r in judged)
    tp = sum(h[1] and r.passed is True for (_, h), r in zip(human, judged))
    fn = sum(h[1] and r.passed is not True for (_, h), r in zip(human, judged))
    tn = sum((not h[1]) and r.passed is not True for (_, h), r in zip(human, judged))
    fp = sum((not h[1]) and r.passed is True for (_, h), r in zip(human, judged))
    pf_matrix = [[tp, fn], [fp, tn]]
    tpr_ci, tnr_ci = wilson_interval(tp, tp + fn), wilson_interval(tn, tn + fp)
    n = len(human)
    pass_fail = PassFail(tp=tp, fn=fn, tn=tn, fp=fp,
                         tpr=tpr_ci.estimate if tpr_ci else None, tnr=tnr_ci.estimate if tnr_ci else None,
                         tpr_ci=(tpr_ci.low, tpr_ci.high) if tpr_ci else None,  # type: ignore[arg-type]
                         tnr_ci=(tnr_ci.low, tnr_ci.high) if tnr_ci else None,  # type: ignore[arg-type]
                         agreement=(tp + tn) / n if n else None, kappa=cohen_kappa(pf_matrix) if n else None)
    card = MetricCard(metric=m.spec.name, rubric=metric_rubric(m), metric_version=m.spec.version,
                      threshold=k.threshold, kind=k.kind, compared_on="categories" if by_category else "pass_fail",
                      n_labelled=len(labels), n_compared=n, n_errored=errored, n_not_scored=not_scored,
                      error_rate=errored / len(labels) if labels else None, pass_fail=pass_fail)
    disagree: list[Disagreement] = []
    if by_category:
        cats = list(k.categories)
        matrix = confusion_matrix([h[0] for _, h in human], [_judge_category(r, k) for r in judged], cats)
        card.categories, card.confusion = cats, matrix
        card.agreement = sum(matrix[i][i] for i in range(len(cats))) / n
        card.per_label = _per_label(cats, matrix)
        if k.ordinal:
            card.within_one = sum(matrix[i][j] for i in range(len(cats)) for j in range(len(cats))
                                  if abs(i - j) <= 1) / n
        card.kappa = cohen_kappa(matrix)
        if len(cats) > 2 and len(set(k.positions)) > 2:
            card.weighted_kappa = cohen_kappa(matrix, weights="quadratic", positions=k.positions)
        pairs = [(label, h[0], _judge_category(r, k), r) for (label, h), r in zip(human, judged)]
    else:
        card.categories, card.confusion = ["pass", "fail"], pf_matrix
        card.agreement, card.kappa = pass_fail.agreement, pass_fail.kappa
        pairs = [(label, "pass" if h[1] else "fail", "pass" if r.passed else "fail", r)
                 for (label, h), r in zip(human, judged)]
    scored = [(h[2], r.score) for (_, h), r in zip(human, judged) if h[2] is not None]
    if scored:  # a score, or the weight of the label the human gave, against the judge's score
        card.mae = sum(abs(a - b) for a, b in scored) / len(scored)  # type: ignore[operator]
    for label, hv, jv, r in pairs:
        if hv != jv and len(disagree) < MAX_DISAGREEMENTS:
            disagree.append(Disagreement(trace_id=label.trace_id, human=hv, judge=jv, reason=r.reason,
                                         evidence=list(r.evidence)))
    card.disagreements = disagree
    return card


def _per_label(cats: Sequence[Any], matrix: Sequence[Sequence[int]]) -> dict[str, LabelAgreement]:
    """Per category: how often the human and the judge chose it, recall and precision."""
    out = {}
    for i, c in enumerate(cats):
        human, judge, agreed = sum(matrix[i]), sum(row[i] for row in matrix), matrix[i][i]
        out[str(c)] = LabelAgreement(human=human, judge=judge, agreed=agreed,
                                     recall=agreed / human if human else None,
                                     precision=agreed / judge if judge else None)
    return out


def label_hash(labels: Iterable[Label]) -> str:
    rows = sorted(f"{x.trace_id}\x1f{x.metric}\x1f{x.label}\x1f{x.score}" for x in labels)
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def calibrate(traces: Any, metrics: Iterable[Any] | Mapping[str, Any] | None = None, *, judge: Any,
              labels: str | Path | Iterable[Label] | None = None, input_format: str | None = None,
              strict: bool = False, on_result: Any = None, **judge_options: Any) -> JudgeCard:
    """Score the labelled traces with the judge and measure it against the labels: a JudgeCard.

    ``traces``: paths, Trace objects or dicts (as ``evaluate``). ``labels``: a CSV/JSONL file or
    ``Label`` objects; None reads each trace's ``metadata.labels``. ``metrics``: the judge metrics to
    calibrate (default: every metric the labels name). ``judge``: a model string, client or Judge
    (``judge_options`` go to ``make_judge``).
    """
    from ..engine._run import Evaluation

    if judge is None:
        raise ConfigError("calibrating needs a judge: pass judge='provider:model' (or --judge)")
    if not hasattr(judge, "judge") or judge_options:
        from ..judge import make_judge
        judge = make_judge(judge, **judge_options)
    given = list(labels) if labels is not None and not isinstance(labels, (str, Path)) else \
        (read_labels(labels) if labels is not None else None)
    source = str(labels) if isinstance(labels, (str, Path)) else ("labels" if labels is not None else "metadata.labels")
    if metrics is None:
        if given is None:
            raise ConfigError("name the metrics to calibrate (-m NAME) when the labels are in the traces")
        named = sorted({x.metric for x in given if x.metric})
        if not named:
            raise ConfigError("the labels name no metric: select one with -m NAME")
        metrics = named
    evaluation = Evaluation(metrics, judge=judge, attach_traces=given is None)
    instances = evaluation.instances
    for name, m in instances.items():
        if not m.spec.needs_judge:
            raise ConfigError(f"metric {name!r} needs no judge: there is nothing to calibrate")
    only = next(iter(instances)) if len(instances) == 1 else None
    kinds = {name: _kind(m) for name, m in instances.items()}
    for x in given or ():  # a label that means nothing is an error before the judge is paid
        if (x.metric or only) in kinds:
            _human(Label(x.trace_id, x.metric or only, x.label, x.score, x.source), kinds[x.metric or only])
    found: list[Label] = []

    def collect(item: Any) -> None:
        if isinstance(item, TraceResult) and given is None:
            found.extend(labels_in(item.trace))
        if on_result is not None:
            on_result(item)

    result = evaluation.run(traces, input_format=input_format, strict=strict, intervals=False, on_result=collect)
    all_labels = given if given is not None else found
    if not all_labels:
        raise DataError("no labels: give a labels file (--labels) or put them in each trace's metadata.labels",
                        source=source)
    per_metric: dict[str, list[Label]] = {n: [] for n in instances}
    ignored: set[str] = set()
    by_id = {t.id: t for t in result.traces}
    unmatched = 0
    for x in all_labels:
        metric = x.metric or only
        if metric is None:
            raise DataError(f"label without a metric while calibrating {sorted(instances)}: add a metric "
                            "column", source=x.source)
        if metric not in per_metric:
            ignored.add(metric)
            continue
        if x.trace_id not in by_id:
            unmatched += 1
            continue
        per_metric[metric].append(Label(x.trace_id, metric, x.label, x.score, x.source))
    if unmatched and any(per_metric.values()):
        missing = sorted({x.trace_id for x in all_labels if x.trace_id not in by_id})
        warnings.warn(InputWarning(f"{source}: {unmatched:,} of {len(all_labels):,} labels name no scored trace "
                                   f"(e.g. {', '.join(map(repr, missing[:3]))}); the card leaves them out"),
                      stacklevel=2)
    if not any(per_metric.values()):
        ids = sorted({x.trace_id for x in all_labels})[:5]
        raise DataError(f"no label matches a scored trace and a selected metric (label trace ids {ids}, "
                        f"metrics {sorted(ignored) or sorted(instances)})", source=source)
    cards = {name: metric_card(name, instances[name], per_metric[name], by_id) for name in instances}
    ident = judge_identity(judge)
    digest = label_hash(all_labels)
    blob = json.dumps([ident.get("model"), ident.get("backend"), digest,
                       sorted((n, c.rubric, c.threshold) for n, c in cards.items())], default=str)
    labels_info: dict[str, Any] = {"source": source, "sha256": digest, "n": len(all_labels),
                                   "unmatched": unmatched}
    if ignored:
        labels_info["ignored_metrics"] = sorted(ignored)
    inputs = result.run.inputs or []
    return JudgeCard(id="jc-" + hashlib.sha256(blob.encode()).hexdigest()[:12],
                     created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                     judge=ident, labels=labels_info, metrics=cards, inputs=list(inputs),
                     assay_version=__version__)


# -- applying a card to a run ----------------------------------------------------------------------

def correct_pass_rates(result: RunResult, cards: Sequence[JudgeCard], instances: Mapping[str, Any], judge: Any,
                       *, explicit: bool = True, level: float = 0.95) -> dict[str, dict[str, Any]]:
    """Per judge metric of the run: the pass rate corrected with the matching card, or why not.

    ``explicit`` (the user named the cards): a card for the metric that does not fit (another
    judge, rubric version or threshold; TPR + TNR <= 1) is reported as a refusal. Otherwise (cards
    found in the store) only fitting cards are used and the rest are passed over silently.
    """
    model = getattr(judge, "model", None) if judge is not None else None
    identity = judge_identity(judge) if judge is not None else {}
    style, decided = identity.get("prompt_style"), identity.get("thresholds")
    out: dict[str, dict[str, Any]] = {}
    for name, m in instances.items():
        if not m.spec.needs_judge:
            continue
        candidates = [(c, mc) for c in cards for key, mc in c.metrics.items() if mc.metric == m.spec.name]
        if not candidates:
            continue
        rubric, threshold = metric_rubric(m), float(m.threshold)
        refusals = []
        chosen = None
        for card, mc in candidates:
            why = _unfit(card, mc, model, style, rubric, m.spec.version, threshold) or \
                _unfit_thresholds(card, m.spec.name, decided)
            if why is None:
                chosen = (card, mc)
                break
            refusals.append((card, why))
        s = result.summary.get(name)
        if chosen is None:
            if explicit:
                card, why = refusals[0]
                out[name] = {"card": card.id, "corrected": None, "refused": why}
            continue
        card, mc = chosen
        pf = mc.pass_fail
        scored = (s.n_passed, s.n) if s is not None else (0, 0)
        if scored[1] == 0:
            out[name] = {"card": card.id, "corrected": None, "refused": "no scored trace to correct"}
            continue
        verdicts, tasks = _verdicts(result, name)
        clustered = len(verdicts) == scored[1] and len(set(tasks)) < len(tasks)  # trials of one task repeat
        c = corrected_pass_rate(verdicts if clustered else scored[0], scored[1], tp=pf.tp, fn=pf.fn,  # type: ignore[union-attr]
                                tn=pf.tn, fp=pf.fp, level=level, clusters=tasks if clustered else None)
        if c is None:  # only reachable when the counts changed under us; _unfit checked the rest
            out[name] = {"card": card.id, "corrected": None, "refused": "TPR + TNR <= 1"}
            continue
        out[name] = {"card": card.id, "raw": c.raw, "corrected": c.estimate, "ci": [c.low, c.high],
                     "level": c.level, "n": c.n, "tpr": c.tpr, "tnr": c.tnr, "n_labelled": mc.n_compared,
                     "method": c.method}
    return out


def _verdicts(result: RunResult, name: str) -> tuple[list[bool], list[str]]:
    """The run's scored verdicts of metric *name* and each one's task (the trace id where it has none):
    the clusters of the corrected pass rate's interval. Empty for a run whose traces were not kept."""
    verdicts, tasks = [], []
    for t in result.traces:
        r = t.metrics.get(name)
        if r is not None and r.score is not None:
            verdicts.append(bool(r.passed))
            tasks.append(t.task_id if t.task_id is not None else t.id)
    return verdicts, tasks


def _unfit_thresholds(card: JudgeCard, metric: str, decided: Mapping[str, float] | None) -> str | None:
    carded, now = _own(card.judge.get("thresholds"), metric), _own(decided, metric)
    if carded == now:
        return None
    return (f"the card measured {metric}'s answers decided by {carded or 'the greedy token'}, this run decides "
            f"them by {now or 'the greedy token'} (--judge-threshold, or recalibrate)")


def _unfit(card: JudgeCard, mc: MetricCard, model: str | None, style: str | None, rubric: str | None,
           version: str | None, threshold: float) -> str | None:
    if model is not None and card.judge.get("model") != model:
        return f"the card is for judge {card.judge.get('model')!r}, this run's judge is {model!r}"
    if mc.rubric != rubric:
        return f"the card is for rubric {mc.rubric}, this run sends {rubric}: recalibrate for the new rubric"
    if mc.metric_version is not None and version is not None and mc.metric_version != version:
        return (f"the card measured {mc.metric} version {mc.metric_version}, this run scores version {version}: "
                "recalibrate")
    carded = card.judge.get("prompt_style")
    if carded is not None and style is not None and carded != style:
        return (f"the card measured the {carded} prompt form, this run asks the {style} one "
                f"(--prompt-style {carded}, or recalibrate)")
    if mc.threshold is not None and abs(mc.threshold - threshold) > 1e-12:
        return f"the card measured pass/fail at threshold {mc.threshold:g}, this run uses {threshold:g}"
    pf = mc.pass_fail
    if pf is None or pf.tp + pf.fn == 0:
        return "the card has no human-passed item: TPR unknown"
    if pf.tn + pf.fp == 0:
        return "the card has no human-failed item: TNR unknown"
    youden = pf.youden
    if youden is None or youden <= 0:
        return (f"TPR + TNR = {pf.tpr + pf.tnr:.3f} <= 1: on the card's labels the judge is no better than "  # type: ignore[operator]
                "chance, so its verdicts cannot be corrected")
    return None


def judge_overview(result: RunResult) -> dict[str, Any] | None:
    """The results file's judge summary: judges, failure and retry rates, which judge metrics are
    calibrated, unstable or jury-judged, and the notes a reader must see. None without a judge."""
    judge = result.run.judge
    if not isinstance(judge, dict):
        return None
    stats = result.statistics
    judged = [m["name"] for m in result.run.metrics or [] if m.get("judge_calls") not in (None, 0, "0")]
    corrections = stats.get("judge_correction") or {}
    calibrated = [n for n in judged if (corrections.get(n) or {}).get("corrected") is not None]
    retest = stats.get("test_retest") or {}
    unstable = {n: t["unstable"] for n, t in retest.items() if t.get("unstable")}
    requests, calls = judge.get("requests") or 0, judge.get("calls") or 0
    out: dict[str, Any] = {
        "judges": [j.get("model") for j in judge.get("jurors", [judge])],
        "failure_rate": (judge.get("errors") or 0) / requests if requests else None,
        "retry_rate": (judge.get("retries") or 0) / calls if calls else None,
        "reask_rate": (judge.get("reasks") or 0) / calls if calls else None,
        "calibrated": calibrated, "uncalibrated": [n for n in judged if n not in calibrated],
        "unstable": unstable}
    notes = []
    if out["uncalibrated"]:
        notes.append(f"uncalibrated judge for {', '.join(out['uncalibrated'])}: no judge card applies, so these "
                     "pass rates are the judge's own (assay calibrate measures it)")
    for n, k in unstable.items():
        notes.append(f"unstable judge on {n}: the pass/fail verdict flipped between repeats on {k} trace(s); "
                     "their verdict is the majority")
    out["notes"] = notes
    return out
