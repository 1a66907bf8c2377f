"""Report size bounds, the tool-call alignment, and evidence de-duplication (no browser needed)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from report_data import run_with_traces, write_jsonl

from assay.metrics import MetricContext, metric
from assay.model import ExpectedToolCall, ToolCall
from assay.report import render_report
from assay.report._conversation import MAX_BLOCK
from assay.report._diff import diff_calls, summary


@metric("repeats_quote", dimension="response_quality", register=False)
@dataclass(frozen=True, kw_only=True)
class RepeatsQuote:
    """Cites the same sentence three times (as judges do), and fails traces whose id says so."""

    threshold: float = 0.5

    def score(self, ctx: MetricContext) -> Any:
        out = ctx.trace.turns[-1].output or ""
        return ctx.result(0.0 if "bad" in ctx.trace.id else 1.0, reason="because", evidence=[out, out + " ", out])


def _calls(*names: str, **args: Any) -> list[Any]:
    return [ToolCall(name=n, arguments=args.get(n, {})) for n in names]


def _exp(*names: str, **args: Any) -> list[Any]:
    return [ExpectedToolCall(name=n, arguments=args.get(n)) for n in names]


@pytest.mark.parametrize(("expected", "actual", "order", "kinds"), [
    (_exp("a", "b", "c"), _calls("a", "c"), "strict", ["match", "missing", "match"]),
    (_exp("a", "b"), _calls("x", "a", "b", "y"), "strict", ["extra", "match", "match", "extra"]),
    (_exp("a", "b"), _calls("b", "a"), "strict", ["moved", "match"]),
    (_exp("a", "b"), _calls("b", "a"), "any", ["match", "match"]),
    (_exp(), _calls("a"), "strict", ["extra"]),
    (_exp("a"), [], "strict", ["missing"]),
], ids=["missing-middle", "extras-around", "swapped-strict", "swapped-any", "nothing-expected", "nothing-called"])
def test_diff_alignment(expected, actual, order, kinds):
    assert [r.kind for r in diff_calls(expected, actual, order)] == kinds


def test_argument_values_compare_type_aware():
    rows = diff_calls(_exp("pay", pay={"amount": 49.9, "n": 2, "why": "late"}),
                      _calls("pay", pay={"amount": "49.90", "n": 2.0, "extra": True}))
    assert [(k, s) for k, s, _, _ in rows[0].args] == [("amount", "differs"), ("n", "same"), ("why", "missing"),
                                                       ("extra", "extra")]
    assert summary(rows) == ['pay.amount: expected 49.9, got "49.90"', "pay.why missing", "pay.extra not expected"]
    assert not diff_calls(_exp("pay"), _calls("pay", pay={"x": 1}))[0].bad  # arguments None: any arguments


def _trace(i: int, output: str, *, bad: bool = False) -> dict[str, Any]:
    return {"id": f"{'bad' if bad else 'ok'}-{i}", "turns": [{"input": "q", "output": output}]}


def test_long_fields_are_cut_with_their_full_length(tmp_path):
    huge = "x" * (MAX_BLOCK * 5)
    path = write_jsonl(tmp_path / "t.jsonl", [{**_trace(0, huge), "metadata": {"blob": huge}}])
    result, traces = run_with_traces(path, [RepeatsQuote()])
    page = render_report(result, traces=traces)
    assert page.count(f"cut: {MAX_BLOCK:,} of {len(huge):,} characters shown") == 1  # the output
    assert f"of {len(json.dumps({'blob': huge}, indent=2)):,} characters shown" in page  # metadata
    assert len(page) < 5 * MAX_BLOCK  # the quotes of it (three) are cut too


def test_trace_views_are_capped_failed_first_and_the_page_grows_with_what_is_shown(tmp_path):
    rows = [_trace(i, "fine answer " * 50, bad=i % 10 == 0) for i in range(200)]
    result, traces = run_with_traces(write_jsonl(tmp_path / "t.jsonl", rows), [RepeatsQuote()])
    small = render_report(result, traces=traces, max_views=20)
    assert small.count('<details id="trace-') == 20
    failed = [i + 1 for i, t in enumerate(result.traces) if t.passed is False]
    assert len(failed) == 20 and all(f'<details id="trace-{i}"' in small for i in failed)
    assert "20 of 200 traces have a view here" in small
    big = render_report(result, traces=traces, max_views=200)
    assert big.count('<details id="trace-') == 200 and len(big) > 3 * len(small)


def test_repeated_evidence_is_listed_once(tmp_path):
    result, traces = run_with_traces(write_jsonl(tmp_path / "t.jsonl", [_trace(0, "The refund is on its way.")]),
                                     [RepeatsQuote()])
    view = render_report(result, traces=traces).split('id="trace-1"', 1)[1]
    evidence = view.split('<ul class="evidence">', 1)[1].split("</ul>", 1)[0]
    assert evidence.count("<li>") == 1
