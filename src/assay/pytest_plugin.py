"""pytest integration: ``assert_passes``, the ``assay_evaluate`` fixture and the ``assay`` marker.

Registered through the ``pytest11`` entry point. Configure the judge once per session with
``--assay-judge MODEL`` (or the ``assay_judge`` ini option, or ASSAY_JUDGE), per module, class or
test with the marker, and call the fixture::

    pytestmark = pytest.mark.assay(metrics=["tool_selection_accuracy"])

    @pytest.mark.assay(judge="openai:gpt-4o-mini", metrics=["answer_relevance"], thresholds={...})
    def test_support_agent(assay_evaluate):
        assay_evaluate(trace)              # or a list of traces, dicts or a file path

A failure names the trace, metric, score, threshold, the judge's reason and its evidence.

Works with pytest-xdist: judges are built per worker process (session fixtures run once per
worker) and the plugin keeps no module-level state, so workers share nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

MARKER = "assay"
_MARKER_KEYS = ("judge", "metrics", "weights", "thresholds", "input_format", "strict", "allow_null")


def _as_traces(traces: Any) -> Any:
    if isinstance(traces, Mapping) or hasattr(traces, "turns"):
        return [traces]
    return traces


def _score(x: float | None, digits: int = 3) -> str:
    return "null" if x is None else f"{x:.{digits}f}"


def failures(result: Any, *, allow_null: bool = True) -> list[str]:
    """One message per failed, errored (or, with ``allow_null=False``, unscored) metric result."""
    problems = [f"input {issue}" for issue in result.input_issues]
    for tr in result.traces:
        where = f"{tr.id}" + (f" ({tr.source})" if tr.source and not tr.source.startswith("<input>") else "")
        for name, r in tr.metrics.items():
            if r.passed is False:
                head = f"{where}: {name} scored {_score(r.score)} < threshold {_score(r.threshold, 2)}"
            elif r.errored:
                head = f"{where}: {name} errored ({r.warning})"
            elif r.score is None and not allow_null:
                head = f"{where}: {name} has no score ({r.warning})"
            else:
                continue
            lines = [head]
            if r.reason:
                lines.append(f"    reason: {r.reason}")
            lines += [f"    evidence: {q!r}" for q in r.evidence[:5]]
            problems.append("\n".join(lines))
    return problems


def assert_passes(traces: Any, metrics: Iterable[Any] | None = None, *, judge: Any = None,
                  allow_null: bool = True, **kwargs: Any) -> Any:
    """Evaluate ``traces`` (a trace, dict, list or path) and raise AssertionError on any failed metric.

    Returns the RunResult when everything passed. ``allow_null=False`` also fails metrics that
    produced no score (missing data, not evaluated); errored results always fail.
    """
    __tracebackhide__ = True
    from .engine import evaluate

    result = evaluate(_as_traces(traces), metrics, judge=judge, **kwargs)
    problems = failures(result, allow_null=allow_null)
    if problems:
        n = len(problems)
        raise AssertionError(f"assay: {n} metric result{'s' if n != 1 else ''} failed\n  " + "\n  ".join(problems))
    return result


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("assay")
    group.addoption("--assay-judge", default=None,
                    help="Judge model for assay metrics (default: ini assay_judge, then $ASSAY_JUDGE).")
    parser.addini("assay_judge", "Judge model for assay metrics, e.g. openai:gpt-4o-mini.", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "assay(judge=None, metrics=None, weights=None, thresholds=None, allow_null=True): "
                   "defaults for the assay_evaluate fixture in this test, class or module")


class _Judges:
    """The session's judges by spec, built on first use (one instance per xdist worker)."""

    def __init__(self, default_spec: str | None) -> None:
        self.default_spec = default_spec
        self._built: dict[str, Any] = {}

    def get(self, spec: Any = None) -> Any:
        spec = self.default_spec if spec is None else spec
        if spec is None or spec == "":
            return None
        if not isinstance(spec, str):
            return spec  # a judge object given in the marker
        if spec not in self._built:
            from .judge import make_judge
            self._built[spec] = make_judge(spec)
        return self._built[spec]


@pytest.fixture(scope="session")
def assay_judges(pytestconfig: pytest.Config) -> _Judges:
    """Judges built once per session (per worker under xdist), keyed by model spec."""
    spec = (pytestconfig.getoption("--assay-judge") or pytestconfig.getini("assay_judge")
            or os.environ.get("ASSAY_JUDGE") or None)
    return _Judges(spec)


@pytest.fixture(scope="session")
def assay_judge(assay_judges: _Judges) -> Any:
    """The session's default judge (None when none is configured)."""
    return assay_judges.get()


def marker_options(node: pytest.Item) -> dict[str, Any]:
    """The ``assay`` marker options that apply to ``node``; closer markers override farther ones."""
    options: dict[str, Any] = {}
    for mark in reversed(list(node.iter_markers(MARKER))):  # iter_markers yields the closest first
        unknown = set(mark.kwargs) - set(_MARKER_KEYS)
        if unknown:
            raise pytest.UsageError(f"@pytest.mark.assay: unknown option(s) {sorted(unknown)}; "
                                    f"valid: {', '.join(_MARKER_KEYS)}")
        if mark.args:
            options["metrics"] = list(mark.args[0]) if not isinstance(mark.args[0], str) else [mark.args[0]]
        options.update(mark.kwargs)
    return options


@pytest.fixture()
def assay_evaluate(request: pytest.FixtureRequest, assay_judges: _Judges) -> Any:
    """``assay_evaluate(traces, metrics=None, **kw)``: ``assert_passes`` with the marker's and session's settings."""
    defaults = marker_options(request.node)
    judge = assay_judges.get(defaults.pop("judge", None))

    def run(traces: Any, metrics: Iterable[Any] | None = None, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        opts = {**defaults, **kwargs}
        if metrics is not None:
            opts["metrics"] = metrics
        opts.setdefault("judge", judge)
        return assert_passes(traces, opts.pop("metrics", None), **opts)

    return run
