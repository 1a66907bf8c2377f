"""UAEF's parameter name penalty_mode is accepted for penalty: CLI, config files and assay.compat.uaef."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.errors import ConfigError
from assay.metrics import REGISTRY

DATA = Path(__file__).resolve().parents[1] / "data" / "importers"
TRACE = {"id": "u", "turns": [{"input": "q", "output": "a",
                               "usage": {"input_tokens": 3000, "output_tokens": 1000, "cost_usd": 0.04}}],
         "metadata": {"quality_score": 0.8}}


def run(tmp_path: Path, *args: str) -> dict:
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(TRACE) + "\n")
    r = CliRunner().invoke(main, ["run", str(p), "--no-store", "-f", "json", *args], catch_exceptions=False)
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize(("name", "mode", "score"), [
    ("token_efficiency", "heavy", 0.8 / 4), ("token_efficiency", "light", 0.8 / 2),  # 4000 tokens vs 1000
    ("cost_efficiency", "heavy", 0.8 / 4), ("cost_efficiency", "light", 0.8 / 2)])  # $0.04 vs $0.01
def test_penalty_mode_on_the_command_line(tmp_path: Path, name: str, mode: str, score: float) -> None:
    out = run(tmp_path, "-m", f"{name}:penalty_mode={mode}")
    assert out["traces"][0]["metrics"][name]["score"] == pytest.approx(score)
    assert out["run"]["metrics"][0]["params"]["penalty"] == mode  # recorded under assay's own name


def test_penalty_mode_in_a_config_file(tmp_path: Path) -> None:
    cfg = tmp_path / "assay.toml"
    cfg.write_text('[[metric]]\nname = "cost_efficiency"\npenalty_mode = "heavy"\n')
    out = run(tmp_path, "--config", str(cfg))
    assert out["traces"][0]["metrics"]["cost_efficiency"]["score"] == pytest.approx(0.2)


def test_both_names_or_a_bad_value_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="give 'penalty' or 'penalty_mode', not both"):
        REGISTRY.create("token_efficiency", penalty="light", penalty_mode="heavy")
    with pytest.raises(ConfigError, match="penalty must be one of 'light', 'heavy', got 'harsh'"):
        REGISTRY.create("token_efficiency", penalty_mode="harsh")
    assert "penalty_mode: another name for penalty" in REGISTRY.describe("cost_efficiency")


def test_compat_uaef_accepts_penalty_mode() -> None:
    from assay.compat.uaef.metrics.registry import get_metric

    assert get_metric("token_efficiency", penalty_mode="heavy").penalty == "heavy"


def test_uaef_cost_and_quality_from_metadata_score_cost_efficiency_without_a_flag(tmp_path: Path) -> None:
    """UAEF keeps cost in metadata.cost_usd: cost_efficiency is no longer null on UAEF traces."""
    r = CliRunner().invoke(main, ["run", str(DATA / "uaef_metadata_cost.json"), "--no-store", "-f", "json",
                                  "-m", "cost_efficiency:penalty_mode=heavy", "-m", "token_efficiency"],
                           catch_exceptions=False)
    out = json.loads(r.stdout)
    m = out["traces"][0]["metrics"]
    assert out["traces"][0]["id"] == "refund_lookup"
    assert m["cost_efficiency"]["score"] == pytest.approx(0.8 / 3)  # $0.03 vs $0.01, heavy
    assert m["token_efficiency"]["score"] == pytest.approx(0.8 / 2.4 ** 0.5)  # 2400 tokens vs 1000, light
