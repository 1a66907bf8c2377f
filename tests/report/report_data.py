"""Runs to report on: the example data, and a hostile one whose every text field is an attack."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.engine import Evaluation
from assay.importers import read_traces
from assay.metrics import MetricContext, metric
from assay.model import RunResult

EXAMPLES = Path(__file__).parents[2] / "examples" / "traces.jsonl"

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'


@metric("quotes_output", dimension="response_quality", register=False)
@dataclass(frozen=True, kw_only=True)
class QuotesOutput:
    """Cites the final output as evidence, echoes it in the reason, fails any output with markup."""

    threshold: float = 0.5

    def score(self, ctx: MetricContext) -> Any:
        out = ctx.trace.turns[-1].output or ""
        return ctx.result(0.0 if "<" in out else 1.0, reason=f"the answer was {out!s} {IMG}",
                          evidence=[out[:60]] if out else [])


@metric("always_raises", dimension="custom", register=False)
@dataclass(frozen=True, kw_only=True)
class AlwaysRaises:
    threshold: float = 0.5

    def score(self, ctx: MetricContext) -> Any:
        raise ValueError(f"boom {SCRIPT}")


def hostile_traces() -> list[dict[str, Any]]:
    return [
        {"id": "xss-script", "system": "</style><script>window.__pwned=1</script>",
         "turns": [{"input": f"say {SCRIPT}", "output": SCRIPT,
                    "tool_calls": [{"name": "</code><script>window.__pwned=1</script>",
                                    "arguments": {"q": IMG}, "result": {"html": SCRIPT}}],
                    "context": [f"passage {IMG}"], "reasoning": f"thinking {SCRIPT}"}],
         "expected": {"tool_calls": [{"name": "search"}]}, "metadata": {IMG: SCRIPT}},
        {"id": 'xss-img"><img src=x onerror=window.__pwned=1>', "task_id": f"task {IMG}",
         "turns": [{"input": "hello", "output": IMG}], "expected": {"tool_calls": []}},
        {"id": "plain", "turns": [{"input": "What is the warranty?", "output": "Two years, parts and labour."}],
         "expected": {"tool_calls": []}},
    ]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def run_with_traces(path: Path, metrics: list[Any]) -> tuple[RunResult, dict[str, Any]]:
    result = Evaluation(metrics).run(str(path))
    traces = {loc: t for loc, t in read_traces(str(path)) if not hasattr(t, "message")}
    return result, traces


def hostile_run(tmp_path: Path) -> tuple[RunResult, dict[str, Any]]:
    path = write_jsonl(tmp_path / "hostile.jsonl", hostile_traces())
    return run_with_traces(path, [QuotesOutput(), AlwaysRaises(), "tool_selection_accuracy"])


PASS_K = {"family": "per_task_trials", "mode": "bayesian_exact", "label": f"trace passed {SCRIPT}",
          "ci_level": 0.95, "n_tasks": 4, "k": [1, 2, 3, 4, 5],
          "pass_at_k": [0.6, 0.8, 0.9, 0.95, 0.97], "pass_pow_k": [0.6, 0.4, 0.25, 0.16, 0.1],
          "pass_at_k_ci_low": [0.4, 0.6, 0.75, 0.85, 0.9], "pass_at_k_ci_high": [0.8, 0.9, 0.97, 0.99, 0.995],
          "pass_pow_k_ci_low": [0.4, 0.2, 0.1, 0.05, 0.02], "pass_pow_k_ci_high": [0.8, 0.6, 0.45, 0.35, 0.3]}

COMPARISON = {"baseline": "run-a", "candidate": "run-b", "alpha": 0.05, "correction": "holm",
              "metrics": {"tool_selection_accuracy": {"delta": -0.12, "ci_low": -0.2, "ci_high": -0.04,
                                                      "p_value": 0.004, "p_adjusted": 0.008, "significant": True,
                                                      "regression": True},
                          f"m{SCRIPT}": {"delta": 0.01, "ci_low": -0.05, "ci_high": 0.07, "p_value": 0.7,
                                         "p_adjusted": 0.9, "significant": False, "regression": False}}}


def wait_until(page, expression: str, timeout_s: float = 10.0) -> None:
    """Poll ``expression`` until truthy. (``page.wait_for_function`` polls through eval, which the
    report's CSP forbids; ``evaluate`` goes through the DevTools protocol and is not blocked.)"""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        page.wait_for_timeout(25)
