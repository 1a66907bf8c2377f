"""One runner feeds every sink: begin, each result in order, finish - or abort when the run does not finish."""

from __future__ import annotations

import threading

import pytest

from assay.engine import Evaluation
from assay.engine._sinks import INTERRUPTED, Sink, run_into
from assay.engine._spec import RunSpec

TRACES = [{"id": f"t{i}", "turns": [{"input": "q", "output": "a" if i % 2 else "b"}]} for i in range(6)]
SPEC = RunSpec(metrics=['contains:values=["a"]'], name="nightly", tags={"team": "x"})


class Log(Sink):
    def __init__(self, name: str, log: list, fail_at_finish: bool = False) -> None:
        self.name, self.log, self.fail = name, log, fail_at_finish

    def begin(self, spec):
        self.log.append((self.name, "begin", spec.name))

    def add(self, item):
        self.log.append((self.name, "add", item.id))

    def finish(self, result):
        if self.fail:
            raise OSError("disk full")
        self.log.append((self.name, "finish", result.run.n_traces))

    def abort(self, reason):
        self.log.append((self.name, "abort", reason))


def test_every_sink_sees_the_run_in_order_and_the_record_gets_the_spec():
    log: list = []
    result = run_into(Evaluation.from_spec(SPEC), TRACES, SPEC, [Log("a", log), Log("b", log)])
    assert log[:2] == [("a", "begin", "nightly"), ("b", "begin", "nightly")]
    assert [e for e in log if e[1] == "add"] == [(s, "add", f"t{i}") for i in range(6) for s in "ab"]
    assert log[-2:] == [("a", "finish", 6), ("b", "finish", 6)]
    assert (result.run.name, result.run.tags) == ("nightly", {"team": "x"})


@pytest.mark.parametrize("others", [0, 1, 2])
def test_callbacks_and_sinks_that_take_results_get_every_one_beside_sinks_that_do_not(others):
    from assay.engine._sinks import Each

    log: list = []
    seen: list = []
    sinks = [Sink(), Each(lambda item: seen.append(item.id)), *(Log(str(k), log) for k in range(others)), Sink()]
    run_into(Evaluation.from_spec(SPEC), TRACES, SPEC, sinks)
    assert seen == [f"t{i}" for i in range(6)]
    assert [e for e in log if e[1] == "add"] == [(str(k), "add", f"t{i}") for i in range(6) for k in range(others)]


def test_a_failing_sink_aborts_those_not_finished_and_the_error_propagates():
    log: list = []
    with pytest.raises(OSError, match="disk full"):
        run_into(Evaluation.from_spec(SPEC), TRACES, SPEC, [Log("a", log), Log("b", log, fail_at_finish=True),
                                                           Log("c", log)])
    assert ("a", "finish", 6) in log and ("c", "abort", "OSError: disk full") in log
    assert not any(e[0] == "c" and e[1] == "finish" for e in log)


def test_an_interrupted_run_aborts_every_sink_and_returns_what_was_scored():
    log: list = []
    cancel = threading.Event()

    class Stop(Log):
        def add(self, item):
            super().add(item)
            if item.id == "t2":
                cancel.set()

    result = run_into(Evaluation.from_spec(SPEC, cancel=cancel), TRACES, SPEC, [Stop("a", log)])
    assert result.run.interrupted and result.run.n_traces == 3
    assert log[-1] == ("a", "abort", INTERRUPTED) and not any(e[1] == "finish" for e in log)
