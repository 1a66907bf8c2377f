"""A run described once: JudgeOptions (every judge setting, checked once) and RunSpec, and what reads them."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from assay.engine import Evaluation
from assay.engine._spec import JudgeSpec, RunSpec
from assay.errors import ConfigError
from assay.judge import JudgeOptions, Limited, build_judge, make_judge
from assay.judge._limits import Limited as _Limited

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"


def _layers(judge):
    while judge is not None:
        yield judge
        judge = getattr(judge, "inner", None)


def test_every_judge_default_is_written_once_in_the_options():
    # compose, Limited and the CLI read the default from JudgeOptions; no other module writes it
    assert JudgeOptions().concurrency == 16
    hits = [f"{p.relative_to(SRC).as_posix()}: {line.strip()}" for p in sorted(SRC.rglob("*.py"))
            for line in p.read_text(encoding="utf-8").splitlines()
            if "16" in line.replace("2**16", "") and "concurren" in line.lower()]
    assert hits == ["model/_options.py: CONCURRENCY = 16"]
    limited = next(l for l in _layers(make_judge(lambda messages: "{}", cache=False)) if isinstance(l, _Limited))
    assert limited.start == 16


@pytest.mark.parametrize("options, message", [
    ({"concurrency": 0}, "concurrency: expected at least 1"),
    ({"concurrency": 4, "max_concurrency": 2}, r"--max-concurrency \(2\) is below --concurrency \(4\)"),
    ({"rpm": -1}, "rpm: expected a number > 0"),
    ({"retries": "3"}, "retries: expected a whole number"),
    ({"prompt_style": "tiny"}, "prompt style"),
    ({"budget_usd": -0.5}, "budget_usd: expected a number >= 0"),
])
def test_bad_options_are_a_config_error_naming_the_option(options, message):
    with pytest.raises(ConfigError, match=message):
        JudgeOptions.of(options)
    with pytest.raises(ConfigError, match=message):  # make_judge checks through the same type
        make_judge(lambda messages: "{}", **options)


def test_unknown_keys_go_to_the_backend_and_the_key_is_not_shown():
    o = JudgeOptions.of({"concurrency": 3, "structured": False, "api_key": "sk-secret"})
    assert o.concurrency == 3 and o.extra == {"structured": False}
    assert o.backend() == {"api_key": "sk-secret", "structured": False}
    assert "sk-secret" not in repr(o)
    assert o.given() == {"concurrency": 3, "api_key": "sk-secret", "structured": False}


def test_a_worker_share_divides_the_limits():
    o = JudgeOptions(concurrency=16, max_concurrency=40, rpm=600.0, budget_usd=2.0, budget_tokens=1001)
    share = o.split(slots=4, processes=2)
    assert (share.concurrency, share.max_concurrency, share.rpm, share.budget_usd, share.budget_tokens) == \
        (4, 10, 150.0, 1.0, 500)
    assert dataclasses.replace(share, concurrency=16, max_concurrency=40, rpm=600.0, budget_usd=2.0,
                               budget_tokens=1001) == o


def test_a_judge_spec_pickles_and_builds_the_same_stack():
    spec = JudgeSpec("openai-compatible:m@http://127.0.0.1:9/v1", JudgeOptions(concurrency=3, cache=False))
    again = pickle.loads(pickle.dumps(spec))  # what a Dask worker receives
    assert again == spec
    judge = again.build()
    assert judge.model.endswith("m") and next(l for l in _layers(judge) if isinstance(l, Limited)).start == 3
    assert build_judge(spec.model, spec.options).model == judge.model


def test_run_spec_parses_max_errors_and_the_executor_once():
    assert RunSpec(max_errors="5%").max_errors == 0.05 and RunSpec(max_errors="3").max_errors == 3
    with pytest.raises(ConfigError, match="--max-errors"):
        RunSpec(max_errors="lots")
    with pytest.raises(ConfigError, match="unknown executor"):
        RunSpec(executor="ray")
    with pytest.raises(ConfigError, match="repeats"):
        RunSpec(repeats=0)
    assert RunSpec(name="nightly", tags={"team": "a"}).label == {"name": "nightly", "tags": {"team": "a"}}
    assert RunSpec().label == {}


def test_an_evaluation_from_a_spec_keeps_the_judge_spec():
    spec = RunSpec(metrics=["contains:values=[\"a\"]"], thresholds={"response_quality": 0.5})
    ev = Evaluation.from_spec(spec)
    assert ev.judge is None and ev.judge_spec is None
    r = ev.run_spec([{"id": "a", "turns": [{"input": "q", "output": "a"}]}], spec)
    assert r.run["n_traces"] == 1


def test_a_config_files_judge_table_is_checked_with_its_location(tmp_path):
    cfg = tmp_path / "assay.toml"
    cfg.write_text('[judge]\nmodel = "openai:gpt-4o-mini"\nconcurrency = 0\n')
    (tmp_path / "t.jsonl").write_text(json.dumps({"id": "a", "turns": [{"input": "q", "output": "a"}]}) + "\n")
    env = {**os.environ, "HOME": str(tmp_path), "ASSAY_STORE": "off"}
    r = subprocess.run([sys.executable, "-m", "assay", "run", "t.jsonl", "-m", "contains:values=[\"a\"]"],
                       cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and "assay.toml: [judge]: judge option concurrency: expected at least 1" in r.stderr
