"""pytest integration: ``assert_passes``, ``assert_not_worse``, the ``assay_evaluate`` fixture and the ``assay`` marker.

Registered through the ``pytest11`` entry point. Configure the judge once per session with
``--assay-judge MODEL`` (or the ``assay_judge`` ini option, or ASSAY_JUDGE), per module, class or
test with the marker, and call the fixture::

    pytestmark = pytest.mark.assay(metrics=["tool_selection_accuracy"])

    @pytest.mark.assay(judge="openai:gpt-4o-mini", metrics=["answer_relevance"], thresholds={...})
    def test_support_agent(assay_evaluate):
        assay_evaluate(trace)              # or a list of traces, dicts or a file path

A failure names the trace, metric, score, threshold, the judge's reason and its evidence; a
configuration mistake (a judge metric without a judge) is one line, with the pytest flag to fix it.
At the end of the session a summary lists each metric's pass rate with the judge calls, tokens and
cost; ``--assay-report PATH.html`` also writes the HTML report of every trace evaluated.

Works with pytest-xdist: judges are built per worker process (session fixtures run once per
worker) and the plugin keeps no module-level state, so workers share nothing; each worker hands its
tallies (and, for the report, its results) to the controller when it finishes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

MARKER = "assay"
_MARKER_KEYS = ("judge", "metrics", "weights", "thresholds", "input_format", "strict", "allow_null")
NO_JUDGE_PYTEST = ("no judge configured: pass --assay-judge MODEL (or set assay_judge in the ini file, or "
                   "ASSAY_JUDGE), or give @pytest.mark.assay(judge=...)")
_REPORT_VIEWS = 300
"""Input traces kept for the session's HTML report (the report shows this many views at most)."""


def _as_traces(traces: Any) -> Any:
    if isinstance(traces, Mapping) or hasattr(traces, "turns"):
        return [traces]
    return traces


def _score(x: float | None, digits: int = 3) -> str:
    return "null" if x is None else f"{x:.{digits}f}"


def _below(score: float | None, threshold: float | None) -> str:
    """"0.500 < threshold 0.70"; more digits where those would not differ (0.6999 < threshold 0.700)."""
    if score is None or threshold is None:
        return f"{_score(score)} < threshold {_score(threshold, 2)}"
    from assay.model._status import apart  # here: the plugin is loaded by every pytest run

    a, b = apart(score, threshold, 3, 2)
    return f"{a} < threshold {b}"


def failures(result: Any, *, allow_null: bool = True) -> list[str]:
    """One message per failed, errored (or, with ``allow_null=False``, unscored) metric result, and
    per failed dimension."""
    problems = [f"input {issue}" for issue in result.input_issues]
    for tr in result.traces:
        where = f"{tr.id}" + (f" ({tr.source})" if tr.source and not tr.source.startswith("<input>") else "")
        if tr.outcome == "failed":  # a failed trial fails as itself, whatever its metrics say
            problems.append(f"{where}: {tr.outcome_reason or 'the agent run failed'}")
        elif tr.outcome == "excluded":
            problems.append(f"{where}: excluded, a harness fault ({tr.outcome_reason})")
        for name, r in tr.metrics.items():
            if r.details and r.details.get("failed_trial"):  # passed only by its metric: said above
                continue
            if r.passed is False:
                head = f"{where}: {name} scored {_below(r.score, r.threshold)}"
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
        shown = {result.summary[n].dimension for n, r in tr.metrics.items() if r.passed is False and n in result.summary}
        for name, d in tr.dimensions.items():  # a dimension-only failure: the CLI fails it too
            if d.passed is False and name not in shown:
                problems.append(f"{where}: dimension {name} scored {_below(d.score, d.threshold)}"
                                f" (set thresholds={{{name!r}: ...}} to change it)")
    return problems


def assert_passes(traces: Any, metrics: Iterable[Any] | None = None, *, judge: Any = None,
                  allow_null: bool = True, **kwargs: Any) -> Any:
    """Evaluate ``traces`` (a trace, dict, list or path) and raise AssertionError on any failed metric.

    Returns the RunResult when everything passed. ``allow_null=False`` also fails metrics that
    produced no score (missing data, not evaluated); errored results always fail, and so does a
    run that is not ``passed`` by ``RunResult.status`` (what ``assay run`` exits 0 for).
    """
    __tracebackhide__ = True
    result = _evaluate(traces, metrics, judge=judge, **kwargs)
    return _check(result, allow_null)


def assert_not_worse(baseline: Any, candidate: Any, *, metric: str = "overall", sequence: str = "default",
                     store: Any = None, alpha: float = 0.05, seed: int = 0) -> dict[str, Any]:
    """One look of ``assay compare --sequential``: raise AssertionError when *candidate* is worse.

    *baseline* and *candidate* are RunResults, results files or run ids. The look continues the
    anytime-valid sequence kept under *sequence* in the run store (*store*: a path or RunStore;
    default the user's store) and saves it, so a test that runs after every batch of tasks keeps
    its false-alarm rate at *alpha* however often it runs. Fails only on "A better" (the baseline
    is better); returns the look (``decision`` "continue" or "B better", ``cs_low``/``cs_high``).
    """
    __tracebackhide__ = True
    from .analysis._compare import sequential_compare
    from .store import RunStore, default_store_path, load_run, load_sequence, save_sequence

    if store is None:
        store = default_store_path()
        if store is None:
            raise pytest.UsageError("assert_not_worse keeps its state in the run store, which is off "
                                    "(ASSAY_STORE=off): pass store=PATH")
    store = store if isinstance(store, RunStore) else RunStore(store)
    a = baseline if hasattr(baseline, "traces") else load_run(baseline, store)
    b = candidate if hasattr(candidate, "traces") else load_run(candidate, store)
    look = sequential_compare(a, b, load_sequence(store, sequence), metric=metric, alpha=alpha, seed=seed)
    save_sequence(store, sequence, look["state"])
    if look["decision"] == "A better":
        raise AssertionError(f"{metric}: the candidate is worse than the baseline (mean difference "
                             f"{look['mean_difference']:+.3f}, {1 - alpha:.0%} confidence sequence "
                             f"[{look['cs_low']:+.3f}, {look['cs_high']:+.3f}] over {look['n_tasks']} tasks, "
                             f"decided after {look['decided_at']})")
    return look


def _evaluate(traces: Any, metrics: Iterable[Any] | None, *, judge: Any = None,
              inputs: dict[str, Any] | None = None, session: Any = None, **kwargs: Any) -> Any:
    """Evaluate, turning a configuration error into one failure line (no traceback into assay's internals)."""
    __tracebackhide__ = True
    from .engine import NO_JUDGE, Evaluation
    from .engine._spec import JudgeSpec
    from .errors import ConfigError

    try:
        from .engine._sinks import Each, run_into
        from .session import Session
        described = {k: kwargs.pop(k) for k in ("weights", "thresholds", "repeats", "input_format", "strict")
                     if k in kwargs}
        session = session or Session()
        spec = session.run_spec(metrics=metrics, judge=JudgeSpec.of(judge) if judge is not None else None,
                                **{k: v for k, v in described.items() if v is not None})
        evaluation = Evaluation.from_spec(spec, attach_traces=inputs is not None, **kwargs)
        sinks = []
        if inputs is not None:  # results come back without their inputs; the sink sees them
            def keep(item: Any) -> None:
                if getattr(item, "trace", None) is not None:
                    inputs[item.source or item.id] = item.trace
            sinks.append(Each(keep))
        return run_into(evaluation, _as_traces(traces), spec, sinks)
    except ConfigError as exc:
        message = f"assay: {str(exc).replace(NO_JUDGE, NO_JUDGE_PYTEST)}"
    pytest.fail(message, pytrace=False)  # outside the except: no chained traceback through assay's internals


def _check(result: Any, allow_null: bool) -> Any:
    __tracebackhide__ = True
    from .model._status import run_status

    problems = failures(result, allow_null=allow_null)
    status, why = run_status(result)
    if status != "passed" and not problems:  # the CLI's verdict: e.g. nothing was scored at all
        problems = [f"{status.replace('_', ' ')}: {why}"]
    if problems:
        n = len(problems)
        raise AssertionError(f"assay: {n} metric result{'s' if n != 1 else ''} failed\n  " + "\n  ".join(problems))
    return result


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("assay")
    group.addoption("--assay-judge", default=None,
                    help="Judge model for assay metrics (default: ini assay_judge, then $ASSAY_JUDGE).")
    group.addoption("--assay-report", default=None, metavar="PATH.html",
                    help="Write an HTML report of every trace the assay_evaluate fixture scored in this session.")
    group.addoption("--assay-config", default=None, metavar="PATH",
                    help="assay config file (default: ini assay_config, else the nearest assay.toml or pyproject.toml "
                         "with [tool.assay] from the rootdir): its plugins, [[criteria]], [judge] and metrics apply.")
    parser.addini("assay_judge", "Judge model for assay metrics, e.g. openai:gpt-4o-mini.", default="")
    parser.addini("assay_config", "assay config file (default: the nearest assay.toml from the rootdir).", default="")


class _Tally:
    """What the session's evaluations found: per-metric counts, judge usage, and (for a report) results."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self.evaluations = 0
        self.traces = 0
        self.metrics: dict[str, dict[str, Any]] = {}
        self.results: list[dict[str, Any]] = []
        self.inputs: dict[str, Any] = {}

    def add(self, nodeid: str, result: Any, inputs: Mapping[str, Any] | None = None) -> None:
        import msgspec

        self.evaluations += 1
        self.traces += len(result.traces)
        for name, s in result.summary.items():
            m = self.metrics.setdefault(name, {"dimension": s.dimension, "threshold": s.threshold, "n": 0,
                                               "n_passed": 0, "n_null": 0, "judge_calls": 0, "tokens": 0,
                                               "cost_usd": None})
            for key in ("n", "n_passed", "n_null", "judge_calls", "tokens"):
                m[key] += getattr(s, key)
            if s.cost_usd is not None:
                m["cost_usd"] = (m["cost_usd"] or 0.0) + s.cost_usd
        if not self.keep:
            return
        for i, t in enumerate(result.traces):
            key = f"{nodeid} [{i + 1}] {t.id}"  # unique across tests: the report links results to inputs by it
            trace = (inputs or {}).get(t.source or t.id)
            if trace is not None and len(self.inputs) < _REPORT_VIEWS:
                self.inputs[key] = trace.model_dump(mode="json", exclude_none=True)
            self.results.append(msgspec.structs.replace(t, source=key, trace=None).to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {"evaluations": self.evaluations, "traces": self.traces, "metrics": self.metrics,
                "results": self.results, "inputs": self.inputs}

    def merge(self, d: Mapping[str, Any]) -> None:
        self.evaluations += d.get("evaluations", 0)
        self.traces += d.get("traces", 0)
        for name, m in (d.get("metrics") or {}).items():
            mine = self.metrics.setdefault(name, {**m, **{k: 0 for k in ("n", "n_passed", "n_null", "judge_calls",
                                                                       "tokens")}, "cost_usd": None})
            for key in ("n", "n_passed", "n_null", "judge_calls", "tokens"):
                mine[key] += m.get(key, 0)
            if m.get("cost_usd") is not None:
                mine["cost_usd"] = (mine["cost_usd"] or 0.0) + m["cost_usd"]
        self.results += d.get("results") or []
        for k, v in (d.get("inputs") or {}).items():
            if len(self.inputs) < _REPORT_VIEWS:
                self.inputs[k] = v

    def run_result(self) -> Any:
        """The session as one RunResult (summaries recomputed from the trace results)."""
        from .engine._aggregate import SummaryBuilder
        from .model import RunResult, TraceResult

        traces = [TraceResult.from_dict(r) for r in self.results]
        builder = SummaryBuilder({n: m["dimension"] for n, m in self.metrics.items()},
                                 {n: m["threshold"] for n, m in self.metrics.items()})
        for t in traces:
            builder.add(t.metrics)
        n_passed = sum(t.passed is True for t in traces)
        n_failed = sum(t.passed is False for t in traces)
        run = {"run_id": "pytest session", "n_traces": len(traces), "n_passed": n_passed, "n_failed": n_failed,
               "n_input_issues": 0}
        return RunResult(traces, builder.finish(), run)


_TALLY = pytest.StashKey[_Tally]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "assay(judge=None, metrics=None, weights=None, thresholds=None, allow_null=True): "
                   "defaults for the assay_evaluate fixture in this test, class or module")
    config.stash[_TALLY] = _Tally(keep=bool(config.getoption("--assay-report", None)))


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None and _TALLY in session.config.stash:  # an xdist worker: hand over to the controller
        workeroutput["assay"] = session.config.stash[_TALLY].to_dict()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: add a finished worker's tallies."""
    data = getattr(node, "workeroutput", {}).get("assay")
    if data:
        node.config.stash[_TALLY].merge(data)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    tally = config.stash.get(_TALLY, None)
    if tally is None or not tally.evaluations or getattr(config, "workeroutput", None) is not None:
        return
    tr = terminalreporter
    tr.write_sep("=", f"assay: {tally.evaluations} evaluation(s), {tally.traces} trace(s)")
    width = max(len(n) for n in tally.metrics) if tally.metrics else 6
    calls = tokens = 0
    cost = None
    for name, m in sorted(tally.metrics.items()):
        rate = f"{m['n_passed'] / m['n']:6.1%}" if m["n"] else "     —"
        null = f"  {m['n_null']} without a score" if m["n_null"] else ""
        tr.write_line(f"{name:<{width}}  {rate}  {m['n_passed']}/{m['n']} passed{null}")
        calls += m["judge_calls"]
        tokens += m["tokens"]
        if m["cost_usd"] is not None:
            cost = (cost or 0.0) + m["cost_usd"]
    tr.write_line(f"judge calls {calls}, tokens {tokens:,}, cost " + ("—" if cost is None else f"${cost:.4f}"))
    path = config.getoption("--assay-report", None)
    if path:
        from .report import write_report

        write_report(path, tally.run_result(), traces=tally.inputs, title="assay report · pytest session")
        tr.write_line(f"assay report: {path}")


class _Judges:
    """The session's judges by spec, built on first use (one instance per xdist worker) with the config
    file's ``[judge]`` options."""

    def __init__(self, default_spec: str | None, session: Any = None) -> None:
        self.session = session
        configured = session.config.judge if session is not None else None
        self.default_spec = default_spec or (configured if isinstance(configured, str) else None)
        self._built: dict[str, Any] = {}

    def get(self, spec: Any = None) -> Any:
        spec = self.default_spec if spec is None else spec
        if spec is None or spec == "":
            return None
        if not isinstance(spec, str):
            return spec  # a judge object given in the marker
        if spec not in self._built:
            from .session import Session
            self._built[spec] = (self.session or Session()).judge(spec)
        return self._built[spec]


@pytest.fixture(scope="session")
def assay_session(pytestconfig: pytest.Config) -> Any:
    """The :class:`assay.session.Session` the fixtures start from: the config file read once, its plugins
    and ``[[criteria]]`` loaded (the same file ``assay run`` reads from the rootdir)."""
    from .errors import ConfigError
    from .session._session import Session

    path = pytestconfig.getoption("--assay-config", None) or pytestconfig.getini("assay_config") or None
    try:
        return Session.open(path, start=pytestconfig.rootpath)
    except ConfigError as exc:
        raise pytest.UsageError(f"assay: {exc}") from None


@pytest.fixture(scope="session")
def assay_judges(pytestconfig: pytest.Config, assay_session: Any) -> _Judges:
    """Judges built once per session (per worker under xdist), keyed by model spec."""
    spec = (pytestconfig.getoption("--assay-judge") or pytestconfig.getini("assay_judge")
            or os.environ.get("ASSAY_JUDGE") or None)
    return _Judges(spec, assay_session)


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
def assay_evaluate(request: pytest.FixtureRequest, assay_judges: _Judges, assay_session: Any) -> Any:
    """``assay_evaluate(traces, metrics=None, **kw)``: ``assert_passes`` with the marker's and session's settings."""
    defaults = marker_options(request.node)
    judge = assay_judges.get(defaults.pop("judge", None))

    tally = request.config.stash.get(_TALLY, None)

    def run(traces: Any, metrics: Iterable[Any] | None = None, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        opts = {**defaults, **kwargs}
        if metrics is not None:
            opts["metrics"] = metrics
        opts.setdefault("judge", judge)
        allow_null = opts.pop("allow_null", True)
        inputs: dict[str, Any] | None = {} if tally is not None and tally.keep else None
        result = _evaluate(traces, opts.pop("metrics", None), inputs=inputs, session=assay_session, **opts)
        if tally is not None:
            tally.add(request.node.nodeid, result, inputs)
        return _check(result, allow_null)

    return run
