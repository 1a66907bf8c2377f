"""agent_utilization and coordination_efficiency (seed 004)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics.multi_agent import coordination, utilization
from assay.model import Warning


def agent(units: int) -> dict:
    """An agent whose work is ``units``: one message per unit (turns with an input only)."""
    return {"turns": [{"input": f"step {i}"} for i in range(units)]}


def multi(work: list[int], handoffs: int = 0) -> dict:
    names = [f"agent{i}" for i in range(len(work))]
    return {"id": "m", "turns": [{"input": "plan a trip", "output": "done"}],
            "agents": {n: agent(w) for n, w in zip(names, work)},
            "handoffs": [{"from": names[0], "to": names[-1]} for _ in range(handoffs)]}


@pytest.mark.parametrize("work, want", [([6, 6, 6], 1.0), ([5, 3], 0.78), ([10, 0, 0], 0.24)],
                         ids=["seed-good-1.0", "seed-partial-0.78", "seed-bad-0.24"])
def test_agent_utilization_seed_examples(run, work, want):
    assert run("agent_utilization", multi(work)).score == pytest.approx(want, abs=0.005)


def test_agent_utilization_counts_messages_and_tool_calls(run):
    t = {"id": "m", "turns": [{"input": "x"}], "agents": {
        "a": {"turns": [{"input": "q", "output": "r", "tool_calls": [{"name": "s"}, {"name": "t"}]}]},
        "b": {"turns": [{"input": "q", "output": "r"}, {"input": "q2", "output": "r2"}]}}}
    r = run("agent_utilization", t)
    assert r.details["work"] == {"a": 4, "b": 4} and r.score == 1.0


def test_agent_utilization_not_multi_agent(build, run):
    r = run("agent_utilization", build())
    assert r.score is None and r.warning == Warning.NOT_APPLICABLE


def test_agent_utilization_no_work(run):
    r = run("agent_utilization", multi([0, 0]))
    assert r.score is None and r.warning == Warning.MISSING_DATA


def test_agent_utilization_reads_openai_messages_per_agent(run):
    t = {"id": "m", "turns": [{"input": "x"}], "agents": {
        "a": {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "r"}]},
        "b": {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "r"}]}}}
    assert run("agent_utilization", t).score == 1.0


@pytest.mark.parametrize("handoffs, work, want", [(1, [6, 6], 1.0), (3, [5, 4], 0.31), (8, [2, 2], 0.0)],
                         ids=["seed-good-1.0", "seed-partial-0.31", "seed-bad-about-0"])
def test_coordination_efficiency_seed_examples(run, handoffs, work, want):
    assert run("coordination_efficiency", multi(work, handoffs)).score == pytest.approx(want, abs=0.005)


def test_coordination_ideal_ratio_param(run):
    assert run("coordination_efficiency", multi([5, 5], 3), ideal_ratio=0.3).score == 1.0


def test_coordination_no_work_and_not_multi_agent(build, run):
    t = {"id": "m", "turns": [{"input": "x"}], "handoffs": [{"from": "a", "to": "b"}]}
    assert run("coordination_efficiency", t).warning == Warning.MISSING_DATA
    assert run("coordination_efficiency", build()).warning == Warning.NOT_APPLICABLE


def test_pure_functions():
    assert utilization([5, 3]) == pytest.approx(0.7788, abs=1e-4)
    assert coordination(3, 9) == pytest.approx(0.3114, abs=1e-4)
    assert coordination(8, 4) < 1e-3


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=6), st.integers(0, 40))
def test_multi_agent_scores_bounded(run, work, handoffs):
    t = multi(work, handoffs)
    for name in ("agent_utilization", "coordination_efficiency"):
        r = run(name, t)
        if sum(work) == 0:
            assert r.score is None
        else:
            assert 0.0 <= r.score <= 1.0
    if sum(work) and len(set(work)) == 1:
        assert run("agent_utilization", t).score == pytest.approx(1.0)
