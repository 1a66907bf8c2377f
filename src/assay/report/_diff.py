"""Expected vs actual tool calls, side by side: missing, extra, out of order, argument differences.

The alignment mirrors what the tool-calling metrics score: in ``strict`` order the longest common
subsequence of names pairs calls, and a leftover call whose name is also left over on the other
side is "out of order"; in ``any`` order calls pair by name regardless of position. Argument
values compare type-aware (``49.9`` and ``"49.90"`` differ, ``2`` and ``2.0`` do not), as
``parameter_quality`` does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..metrics.tool_calling import values_equal
from ..model import Trace
from ._html import Markup, h

MAX_CALLS = 200
"""Calls per side that are aligned and shown; longer lists are cut (the metrics score them all)."""
MAX_VALUE = 300
"""Characters of one argument value shown in the diff."""


@dataclass
class Row:
    """One line of the diff: ``kind`` is match, missing, extra or moved (out of order)."""

    kind: str
    expected: Any = None
    actual: Any = None
    args: list[tuple[str, str, Any, Any]] = field(default_factory=list)
    """(key, state, expected value, actual value); state is same, differs, missing or extra."""

    @property
    def bad(self) -> bool:
        return self.kind != "match" or any(s != "same" for _, s, _, _ in self.args)


def _lcs_pairs(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    n, m = len(a), len(b)
    dp = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            dp[i][j] = dp[i + 1][j + 1] + 1 if a[i] == b[j] else max(dp[i + 1][j], dp[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif dp[i + 1][j] >= dp[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _args(expected: dict[str, Any] | None, actual: dict[str, Any]) -> list[tuple[str, str, Any, Any]]:
    if expected is None:  # "any arguments"
        return []
    out = []
    for key, want in expected.items():
        if key not in actual:
            out.append((key, "missing", want, None))
        else:
            out.append((key, "same" if values_equal(want, actual[key]) else "differs", want, actual[key]))
    out += [(key, "extra", None, got) for key, got in actual.items() if key not in expected]
    return out


def diff_calls(expected: Sequence[Any], actual: Sequence[Any], order: str = "strict") -> list[Row]:
    """Rows in expected order, each extra call placed after the expected call it followed."""
    exp, act = list(expected[:MAX_CALLS]), list(actual[:MAX_CALLS])
    if order == "any":
        pairs, used = [], set()
        for i, e in enumerate(exp):
            j = next((j for j, a in enumerate(act) if j not in used and a.name == e.name), None)
            if j is not None:
                used.add(j)
                pairs.append((i, j))
    else:
        pairs = _lcs_pairs([e.name for e in exp], [a.name for a in act])
    kind = {i: "match" for i, _ in pairs}
    partner = dict(pairs)
    free_act = [j for j in range(len(act)) if j not in partner.values()]
    for i, e in enumerate(exp):
        if i in partner:
            continue
        j = next((j for j in free_act if act[j].name == e.name), None)
        if j is not None:  # called, but not where expected
            free_act.remove(j)
            partner[i], kind[i] = j, "moved"
    rows: list[Row] = []
    for i, e in enumerate(exp):
        j = partner.get(i)
        rows.append(Row("missing", expected=e) if j is None else Row(kind[i], e, act[j], _args(e.arguments, act[j].arguments)))
    # each extra call goes after the last in-order call that preceded it
    anchors = sorted((partner[i], i) for i in partner if kind[i] == "match")
    inserts: dict[int, list[Row]] = {}
    for j in free_act:
        before = [i for pj, i in anchors if pj < j]
        inserts.setdefault(before[-1] if before else -1, []).append(Row("extra", actual=act[j]))
    out = list(inserts.get(-1, []))
    for i, r in enumerate(rows):
        out += [r, *inserts.get(i, [])]
    return out


def summary(rows: Sequence[Row]) -> list[str]:
    """Short phrases for what differs: ``missing check_refund_policy``, ``issue_refund.amount: 49.9 vs "49.90"``."""
    out = []
    for r in rows:
        if r.kind == "missing":
            out.append(f"missing {r.expected.name}")
        elif r.kind == "extra":
            out.append(f"extra {r.actual.name}")
        elif r.kind == "moved":
            out.append(f"{r.expected.name} out of order")
        for key, state, want, got in r.args:
            name = r.expected.name
            if state == "differs":
                out.append(f"{name}.{key}: expected {_value(want, 40)}, got {_value(got, 40)}")
            elif state == "missing":
                out.append(f"{name}.{key} missing")
            elif state == "extra":
                out.append(f"{name}.{key} not expected")
    return out


def _value(v: Any, limit: int = MAX_VALUE) -> str:
    try:
        text = json.dumps(v, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= limit else text[:limit - 1] + f"… ({len(text):,} chars)"


def trace_rows(trace: Trace) -> list[Row] | None:
    """The trace-level diff (all main-agent calls against ``expected.tool_calls``), or None."""
    if trace.expected is None or trace.expected.tool_calls is None:
        return None
    actual = [c for t in trace.turns for c in t.tool_calls]
    return diff_calls(trace.expected.tool_calls, actual, trace.expected.tool_order)


def turn_rows(turn: Any) -> list[Row] | None:
    if turn.expected is None or turn.expected.tool_calls is None:
        return None
    return diff_calls(turn.expected.tool_calls, turn.tool_calls, turn.expected.tool_order or "strict")


_LABEL = {"match": "called", "missing": "missing", "extra": "extra", "moved": "out of order"}


def render(rows: Sequence[Row], *, title: str = "Tool calls: expected vs actual") -> Markup:
    """A table, one row per call, with the differing argument values highlighted."""
    body = []
    for r in rows:
        state = "same" if not r.bad else "bad"
        args = []
        for key, st, want, got in r.args:
            if st == "same":
                args.append(h("li", h("code", key), " ", h("code", _value(got)), class_="arg same"))
            else:
                args.append(h("li", h("code", key), " ",
                              h("del", _value(want), title="expected") if st in ("differs", "missing") else None,
                              " " if st == "differs" else None,
                              h("ins", _value(got), title="actual") if st in ("differs", "extra") else None,
                              h("span", f" {st if st != 'extra' else 'not expected'}", class_="meta"),
                              class_=f"arg {st}"))
        if r.kind == "match" and r.expected is not None and r.expected.arguments is None:
            args.append(h("li", "any arguments accepted", class_="meta"))
        label = "arguments differ" if r.kind == "match" and r.bad else _LABEL[r.kind]
        body.append(h("tr", h("td", h("span", label, class_=f"badge {'fail' if r.bad else 'pass'}")),
                      h("td", h("code", r.expected.name) if r.expected is not None else "—"),
                      h("td", h("code", r.actual.name) if r.actual is not None else "—"),
                      h("td", h("ul", args, class_="args") if args else None),
                      class_=f"call {r.kind} {state}"))
    bad = sum(r.bad for r in rows)
    note = f"{bad} of {len(rows)} differ" if bad else "all calls as expected"
    head = h("tr", [h("th", c) for c in ("", "expected", "actual", "arguments (expected → actual)")])
    return h("div", h("h4", title, h("span", f" · {note}", class_="meta")),
             h("table", h("thead", head), h("tbody", body), class_="tool-diff"), class_="tool-diff-box")
