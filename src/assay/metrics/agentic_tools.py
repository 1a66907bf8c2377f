"""Fair Forge's deterministic tool correctness, per interaction (turn).

For each turn with expected tool calls::

    selection   = 1 if used names == expected names; |U|/|E| if U is a subset of E;
                  |E|/|U| if U is a superset; Jaccard otherwise          (name sets)
    parameters  = mean over expected calls of the argument match with the used call of that
                  name: 1 if equal, else equal keys / union of keys, 0 if there is none
    sequence    = 1 when order does not matter, else the share of expected calls whose used
                  counterpart has the same step
    utilization = the turn's ``uses_tool_results`` flag (1 / 0)
    overall     = weighted sum (0.25 each); correct iff overall >= tool_threshold (1.0)

Differences from Fair Forge, on purpose:

- A turn that expected tools but used none scores (selection 0, parameters 0, sequence 0),
  instead of being skipped: Fair Forge left a missing call unpunished.
- The i-th expected call of a name is compared with the i-th used call of that name (Fair
  Forge compares every expected call with the first used one), and a missing name costs one
  zero per expected call, in parameters and in sequence alike.
- Values compare type-aware (``True != 1``; see ``tool_calling.values_equal``) and expected
  ``arguments: null`` accepts any arguments.
- An unknown ``uses_tool_results`` (None) leaves utilization out and renormalises the other
  weights, instead of counting it as 0; weights are always normalised to sum to 1.
- Steps missing on calls default to their 1-based position in the turn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..model import MetricResult, Trace, Warning
from ._base import MetricContext, metric
from .tool_calling import values_equal

DEFAULT_WEIGHTS: dict[str, float] = {"selection": 0.25, "parameters": 0.25, "sequence": 0.25, "utilization": 0.25}


def _field(call: Any, *names: str) -> Any:
    if isinstance(call, Mapping):
        for n in names:
            if n in call:
                return call[n]
        return None
    for n in names:
        v = getattr(call, n, None)
        if v is not None:
            return v
    return None


def _norm_calls(calls: Sequence[Any], expected: bool) -> list[tuple[str, Mapping[str, Any] | None, int]]:
    """(name, arguments, step) from ToolCall/ExpectedToolCall objects or Fair Forge dicts."""
    out = []
    for i, c in enumerate(calls, 1):
        args = _field(c, "arguments", "parameters")
        if args is None and not expected:
            args = {}
        step = _field(c, "step")
        out.append((str(_field(c, "name", "tool_name")), args, step if step is not None else i))
    return out


def check_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    """Validated weights normalised to sum 1; unnamed aspects weigh 0 when some are given."""
    if weights is None:
        return dict(DEFAULT_WEIGHTS)
    unknown = set(weights) - set(DEFAULT_WEIGHTS)
    if unknown:
        raise ConfigError(f"tool_weights: unknown aspect(s) {sorted(unknown)!r}; choices: {', '.join(DEFAULT_WEIGHTS)}")
    w = {k: float(weights.get(k, 0.0)) for k in DEFAULT_WEIGHTS}
    if any(v < 0 or not math.isfinite(v) for v in w.values()) or sum(w.values()) <= 0:
        raise ConfigError(f"tool_weights: need non-negative weights with a positive sum, got {dict(weights)!r}")
    total = sum(w.values())
    return {k: v / total for k, v in w.items()}


def _arg_score(expected: Mapping[str, Any] | None, used: Mapping[str, Any]) -> float:
    if expected is None:
        return 1.0
    if values_equal(dict(expected), dict(used)):
        return 1.0
    keys = set(expected) | set(used)
    return sum(1 for k in keys if k in expected and k in used and values_equal(expected[k], used[k])) / len(keys)


def tool_correctness_score(used: Sequence[Any], expected: Sequence[Any], sequence_matters: bool = True,
                           uses_results: bool | None = None, weights: Mapping[str, float] | None = None,
                           threshold: float = 1.0) -> dict[str, Any]:
    """Fair Forge's ToolCorrectnessScore for one interaction, as a dict (see the module doc).

    ``used`` / ``expected``: ToolCall / ExpectedToolCall objects or Fair Forge dicts
    (``tool_name``, ``parameters``, ``step``). ``result_utilization`` is None when
    ``uses_results`` is None.
    """
    w = check_weights(weights)
    u, e = _norm_calls(used, expected=False), _norm_calls(expected, expected=True)
    un, en = {c[0] for c in u}, {c[0] for c in e}
    notes: list[str] = []
    if un == en:
        selection = 1.0
    elif un < en:
        selection = len(un) / len(en)
        notes.append(f"selection: missing {sorted(en - un)}")
    elif un > en:
        selection = len(en) / len(un)
        notes.append(f"selection: extra {sorted(un - en)}")
    else:
        selection = len(un & en) / len(un | en)
        notes.append(f"selection: used {sorted(un)}, expected {sorted(en)}")

    used_by_name: dict[str, list[tuple[Mapping[str, Any], int]]] = {}
    for name, args, step in u:
        used_by_name.setdefault(name, []).append((args or {}, step))
    seen: dict[str, int] = {}
    params: list[float] = []
    steps: list[float] = []
    for name, args, step in e:
        k = seen.get(name, 0)
        seen[name] = k + 1
        calls = used_by_name.get(name, [])
        if k >= len(calls):
            params.append(0.0)
            steps.append(0.0)
            continue
        params.append(_arg_score(args, calls[k][0]))
        steps.append(float(calls[k][1] == step))
    parameters = sum(params) / len(params) if params else 1.0
    if parameters < 1.0:
        notes.append(f"parameters: {parameters:.2f}")
    if not sequence_matters:
        sequence = 1.0
    else:
        sequence = sum(steps) / len(steps) if steps else float(not u)
        if sequence < 1.0:
            notes.append(f"sequence: {sequence:.2f}")
    utilization = None if uses_results is None else float(bool(uses_results))
    if utilization == 0.0:
        notes.append("utilization: answer does not use the tool results")
    parts = {"selection": selection, "parameters": parameters, "sequence": sequence, "utilization": utilization}
    live = {k: w[k] for k, v in parts.items() if v is not None}
    total = sum(live.values())
    overall = sum(parts[k] * wk for k, wk in live.items()) / total if total > 0 else 0.0  # type: ignore[operator]
    overall = min(1.0, max(0.0, overall))
    if utilization is None:
        notes.append("utilization unknown: left out")
    return {
        "tool_selection_correct": selection, "parameter_accuracy": parameters, "sequence_correct": sequence,
        "result_utilization": utilization, "overall_correctness": overall,
        "is_correct": overall >= threshold - 1e-12,
        "reasoning": "; ".join(notes) if notes else "all aspects correct",
    }


def _interactions(trace: Trace) -> list[tuple[str, list[Any], list[Any], bool, bool | None]]:
    """(label, used, expected, sequence_matters, uses_results) per interaction with expectations."""
    default_order = trace.expected.tool_order if trace.expected is not None else "strict"
    out = []
    for i, t in enumerate(trace.turns):
        te = t.expected
        if te is not None and te.tool_calls is not None:
            order = te.tool_order or default_order
            out.append((f"turn {i + 1}", t.tool_calls, te.tool_calls, order == "strict", t.uses_tool_results))
    if not out and trace.expected is not None and trace.expected.tool_calls is not None:
        flags = [t.uses_tool_results for t in trace.turns if t.uses_tool_results is not None]
        uses = None if not flags else all(flags)
        out.append(("trace", trace.all_tool_calls(), trace.expected.tool_calls, default_order == "strict", uses))
    return out


@metric("tool_correctness", dimension="tool_calling", requires=("expected_tools",), default=False,
        summary="mean over turns of 0.25 x (selection + parameters + sequence + utilization) (Fair Forge)")
@dataclass(frozen=True, kw_only=True)
class ToolCorrectness:
    """Fair Forge's tool correctness per interaction, averaged over the trace.

    Opt-in: the default tool-calling metrics already cover selection, order and arguments.
    ``details['per_turn']`` holds one ToolCorrectnessScore-like dict per scored interaction;
    ``tool_threshold`` decides each interaction's ``is_correct``.
    """

    threshold: float = 0.7
    tool_threshold: float = 1.0
    tool_weights: dict[str, float] | None = None

    def __post_init__(self) -> None:
        check_weights(self.tool_weights)
        if not 0.0 <= self.tool_threshold <= 1.0:
            raise ConfigError("metric 'tool_correctness': tool_threshold must be in [0, 1], "
                              f"got {self.tool_threshold!r}")

    def score(self, ctx: MetricContext) -> MetricResult:
        interactions = _interactions(ctx.trace)
        if not interactions:
            return ctx.null(Warning.MISSING_DATA, "no expected tool calls in the trace")
        per_turn = []
        for label, used, expected, seq, uses in interactions:
            s = tool_correctness_score(used, expected, seq, uses, self.tool_weights, self.tool_threshold)
            per_turn.append({"interaction": label, **s})
        mean = sum(p["overall_correctness"] for p in per_turn) / len(per_turn)
        n_ok = sum(p["is_correct"] for p in per_turn)
        wrong = [f"{p['interaction']}: {p['reasoning']}" for p in per_turn if not p["is_correct"]]
        reason = f"{n_ok} of {len(per_turn)} interactions correct (tool_threshold {self.tool_threshold:g})"
        return ctx.result(mean, reason, wrong, details={"per_turn": per_turn, "correct_interactions": n_ok,
                                                       "interactions": len(per_turn)})
