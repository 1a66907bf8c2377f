"""The judge's closing line: readable reasons, and a cost that is never a made-up ``$0.0000``."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from assay.cli._render import table
from assay.cli._summary import judge_summary
from assay.model import RunResult

DEAD = {"model": "openai-compatible:m", "requests": 19, "calls": 19, "errors": 19, "input_tokens": 0,
        "output_tokens": 0, "cost_usd": 0.0, "unpriced_calls": 0,
        "error_reasons": {"openai-compatible m (HTTP 500): upstream exploded": 19}, "skipped_reasons": {}}


@pytest.mark.parametrize(("stats", "cost"), [
    ({}, "no cost counted (no call was answered)"),
    ({"errors": 0, "input_tokens": 900, "output_tokens": 100, "unpriced_calls": 19}, "cost unknown (no price for "
                                                                                     "openai-compatible:m)"),
    ({"errors": 0, "input_tokens": 900, "output_tokens": 100}, "$0 (a local server or a model priced at 0)"),
    ({"errors": 0, "input_tokens": 900, "output_tokens": 100, "cost_usd": 0.0123}, "$0.0123"),
    ({"errors": 0, "input_tokens": 9, "output_tokens": 1, "cost_usd": 0.000004}, "$4e-06"),
    ({"errors": 0, "calls": 0, "requests": 0}, "$0 (nothing sent)"),
], ids=["nothing-answered", "unpriced", "local", "priced", "tiny", "nothing-sent"])
def test_the_cost_says_what_is_known(stats, cost):
    line = judge_summary({"judge": {**DEAD, **stats}})
    assert line.endswith(", " + cost), line


def test_a_dead_judge_reads_as_one_sentence_not_dicts():
    result = RunResult(run={"n_traces": 3, "n_passed": 0, "n_failed": 0, "n_input_issues": 0, "judge": DEAD},
                       summary={}, traces=[])
    buf = io.StringIO()
    table(result, Console(file=buf, width=200, color_system=None))
    text = buf.getvalue()
    assert ("judge openai-compatible:m: 19 calls made, 0 cached, 0 retried, errored 19: openai-compatible m "
            "(HTTP 500): upstream exploded (19), 0 tokens, no cost counted (no call was answered)") in text
    assert "{" not in text and "error_reasons" not in text and "skipped_reasons" not in text


@pytest.mark.parametrize(("score", "threshold", "shown"), [
    (0.5, 0.7, "0.50<0.70"), (0.6999, 0.7, "0.6999<0.7000"), (2 / 3, 0.667, "0.6667<0.6670"),
    (0.69999999, 0.7, "0.69999999<0.7"), (None, 0.7, "—<0.70")])
def test_a_failed_score_never_reads_as_equal_to_its_threshold(score, threshold, shown):
    from assay.cli._render import _below

    assert _below(score, threshold) == shown
