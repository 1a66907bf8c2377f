"""The store's compact form of one trace's results: a few bytes per metric, words only where kept.

Rows are stored several traces to a store row (``encode_block``: a batch as one MessagePack value). A row
holds what cannot be derived: per metric, its position in the run's metric list, a status
byte (scored or not, and the warning) and the score as a float64 (exact). Name, threshold and
passed come from the run's metric list; dimensions and the overall score are recomputed by the
``regroup`` the reader hands in (the store passes the engine's own function with the run's weights
and thresholds, in the same order: the same floats), so this codec imports nothing above the model.
Reasons, evidence and details are kept ("extra", JSON) for every result that did not pass, for
every result of a trace whose input is stored (what a report of the run shows), and for judged
results (their calls, tokens and cost); a passing result elsewhere keeps its score only.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from ..model import DimensionScore, MetricResult, TraceResult, Warning, encode

Regroup = Callable[[Mapping[str, MetricResult]], tuple[dict[str, DimensionScore], float | None, bool | None]]
"""A trace's dimensions, overall score and verdict from its metric results (the engine's ``group``)."""

WARNINGS: tuple[Warning | None, ...] = (None, Warning.MISSING_DATA, Warning.INVALID_DATA, Warning.NOT_APPLICABLE,
                                        Warning.JUDGE_ERROR, Warning.METRIC_ERROR, Warning.NOT_EVALUATED)
"""Status codes of the warnings: fixed, stored in files (append only)."""
_CODE = {w: i for i, w in enumerate(WARNINGS)}
_NULL = 0x40
"""Status bit: no score."""
_F64 = struct.Struct("<d")
_ROWS: dict[int, struct.Struct] = {}
"""A row of n passing scores (keyed by 3n): n x (index, status 0, float64), packed in one call."""


def _row(size: int) -> struct.Struct:
    """The struct of ``size // 3`` passing scores (``_ROWS``)."""
    row = _ROWS.get(size)
    if row is None:
        row = _ROWS[size] = struct.Struct("<" + "BBd" * (size // 3))
    return row
INSERT_BLOCK = "INSERT INTO result_blocks (run_id, seq, n, rows) VALUES (?, ?, ?, ?)"
INSERT_INPUT = "INSERT INTO inputs (run_id, seq, trace_id, source, trace) VALUES (?, ?, ?, ?, ?)"
_extra_decoder = msgspec.json.Decoder(dict[str, dict[str, Any]])
Row = tuple[str, "str | None", "int | None", "str | int | None", "int | None", bytes, "bytes | None"]
"""One trace's results in a block: (trace id, task id or None when the same, trial, source, passed as
0/1/None, scores, extra)."""
_block_encoder = msgspec.msgpack.Encoder()
_block_decoder = msgspec.msgpack.Decoder(list[tuple[str, str | None, int | None, str | int | None, int | None, bytes,
                                                    bytes | None]])


def encode_block(rows: list[Any]) -> bytes:
    """Several traces' rows (``Row``) as one value: one store row per batch instead of one per trace."""
    return _block_encoder.encode(rows)


def decode_block(data: bytes) -> list[Row]:
    return _block_decoder.decode(data)  # type: ignore[return-value]


class RowCodec:
    """Packs and unpacks the results rows of one run (its metric list, weights and inputs)."""

    def __init__(self, metrics: Sequence[Mapping[str, Any]], inputs: Sequence[Mapping[str, Any]] = (),
                 regroup: Regroup | None = None) -> None:
        self.names = [str(m.get("name")) for m in metrics]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.thresholds = [(m.get("params") or {}).get("threshold") for m in metrics]
        self._slot_of = {n: (i, self.thresholds[i]) for n, i in self.index.items() if i <= 255}
        """Name -> (index, threshold) of the metrics a row can hold by index (the first 256)."""
        self.regroup = regroup
        """How ``unpack`` recomputes dimensions (reading needs it; writing does not)."""
        self.prefixes = [f"{i.get('path')}:" for i in inputs][:255]

    # -- writing -------------------------------------------------------------------------------
    def source(self, source: str | None) -> str | int | None:
        """``file:line`` of one of the run's inputs as ``line << 8 | input index``, else the text."""
        if source is None:
            return None
        if len(self.prefixes) == 1:  # one input (the usual run): no loop
            prefix = self.prefixes[0]
            if source.startswith(prefix):
                line = source[len(prefix):]
                if line.isdigit() and line[0] != "0":
                    return int(line) << 8
            return source
        for k, prefix in enumerate(self.prefixes):
            if source.startswith(prefix):
                line = source[len(prefix):]
                if line.isdigit() and line[0] != "0":
                    return int(line) << 8 | k
        return source

    def pack(self, t: TraceResult, keep_all: bool) -> tuple[bytes, bytes | None]:
        """(scores, extra JSON or None) of one trace; ``keep_all`` keeps every reason."""
        scores, extra, _ = self.pack_row(t, keep_all)
        return scores, extra

    def pack_row(self, t: TraceResult, keep_all: bool) -> tuple[bytes, bytes | None, bool]:
        """``pack``, and whether a result may carry tokens or a cost (False: none does, so a recorder's
        judge totals need not look at this trace's results again)."""
        slot_of = self._slot_of
        if not keep_all and t.outcome is None:  # the common row: scored results of the run's metrics, none judged
            args: list[Any] = []
            append = args.append
            kept: dict[str, Any] | None = None
            for name, r in t.metrics.items():
                s = slot_of.get(name)
                score = r.score
                if s is None or score is None or r.judge_calls or r.threshold != s[1] or r.tokens \
                        or r.cost_usd is not None:
                    break  # a result this loop does not pack: the whole row goes the general way below
                warning, passed = r.warning, r.passed
                append(s[0])
                if passed is True and warning is None:  # a passing score with nothing else to keep
                    append(0)
                    append(score)
                    continue
                append(_CODE.get(warning, 0))
                append(score)
                thr = s[1]  # a scored result with its run's threshold and no judge calls: what did not pass keeps its words
                e = self._extra(r, passed is not True, None if thr is None or not 0.0 <= score <= 1.0 else score >= thr,
                                thr)
                if e:
                    if kept is None:
                        kept = {}
                    kept[name] = e
            else:  # n x (index, status, float64): the bytes the general loop writes, in one call
                return _row(len(args)).pack(*args), None if kept is None else encode(kept), False
        out = bytearray()
        costly = False
        extra: dict[str, Any] | None = None
        pack_f64 = _F64.pack
        for name, r in t.metrics.items():
            if r.tokens or r.cost_usd is not None:
                costly = True
            s = slot_of.get(name)
            if s is None:  # not in the run's metric list (or past the 256th): kept whole
                extra = extra or {}
                extra[name] = {"full": True, **r.to_dict()}
                continue
            i, thr = s
            score, warning, passed = r.score, r.warning, r.passed
            if score is not None and passed is True and warning is None and not keep_all and not r.judge_calls \
                    and r.threshold == thr:
                out.append(i)  # the common case: a passing score, nothing else to keep
                out.append(0)
                out += pack_f64(score)
                continue
            code = _CODE.get(warning, 0)
            if score is None:
                out.append(i)
                out.append(_NULL | code)
                derived = None
            else:
                out.append(i)
                out.append(code)
                out += pack_f64(score)
                derived = None if thr is None or not 0.0 <= score <= 1.0 else score >= thr
            e = self._extra(r, keep_all or passed is not True, derived, thr)
            if e:
                extra = extra or {}
                extra[name] = e
        if t.outcome is not None:  # a failed or excluded trial: what regrouping cannot know
            extra = extra or {}
            extra[OUTCOME_KEY] = {"outcome": t.outcome, "reason": t.outcome_reason}
        return bytes(out), None if extra is None else encode(extra), costly

    @staticmethod
    def _extra(r: MetricResult, keep: bool, derived: bool | None, threshold: float | None) -> dict[str, Any]:
        e: dict[str, Any] = {}
        if keep:
            if r.reason:
                e["reason"] = r.reason
            if r.evidence:
                e["evidence"] = r.evidence
            if r.details:
                e["details"] = r.details
        if r.judge_calls:
            e.update(judge_calls=r.judge_calls, tokens=r.tokens, cost_usd=r.cost_usd)
        if r.passed is not derived:
            e["passed"] = r.passed
        if r.threshold != threshold:
            e["threshold"] = r.threshold
        return e

    # -- reading -------------------------------------------------------------------------------
    def unpack(self, trace_id: str, task_id: str | None, trial_index: int | None, source: str | int | None,
               scores: bytes, extra: bytes | str | None) -> TraceResult:
        more = _extra_decoder.decode(extra) if extra else {}
        trial = more.pop(OUTCOME_KEY, None) if more else None
        metrics: dict[str, MetricResult] = {}
        names, thresholds = self.names, self.thresholds
        p, end = 0, len(scores)
        while p < end:
            i, status = scores[p], scores[p + 1]
            p += 2
            name, thr = names[i], thresholds[i]
            warning = WARNINGS[status & 0x3F]
            if status & _NULL:
                score, passed = None, None
            else:
                score = _F64.unpack_from(scores, p)[0]
                p += 8
                passed = None if thr is None or not 0.0 <= score <= 1.0 else score >= thr
            e = more.get(name)
            if e is None:
                metrics[name] = MetricResult(name=name, score=score, passed=passed, threshold=thr, warning=warning)
            else:  # what the row keeps beyond the score: the model's own field names (``_extra``)
                metrics[name] = MetricResult(name=name, score=score, warning=warning,
                                             **{"passed": passed, "threshold": thr,
                                                **{k: v for k, v in e.items() if k in _KEPT}})
        for name, e in more.items():
            if e.get("full"):
                e = {k: v for k, v in e.items() if k != "full"}
                metrics[name] = MetricResult.from_dict(name, e)
        if self.regroup is None:
            raise ValueError("RowCodec.unpack needs regroup= (how dimensions are recomputed)")
        dimensions, overall, passed_all = self.regroup(metrics)
        if trial is None:
            return TraceResult(trace_id, task_id if task_id is not None else trace_id, trial_index, metrics,
                               dimensions, overall, passed_all, self.read_source(source))
        outcome = str(trial.get("outcome"))
        return TraceResult(trace_id, task_id if task_id is not None else trace_id, trial_index, metrics, dimensions,
                           overall, None if outcome == "excluded" else False, self.read_source(source),
                           outcome=outcome, outcome_reason=str(trial.get("reason") or ""))

    def read_source(self, source: str | int | None) -> str | None:
        if isinstance(source, int):
            return f"{self.prefixes[source & 0xFF]}{source >> 8}"
        return source


OUTCOME_KEY = "@trial"
"""The key of a failed or excluded trial's outcome among a row's extras (no metric instance is named so)."""
_KEPT = frozenset({"passed", "threshold", "reason", "evidence", "details", "judge_calls", "tokens", "cost_usd"})
"""The MetricResult fields ``_extra`` may keep for a result (its keys are the fields' names)."""
