"""Weights, thresholds and dimension names are checked where they enter: flags, config files, Evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import assay
from assay.cli import main
from assay.engine._config import load_config
from assay.errors import ConfigError


@pytest.fixture
def traces(tmp_path: Path) -> Path:
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"id": "a", "turns": [{"input": "x", "latency_ms": 10}]}) + "\n")
    return p


@pytest.mark.parametrize("flag, message", [
    ("tool_calling=nan", "weight of 'tool_calling' must be a finite number >= 0, got nan"),
    ("tool_calling=inf", "weight of 'tool_calling' must be a finite number >= 0, got inf"),
    ("tool_calling=-1", "weight of 'tool_calling' must be a finite number >= 0, got -1.0"),
    ("tool_calling", "expected DIMENSION=NUMBER"),
    ("tool_caling=0.3", "unknown dimension (in the weights) 'tool_caling'. Did you mean 'tool_calling'?"),
], ids=["nan", "inf", "negative", "no-value", "typo"])
def test_bad_weight_flags_are_one_line_usage_errors(traces: Path, flag: str, message: str) -> None:
    r = CliRunner().invoke(main, ["run", str(traces), "--no-store", "-m", "latency_score", "--weight", flag])
    assert r.exit_code == 2 and message in r.output and r.output.count("\n") == 1 and "Traceback" not in r.output


@pytest.mark.parametrize("toml, message", [
    ("[thresholds]\ntool_calling = 1.5\n", "[thresholds] threshold of 'tool_calling' must be between 0 and 1, got 1.5"),
    ("[thresholds]\ntool_calling = -0.1\n", "threshold of 'tool_calling' must be between 0 and 1"),
    ("[weights]\ntool_calling = nan\n", "[weights] weight of 'tool_calling' must be a finite number >= 0, got nan"),
    ("[weights]\ntool_calling = true\n", "[weights] must map dimension names to numbers"),
])
def test_bad_config_values(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "c.toml").write_text(toml)
    with pytest.raises(ConfigError, match=None) as info:
        load_config(tmp_path / "c.toml")
    assert message in str(info.value)


def test_unknown_dimension_names_get_a_suggestion_and_metric_dimensions_are_known() -> None:
    with pytest.raises(ConfigError, match=r"unknown dimension \(in the thresholds\) 'responsible_aii'. "
                                          r"Did you mean 'responsible_ai'"):
        assay.Evaluation(["latency_score"], thresholds={"responsible_aii": 0.9})
    assay.Evaluation(["latency_score"], weights={"performance": 2.0}, thresholds={"tool_calling": 1.0})


def test_a_valid_weight_still_reaches_the_results(traces: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["run", str(traces), "--no-store", "-m", "latency_score", "--weight",
                                  "performance=0.5", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "NaN" not in out.read_text()
