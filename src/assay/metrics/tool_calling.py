"""Tool-calling metrics (UAEF): deterministic, against expected tool calls.

Expected calls come from ``trace.expected.tool_calls`` or, when that is absent, from the turns'
``expected.tool_calls`` (see ``Trace.expected_tool_calls``). Actual calls are the main agent's
(``Trace.all_tool_calls``); calls made inside ``trace.agents`` are the multi-agent metrics' data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from ..model import MetricResult, ToolCall, Warning
from . import _memo
from ._base import MetricContext, metric

# --------------------------------------------------------------------------- pure helpers


def values_equal(expected: Any, actual: Any) -> bool:
    """Type-aware equality of argument values.

    ``1 != "1"`` and ``True != 1`` (a string or a bool where a number was expected is a wrong
    argument), but ``1 == 1.0``: JSON does not distinguish integers from floats reliably, and
    agents emitting ``2.0`` for ``2`` are right. Containers compare element-wise with the same
    rules.
    """
    te, ta = type(expected), type(actual)
    if te is ta:
        if te is dict:
            if expected.keys() != actual.keys():
                return False
            for k, v in expected.items():
                w = actual[k]
                if type(v) is type(w) and type(v) in _SCALARS:
                    if v != w:
                        return False
                elif not values_equal(v, w):
                    return False
            return True
        if te is not list:
            return bool(expected == actual)
    if te is bool or ta is bool:
        return False
    if te in (int, float) and ta in (int, float):
        return bool(expected == actual)
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return expected.keys() == actual.keys() and all(values_equal(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(values_equal(a, b) for a, b in zip(expected, actual))
    return False


_SCALARS = frozenset({str, int, float, bool, type(None)})


def key_score(expected: Mapping[str, Any] | None, actual: Mapping[str, Any]) -> float:
    """Equal values over the union of keys; ``expected`` None means any arguments (1.0)."""
    if expected is None:
        return 1.0
    if not expected and not actual:
        return 1.0
    equal = shared = 0
    for k, v in expected.items():
        if k in actual:
            shared += 1
            w = actual[k]
            if (v == w and type(v) is type(w) and type(v) in _SCALARS) or values_equal(v, w):
                equal += 1
    return equal / (len(expected) + len(actual) - shared)  # |union| = |E| + |A| - |E & A|


MAX_LCS_CELLS = 1_000_000_000_000
"""tool_sequence_correctness compares at most this many (expected, called) pairs per segment after
the common start and end are set aside: 1,000,000 x 1,000,000 calls. The bit-parallel LCS does them
64 to a machine word (20,000 x 20,000 calls in ~0.1 s; the largest allowed take minutes); beyond
it the metric scores ``invalid_data`` instead of stalling the run."""
MATCH_CANDIDATES = 16
"""parameter_quality's bound on its search for an expected call without an exact match: it weighs at
most this many unused same-name calls from each list of calls sharing one of the expected call's
argument values (a call sharing none scores 0: then the first unused call is taken). While no such
list is longer (the usual trace), this is the best-scoring unused same-name call, as in UAEF;
beyond, the best of those weighed. Exact
matches are found through an index whatever their number, so the cost per call stays constant: a
trace of 1,000,000 calls is scored, never refused (benchmarks/metric_cost.py)."""


def _trim(a: Sequence[str], b: Sequence[str]) -> tuple[int, Sequence[str], Sequence[str]]:
    """(length of the common start and end, the middles of a and b)."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    j = 0
    while j < n - i and a[len(a) - 1 - j] == b[len(b) - 1 - j]:
        j += 1
    return i + j, a[i:len(a) - j], b[i:len(b) - j]


def lcs_cells(a: Sequence[str], b: Sequence[str]) -> int:
    """The pairs ``lcs_length`` has to compare: the product of the lengths left after trimming."""
    _, x, y = _trim(a, b)
    return len(x) * len(y)


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence.

    The common start and end are counted directly; the middles go through the bit-parallel
    algorithm (Allison-Dix / Hyyrö): one big-integer step per element of ``a`` over a bit
    vector as long as ``b``, O(len a x len b / word size) in C, no table.
    """
    common, a, b = _trim(a, b)
    if not a or not b:
        return common
    if len(b) > len(a):
        a, b = b, a
    positions: dict[str, list[int]] = {}
    for j, y in enumerate(b):
        positions.setdefault(y, []).append(j)
    masks: dict[str, int] = {}
    for y, js in positions.items():
        bits = bytearray((len(b) + 8) // 8)
        for j in js:
            bits[j >> 3] |= 1 << (j & 7)
        masks[y] = int.from_bytes(bits, "little")
    full = (1 << len(b)) - 1
    pairs = {y: (m, full ^ m) for y, m in masks.items()}
    # Hyyro's form of the row step, V' = (V + (V & M)) | (V & ~M): four word-parallel operations.
    # The carry out of the top bit is not masked off every row, only every 64 rows and at the end
    # (a bit above len(b) never reaches the low bits: additions carry upwards only).
    v, row = full, 0
    for x in a:
        pair = pairs.get(x)
        if pair is not None:
            m, not_m = pair
            v = (v + (v & m)) | (v & not_m)
            row += 1
            if not row & 63:
                v &= full
    return common + len(b) - (v & full).bit_count()


def multiset_diff(expected: Sequence[str], actual: Sequence[str]) -> tuple[list[str], list[str]]:
    """(expected names not called, called names not expected) as sorted multisets."""
    left: dict[str, int] = {}
    for n in expected:
        left[n] = left.get(n, 0) + 1
    extra = []
    for n in actual:
        k = left.get(n, 0)
        if k:
            left[n] = k - 1
        else:
            extra.append(n)
    missing = [n for n, k in left.items() for _ in range(k)]
    return sorted(missing), sorted(extra)


def _segments(v: _memo.TraceView) -> list[tuple[list[str], list[str], str]]:
    """(expected names, called names, order) per unit of comparison: the trace, or each turn."""
    trace = v.trace
    exp = trace.expected
    if exp is not None and exp.tool_calls is not None:
        names = v.names()
        return [(names[0] or [], names[1], exp.tool_order)]
    default_order = exp.tool_order if exp is not None else "strict"
    out: list[tuple[list[str], list[str], str]] = []
    for t in trace.turns:
        te = t.expected
        if te is not None and te.tool_calls is not None:
            out.append(([c.name for c in te.tool_calls], [c.name for c in t.tool_calls],
                        te.tool_order or default_order))
        elif t.tool_calls:
            out.append(([], [c.name for c in t.tool_calls], default_order))
    return out


# --------------------------------------------------------------------------- metrics


@metric("tool_selection_accuracy", dimension="tool_calling", requires=("expected_tools",),
        summary="multiset Jaccard of tool names: matched / (expected + actual - matched)")
@dataclass(frozen=True, kw_only=True)
class ToolSelectionAccuracy:
    """Were the right tools called? Names only; arguments are parameter_quality's job.

    Counts are multisets (calling ``search`` twice when once was expected is an extra call).
    No expected and no actual calls scores 1.0: nothing was needed and nothing was done.
    """

    threshold: float = 0.7

    def score(self, ctx: MetricContext) -> MetricResult:
        exp_names, act_names = _memo.view(ctx).names()
        if exp_names is None:
            return ctx.null(Warning.MISSING_DATA, "no expected tool calls in the trace")
        # equal lists are equal sorted: the usual case needs no sort
        if exp_names == act_names or sorted(exp_names) == sorted(act_names):
            if not exp_names:
                return ctx.result(1.0, "no tools expected and none called")
            n = len(exp_names)
            return ctx.result(1.0, _all_matched(n), details={"matched": n, "missing": [], "unexpected": []})
        missing, extra = multiset_diff(exp_names, act_names)
        e, a = len(exp_names), len(act_names)
        matched = e - len(missing)
        reason = f"{matched} matched of {e} expected and {a} called"
        if missing:
            reason += f"; missing {missing}"
        if extra:
            reason += f"; unexpected {extra}"
        return ctx.result(matched / (e + a - matched), reason,
                            details={"matched": matched, "missing": missing, "unexpected": extra})


@metric("tool_sequence_correctness", dimension="tool_calling", requires=("expected_tools",),
        summary="LCS(expected names, called names) / max(len expected, len called)")
@dataclass(frozen=True, kw_only=True)
class ToolSequenceCorrectness:
    """Were the tools called in the expected order? (UAEF: LCS-based).

    With ``tool_order: "any"`` (trace-level, or per turn) the order is ignored and the LCS
    becomes the multiset overlap. Differs from UAEF where expectations are per turn: each turn
    is compared with its own expected calls (a call cannot 'match' across a turn boundary) and
    the result is pooled, sum(LCS) / sum(max(len E, len A)); calls in turns without
    expectations count as extra calls, as in tool_selection_accuracy.
    """

    threshold: float = 0.7

    def score(self, ctx: MetricContext) -> MetricResult:
        v = _memo.view(ctx)
        names = v.names()
        if names[0] is None:
            return ctx.null(Warning.MISSING_DATA, "no expected tool calls in the trace")
        exp = ctx.trace.expected
        if exp is not None and exp.tool_calls is not None and exp.tool_order != "any":
            if names[0] == names[1] and names[1]:  # one segment, called as expected: what the loop gives
                n = len(names[1])
                return ctx.result(1.0, _all_in_order(n),
                                  details={"common": n, "length": n, "order_ignored": False})
        common = total = 0
        unordered = False
        for want, act, order in _segments(v):
            if order == "any":
                unordered = True
                common += len(want) - len(multiset_diff(want, act)[0])
            elif want == act:
                common += len(want)
            elif (cells := lcs_cells(want, act)) > MAX_LCS_CELLS:
                return ctx.null(Warning.INVALID_DATA,
                                f"{len(want)} expected and {len(act)} called tools would need {cells:,} comparisons, "
                                f"over the {MAX_LCS_CELLS:,} this metric makes per trace")
            else:
                common += lcs_length(want, act)
            total += max(len(want), len(act))
        if total == 0:
            return ctx.result(1.0, "no tools expected and none called")
        how = "in any order" if unordered else "in order"
        return ctx.result(common / total, f"{common} of {total} calls match {how}",
                            details={"common": common, "length": total, "order_ignored": unordered})


@metric("parameter_quality", dimension="tool_calling", requires=("expected_tools",),
        summary="per expected call: equal values / union of keys; mean over expected calls x min(1, E/A)")
@dataclass(frozen=True, kw_only=True)
class ParameterQuality:
    """Were the right arguments passed? (UAEF semantics).

    Each expected call is matched to the best-scoring unused actual call of the same name; an
    unmatched expected call scores 0, expected ``arguments: null`` accepts any arguments.
    Values compare type-aware (see ``values_equal``: ``1 == 1.0`` but ``1 != "1"``). The mean
    over expected calls is scaled by E/A when more calls were made than expected. Differs from
    UAEF: the scale is min(1, E/A) (UAEF multiplies by E/A whenever a call stayed unmatched,
    which raises the score when fewer calls were made than expected), and a same-name call
    whose arguments all differ still counts as matched rather than as an extra call. With no
    calls expected and none made there are no arguments to judge (not_applicable); UAEF gives
    1.0 there, and so does assay.compat.uaef.
    """

    threshold: float = 0.7

    def score(self, ctx: MetricContext) -> MetricResult:
        v = _memo.view(ctx)
        expected, actual = v.tools()
        if expected is None:
            return ctx.null(Warning.MISSING_DATA, "no expected tool calls in the trace")
        if not expected:
            return ctx.null(Warning.NOT_APPLICABLE, "no tool calls were expected, so no arguments to check")
        done = _as_expected(expected, actual)
        if done == len(expected) == len(actual):
            # each expected call takes the first unused same-name call when its arguments match
            # fully, so this is what the matching finds: every call scores 1.0
            return ctx.result(1.0, _all_arguments(len(expected)),
                              details={"per_call": [1.0] * len(expected), "extra_call_scale": 1.0})
        matched = match_arguments(expected, actual, v.names()[1], done)
        per_call, notes = matched
        mean = sum(per_call) / len(per_call)
        scale = len(expected) / len(actual) if len(actual) > len(expected) else 1.0
        reason = f"mean argument match {mean:.2f} over {len(expected)} expected calls"
        if scale < 1.0:
            reason += f", scaled by {len(expected)}/{len(actual)} for extra calls"
        if notes:
            reason += "; " + "; ".join(notes)
        return ctx.result(mean * scale, reason, details={"per_call": per_call, "extra_call_scale": scale})


@lru_cache(maxsize=256)
def _all_matched(n: int) -> str:
    """tool_selection_accuracy's reason when all n calls match (made once per n, not per trace)."""
    return f"{n} matched of {n} expected and called"


@lru_cache(maxsize=256)
def _all_in_order(n: int) -> str:
    """tool_sequence_correctness's reason when all n calls come as expected."""
    return f"{n} of {n} calls match in order"


@lru_cache(maxsize=256)
def _all_arguments(n: int) -> str:
    """parameter_quality's reason when all n calls have the expected arguments."""
    return f"mean argument match 1.00 over {n} expected calls"


def match_arguments(expected: Sequence[Any], actual: Sequence[ToolCall], called: Sequence[str],
                    done: int = 0) -> tuple[list[float], list[str]]:
    """parameter_quality's matching: (score per expected call, notes).

    Each expected call takes the first unused same-name call with all its arguments (an index on the
    arguments finds it), else the best-scoring unused same-name call among those ``MATCH_CANDIDATES``
    bounds (the first of the best). ``done``: the first ``done`` calls were made as expected, in
    order (``_as_expected``): expected call i takes call i. Linear in the calls and arguments.
    """
    if len(actual) - done <= _FEW:
        few = _match_few(expected, actual, called, done)
        if few is not None:
            return few
    pools: dict[str, _Pool | None] = {}
    used = [True] * done + [False] * (len(actual) - done)
    per_call: list[float] = [1.0] * done
    notes: list[str] = []
    for e in expected[done:]:
        name, args = e.name, e.arguments
        pool = pools.get(name, _MISSING)
        if pool is _MISSING:
            idx = [i for i in range(done, len(called)) if called[i] == name]
            pool = pools[name] = _Pool(idx, actual) if idx else None
        best_i, best = (-1, -1.0) if pool is None else pool.take(args, actual, used)
        if best_i < 0:
            per_call.append(0.0)
            notes.append(f"{name}: not called")
            continue
        used[best_i] = True
        per_call.append(best)
        if best < 1.0:
            notes.append(f"{name}: {best:.2f} of arguments match")
    return per_call, notes


_FEW = 8
"""Calls left after the first ``done`` up to which ``match_arguments`` weighs every same-name call directly."""


def _match_few(expected: Sequence[Any], actual: Sequence[ToolCall], called: Sequence[str],
               done: int) -> tuple[list[float], list[str]] | None:
    """``match_arguments`` for a few calls (at most ``_FEW`` after ``done``, so fewer than ``MATCH_CANDIDATES``
    share a name): each expected call takes the first unused same-name call of the best ``key_score``,
    which is what the index finds there (a full match scores 1.0 and is the first exact match; a call
    sharing no value scores 0). None when an argument value has no exact form (``_plain``): the index
    tells such values apart from full matches, so they go through it."""
    used = [False] * len(actual)
    per_call: list[float] = [1.0] * done
    notes: list[str] = []
    for e in expected[done:]:
        name, args = e.name, e.arguments
        if args is not None and not _plain(args):
            return None
        best_i, best = -1, -1.0
        for i in range(done, len(actual)):
            if used[i] or called[i] != name:
                continue
            if args is None:
                best_i, best = i, 1.0
                break
            got = actual[i].arguments
            if not _plain(got):
                return None
            sc = key_score(args, got)
            if sc > best:
                best_i, best = i, sc
                if sc == 1.0:
                    break
        if best_i < 0:
            per_call.append(0.0)
            notes.append(f"{name}: not called")
            continue
        used[best_i] = True
        per_call.append(best)
        if best < 1.0:
            notes.append(f"{name}: {best:.2f} of arguments match")
    return per_call, notes


def _plain(args: Mapping[str, Any]) -> bool:
    """Whether every value of an argument dict has an exact form in ``_canon`` (JSON's types, no NaN)."""
    if type(args) is not dict:
        return False
    for v in args.values():
        t = type(v)
        if t is str or t is int or t is bool or v is None or (t is float and v == v):
            continue
        if t is dict:
            if not _plain(v):
                return False
        elif t is list:
            if not _plain(dict(enumerate(v))):
                return False
        else:
            return False
    return True


_MISSING: Any = object()
_BOOL, _LIST, _DICT = object(), object(), object()


class _Opaque:
    """The form of a value that ``values_equal`` does not compare by parts (a NaN, a tuple or other
    non-list sequence, a mapping that is not a dict, another type): equal to nothing through the
    index, so calls holding one are weighed by ``key_score`` itself."""

    __slots__ = ()


def _form(args: Mapping[str, Any]) -> tuple[list[tuple[str, Any]], bool]:
    """(the (key, value form) items of an argument dict, whether every value has an exact form)."""
    opaque: list[bool] = []
    items = [(k, _canon(x, opaque)) for k, x in args.items()]
    return items, not opaque


def _canon(v: Any, opaque: list[bool]) -> Any:
    """A hashable form of an argument value, equal for two values exactly when ``values_equal`` is true.

    ``1`` and ``1.0`` share a form (as in Python); a bool is tagged apart from 0 and 1; lists compare
    element-wise, dicts by items. Values compared otherwise get an ``_Opaque`` form (noted in ``opaque``).
    """
    t = type(v)
    if t is str or t is int or v is None:
        return v
    if t is float and v == v:
        return v
    if t is bool:
        return (_BOOL, v)
    if t is dict:
        return (_DICT, frozenset([(k, _canon(x, opaque)) for k, x in v.items()]))
    if t is list:
        return (_LIST, tuple([_canon(x, opaque) for x in v]))
    opaque.append(True)
    return _Opaque()


class _Pool:
    """The calls of one tool name, indexed for parameter_quality's matching.

    ``exact``: full argument form -> positions; ``pairs``: (key, value form) -> positions; both in call
    order, each with a head that skips used positions. ``nxt`` finds the first unused call in order
    (a disjoint-set 'next free' array over the pool, so skipping used calls costs amortised O(1)).
    """

    __slots__ = ("idx", "pos", "nxt", "exact", "pairs", "odd", "heads")

    def __init__(self, idx: list[int], actual: Sequence[ToolCall]) -> None:
        self.idx = idx
        self.pos = {i: p for p, i in enumerate(idx)}
        self.nxt = list(range(len(idx) + 1))
        exact: dict[Any, list[int]] = {}
        pairs: dict[Any, list[int]] = {}
        self.odd: list[int] = []  # calls with a value of no exact form: weighed whatever their values
        for i in idx:
            items, clean = _form(actual[i].arguments)
            if not clean:
                self.odd.append(i)
            for item in items:
                if item in pairs:
                    pairs[item].append(i)
                else:
                    pairs[item] = [i]
            key = frozenset(items)
            if key in exact:
                exact[key].append(i)
            else:
                exact[key] = [i]
        self.exact, self.pairs = exact, pairs
        self.heads: dict[int, int] = {}  # id(list) -> its first position not known to be used

    def _free(self, p: int) -> int:
        """The first unused position at or after ``p`` (len(idx) if none)."""
        nxt = self.nxt
        root = p
        while nxt[root] != root:
            root = nxt[root]
        while nxt[p] != root:  # path compression
            nxt[p], p = root, nxt[p]
        return root

    def _unused(self, lst: list[int], used: list[bool], limit: int) -> list[int]:
        """Up to ``limit`` unused calls of ``lst`` from its head, looking at most 4 x ``limit`` entries."""
        h = self.heads.get(id(lst), 0)
        while h < len(lst) and used[lst[h]]:
            h += 1
        self.heads[id(lst)] = h
        out: list[int] = []
        for j in range(h, min(len(lst), h + 4 * limit)):
            if not used[lst[j]]:
                out.append(lst[j])
                if len(out) == limit:
                    break
        return out

    def take(self, args: dict[str, Any] | None, actual: Sequence[ToolCall], used: list[bool]) -> tuple[int, float]:
        """(call index, score) for one expected call, marking the call used; (-1, -1.0) when none is left."""
        first = self._free(0)
        if first == len(self.idx):
            return -1, -1.0
        if args is None:
            return self._use(self.idx[first]), 1.0
        items, clean = _form(args)
        same = self.exact.get(frozenset(items))
        if same is not None:
            hit = self._unused(same, used, 1)
            if hit:
                return self._use(hit[0]), 1.0
        seen: set[int] = set()  # the calls sharing a value with it: the only ones scoring above 0
        for item in items:
            lst = self.pairs.get(item)
            if lst is not None:
                seen.update(self._unused(lst, used, MATCH_CANDIDATES))
        if self.odd:
            seen.update(self._unused(self.odd, used, MATCH_CANDIDATES))
        if not clean:  # a value of no exact form: weigh the first unused calls too
            p = first
            for _ in range(MATCH_CANDIDATES):
                if p == len(self.idx):
                    break
                seen.add(self.idx[p])
                p = self._free(p + 1)
        if not seen:  # every unused call scores 0 (an exact match of no arguments was found above)
            i = self.idx[first]
            return self._use(i), key_score(args, actual[i].arguments)
        seen.add(self.idx[first])  # the first of the calls scoring 0, should no other score more
        best_i, best = -1, -1.0
        for i in sorted(seen):
            sc = key_score(args, actual[i].arguments)
            if sc > best:
                best_i, best = i, sc
        return self._use(best_i), best

    def _use(self, i: int) -> int:
        p = self.pos[i]
        self.nxt[p] = p + 1
        return i


def _as_expected(expected: Sequence[Any], actual: Sequence[ToolCall]) -> int:
    """How many calls, from the first, have the expected call's name and all its arguments (or any, when None).

    ``key_score(args, actual) == 1.0`` without counting: a full match implies Python equality of the two
    dicts (``values_equal`` implies ``==`` but for a tuple against a list, or a Mapping that is not a dict:
    those go to ``key_score``), and then what is left to check is that no value differs in type.
    """
    n = 0
    for e, a in zip(expected, actual):
        if e.name != a.name:
            return n
        args = e.arguments
        if args is not None:
            got = a.arguments
            if args != got:
                if key_score(args, got) != 1.0:
                    return n
            else:
                for k, v in args.items():
                    w = got[k]
                    tv = type(v)
                    if tv is type(w) and tv in _SCALARS:
                        if tv is float and v != w:  # one NaN object: equal as a dict value, never as an argument
                            return n
                    elif not values_equal(v, w):
                        return n
        n += 1
    return n


_MCP_PREFIX = re.compile(r"mcp(?:__|[_.:/])", re.IGNORECASE)
_SNAKE = re.compile(r"[a-z][a-z0-9_]*\Z")
_SERVER = re.compile(r"[a-z0-9][a-z0-9_.\-]*\Z")
_NAME_PARTS = re.compile(r"__|(?<=^mcp)[_.:/]", re.IGNORECASE)


def is_mcp_tool(name: str, declared: Any = None) -> bool:
    """Whether a call is to an MCP tool.

    MCP clients namespace tools by server: ``mcp__server__tool`` (Claude Code),
    ``mcp_server_tool`` / ``mcp.server.tool`` or ``server__tool``. So a name counts as MCP when
    it starts with ``mcp`` plus a separator, contains ``__``, or is listed in ``declared``
    (``trace.metadata["mcp_tools"]``).
    """
    if declared and name in declared:
        return True
    return _mcp_name(name)


@lru_cache(maxsize=4096)
def _mcp_name(name: str) -> bool:
    return "__" in name or _MCP_PREFIX.match(name) is not None


@lru_cache(maxsize=4096)
def _name_compliant(name: str) -> bool:
    parts = [p for p in _NAME_PARTS.split(name, maxsplit=2) if p]
    tool = parts[-1] if parts else name
    return name == name.lower() and bool(_SNAKE.match(tool)) and all(_SERVER.match(s) for s in parts[:-1])


def _iso(ts: str) -> bool:
    try:
        datetime.fromisoformat(ts)
    except ValueError:
        return False
    return True


def mcp_violations(call: ToolCall) -> list[str]:
    """What makes one MCP call non-compliant (empty when compliant)."""
    out = []
    if not _name_compliant(call.name):
        out.append(f"name {call.name!r} is not lowercase snake_case")
    if type(call.arguments) is not dict or not all(type(k) is str for k in call.arguments):
        out.append("arguments are not an object")
    if not call.timestamp:
        out.append("no timestamp")
    else:
        try:
            datetime.fromisoformat(call.timestamp)
        except ValueError:
            out.append(f"timestamp {call.timestamp!r} is not ISO 8601")
    return out


@metric("mcp_compliance", dimension="tool_calling", requires=("tool_calls",),
        summary="compliant MCP calls / MCP calls (lowercase snake name, object arguments, ISO timestamp)")
@dataclass(frozen=True, kw_only=True)
class MCPCompliance:
    """Do MCP tool calls follow the conventions? (UAEF). Needs no ground truth.

    Only MCP calls are judged (see ``is_mcp_tool``); a trace without any scores null
    (not_applicable). UAEF, once it sees 'mcp' anywhere in a trace, judges every tool call,
    so a plain non-MCP helper with a camelCase name fails it. ``all_mcp=true`` treats every
    call as an MCP call. A call complies when its name (each server segment and the tool) is
    lowercase snake_case, its arguments are an object and it carries an ISO 8601 timestamp
    (UAEF only checks that a timestamp is present and that ``name.islower()``).
    """

    threshold: float = 0.7
    all_mcp: bool = False
    """Judge every tool call, not only those recognised as MCP."""

    def score(self, ctx: MetricContext) -> MetricResult:
        declared = ctx.trace.metadata.get("mcp_tools") if ctx.trace.metadata else None
        actual = _memo.view(ctx).tools()[1]
        if self.all_mcp:
            calls = actual
        else:
            calls = [c for c in actual if _mcp_name(c.name) or (declared and c.name in declared)]
        if not calls:
            return ctx.null(Warning.NOT_APPLICABLE, "no MCP tool calls in the trace")
        problems = {}
        for i, c in enumerate(calls):
            if _name_compliant(c.name) and type(c.arguments) is dict and c.timestamp and _iso(c.timestamp):
                continue  # the common case, without building a list of violations
            v = mcp_violations(c)
            if v:
                problems[f"{i}:{c.name}"] = v
        ok = len(calls) - len(problems)
        reason = f"{ok} of {len(calls)} MCP calls compliant"
        evidence = [f"{k.split(':', 1)[1]}: {'; '.join(v)}" for k, v in problems.items()]
        return ctx.result(ok / len(calls), reason, evidence, details={"violations": problems})
