"""The public judge-metric API, used the way a user would: from a module outside the package.

The first test runs docs/metrics.md's "Adding a judge metric" example verbatim (its code blocks
are read from the page) against the scripted judge server.
"""

from __future__ import annotations

import importlib
import re
import sys
import textwrap
from pathlib import Path

import pytest

from assay import ConfigError, evaluate
from assay.judge import make_judge
from assay.metrics import LabelJudged, Registry, ScaleJudged, metric, rubric_metric, shows, turn_sections
from tests.support.judge_server import obj

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
TRACE = {"id": "p1", "turns": [{"input": "Where is my order?", "output": "Happy to help! It ships tomorrow."},
                               {"input": "Thanks", "output": "Whatever."}]}


def doc_blocks() -> dict[str, str]:
    """The 'Adding a judge metric' section's code blocks, by what they are."""
    text = DOCS.read_text()
    section = text[text.index("### Adding a judge metric"):text.index("`ScaleJudged.adjust()` changes")]
    blocks = [textwrap.dedent(b) for b in re.findall(r"```(?:python)?\n(.*?)\n\s*```", section, re.S)]
    module, rubric, one_line = blocks
    return {"module": module + "\n", "rubric": rubric + "\n", "one_line": one_line + "\n"}


@pytest.fixture()
def user_dir(tmp_path, monkeypatch, registry_snapshot):
    """A directory outside the package on sys.path; modules imported from it are forgotten after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if getattr(sys.modules[name], "__file__", "") and str(tmp_path) in sys.modules[name].__file__:
            del sys.modules[name]


def polite_judge(judge_server, per_turn: dict[str, int]):
    def reply(request):
        user = request["messages"][1]["content"]
        score = next(v for k, v in per_turn.items() if k in user)
        return obj({"evidence": [], "reasoning": f"scored {score}", "score": score})

    judge_server.reply = reply
    return make_judge(f"openai-compatible:judge@{judge_server.url}", cache=False)


def test_the_docs_example_works_verbatim_from_a_user_module(user_dir, judge_server):
    blocks = doc_blocks()
    (user_dir / "my_metrics.py").write_text(blocks["module"])
    (user_dir / "politeness.md").write_text(blocks["rubric"])
    importlib.import_module("my_metrics")
    judge = polite_judge(judge_server, {"Happy to help": 5, "Whatever": 2})
    r = evaluate([TRACE], ["politeness"], judge=judge).traces[0].metrics["politeness"]
    assert r.warning is None, r.reason
    assert r.details["per_turn"] == [1.0, 0.25] and r.score == 0.625
    messages = judge_server.requests[0].json["messages"]
    system = messages[0]["content"]
    assert "Grade how polite the agent's response is" in system
    assert "Polite and warm throughout." in messages[-1]["content"]  # the rubric's options, after the data
    assert "Happy to help" not in system  # the evaluated text is fenced in the user message only


def test_the_docs_one_line_form_works(user_dir, judge_server):
    (user_dir / "one_line.py").write_text(doc_blocks()["one_line"])
    importlib.import_module("one_line")
    judge = polite_judge(judge_server, {"Happy to help": 4})
    r = evaluate([TRACE], ["courtesy"], judge=judge).traces[0].metrics["courtesy"]
    assert r.score == 0.75 and r.warning is None
    assert "Is the final answer courteous to the user?" in judge_server.requests[0].json["messages"][0]["content"]


def test_a_missing_rubric_is_a_config_error_when_the_module_is_imported(user_dir, judge_server):
    (user_dir / "no_rubric.py").write_text(doc_blocks()["module"])  # politeness.md not written
    with pytest.raises(ConfigError, match=r"judge metric 'politeness' \(no_rubric.Politeness\): rubric file "
                                          r"'politeness.md': cannot read it"):
        importlib.import_module("no_rubric")
    assert judge_server.requests == []


def test_a_judge_metric_without_any_rubric_says_how_to_give_one():
    with pytest.raises(ConfigError, match="no rubric; set rubric = the criterion as plain text"):
        @metric("bare", dimension="custom", requires=("judge",), registry=Registry())
        class Bare(ScaleJudged):
            sections = shows(turn_sections)


def test_labels_that_differ_from_the_weights_fail_at_definition():
    text = "version: 1\n@@ main\nClassify. $fence_notice\n$verdict_choices\n@@ choices verdict\npolite: ok\nrude: bad\n"
    with pytest.raises(ConfigError, match=r"verdict labels \['polite', 'rude'\] differ from the metric's weights "
                                          r"\['kind', 'rude'\]"):
        @metric("tone2", dimension="custom", requires=("judge",), registry=Registry())
        class Tone(LabelJudged):
            weights = {"kind": 1.0, "rude": 0.0}
            rubric = text
            sections = shows(turn_sections)


@pytest.mark.parametrize("text, message", [
    ("version: 1\n@@ main\nno fence notice here\n", "lacks \\$fence_notice"),
    ("version: 1\n@@ main\n$fence_notice\n@@ choices score\n1: bad\n5: good\n", r"must give a line for each of 1..5"),
    ("no version line\n@@ main\n$fence_notice\n", None),  # plain text: a criterion, not a malformed rubric
], ids=["no fence notice", "incomplete scale", "plain text is a criterion"])
def test_rubric_text_is_checked_at_definition(text, message):
    def define():
        @metric("checked", dimension="custom", requires=("judge",), registry=Registry())
        class Checked(ScaleJudged):
            rubric = text
            sections = shows(turn_sections)
        return Checked

    if message is None:
        assert define()._rubric.choices["score"].keys() == {"1", "2", "3", "4", "5"}
    else:
        with pytest.raises(ConfigError, match=message):
            define()


def test_rubric_from_package_data_and_paths(tmp_path):
    path = tmp_path / "crit.txt"
    path.write_text("Is the reply short?")
    a = rubric_metric("short_a", path, registry=Registry())
    b = rubric_metric("short_b", "package:assay.metrics/rubrics/coherence.md", registry=Registry())
    assert a.definition.criteria == "Is the reply short?"
    assert b._rubric.choices["score"]["5"].startswith("Every reply follows")
    with pytest.raises(ConfigError, match="rubric 'package:assay.metrics/rubrics/nope.md': no such package data"):
        rubric_metric("short_c", "package:assay.metrics/rubrics/nope.md", registry=Registry())
    with pytest.raises(ConfigError, match="its rubric lists verdict labels; give labels="):
        rubric_metric("short_d", "package:assay.metrics/rubrics/containment.md", registry=Registry())
