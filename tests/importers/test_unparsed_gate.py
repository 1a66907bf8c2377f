"""``why_unparsed`` clears most texts with one regex (``_check._SUSPECT``) before its real tests; the
gate must never clear a text that one of those tests flags."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.importers._check import _SUSPECT, unparsed, why_unparsed, why_unparsed_ungated
from assay.model import Trace

_ungated = why_unparsed_ungated


OPENINGS = ["", " ", "\n\t ", "\u00a0", "\u2003", "\u3000", "[", "{", "{'", "[{", "[ ", "role=", "role='user' content=",
            "HumanMessage(", "Foo(", "foo(", "user:", "system:", "assistant: ", "tool:", "ai:", "human:",
            "developer:", "User:", "model:", "\ufeff"]
BODIES = ['{"role": "user", "content": "hi"}', '[{"role": "user", "content": "x"}]', '{"messages": []}',
          "content='x')", "text='a')]", "hello\nassistant: hi\ntool: x", "a\nsystem: b", "'k': 1}", "}", ")",
          "just words", '"choices": [], "x": 1}', "user: q\nassistant: a"]


@settings(max_examples=2000, deadline=None)
@given(st.sampled_from(OPENINGS), st.sampled_from(OPENINGS), st.sampled_from(BODIES) | st.text(max_size=40))
def test_the_gate_clears_only_texts_no_test_flags(a, b, body):
    text = a + b + body
    assert why_unparsed(text) == _ungated(text)


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=60))
def test_the_gate_on_any_text(text):
    assert why_unparsed(text) == _ungated(text)
    if _ungated(text) is not None:
        assert _SUSPECT.match(text) is not None


def test_unparsed_names_fields_in_order():
    system = "You are a careful assistant who answers questions about orders and refunds."
    trace = Trace.model_validate({"id": "t", "system": system, "turns": [
        {"input": system, "output": '{"messages": [{"role": "user", "content": "hi"}]}'},
        {"input": "[HumanMessage(content='x')]", "output": "fine"}],
        "agents": {"helper": {"turns": [{"input": "user: a\nassistant: b", "output": "ok"}]}}})
    assert [f for f, _ in unparsed(trace)] == ["turns[0].output", "turns[0].input", "turns[1].input",
                                               "agents.helper.turns[0].input"]
