"""Config files: discovery (assay.toml / [tool.assay] here or in a parent), slips explained, README in step."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from assay.engine._config import KEYS, discover_config, find_config, load_config
from assay.errors import ConfigError
from assay.metrics.criteria import KEYS as CRITERIA_KEYS

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples" / "traces.jsonl"


def test_nearest_config_wins_and_pyproject_needs_tool_assay(tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert find_config(deep) is None or not str(find_config(deep)).startswith(str(tmp_path))
    (tmp_path / "assay.toml").write_text('metrics = ["latency_score"]\n')
    assert find_config(deep) == tmp_path / "assay.toml"
    (tmp_path / "a" / "pyproject.toml").write_text('[project]\nname = "x"\n')  # not ours: keep looking
    assert find_config(deep) == tmp_path / "assay.toml"
    (tmp_path / "a" / "b" / "pyproject.toml").write_text('[tool.assay]\nmetrics = ["throughput"]\n')
    assert find_config(deep) == tmp_path / "a" / "b" / "pyproject.toml"
    cfg = discover_config(deep)
    assert cfg.metrics == ["throughput"] and cfg.source == tmp_path / "a" / "b" / "pyproject.toml"
    (deep / "assay.toml").write_text('metrics = ["turn_efficiency"]\n')
    assert discover_config(deep).metrics == ["turn_efficiency"]


def test_assay_run_picks_up_the_config_of_its_directory(tmp_path):
    (tmp_path / "assay.toml").write_text('metrics = ["tool_selection_accuracy"]\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    r = subprocess.run([sys.executable, "-m", "assay", "run", str(EXAMPLES), "--no-store", "-f", "json"], cwd=sub,
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr  # two traces fail tool_selection_accuracy
    assert list(json.loads(r.stdout)["summary"]) == ["tool_selection_accuracy"]
    assert f"config: {tmp_path / 'assay.toml'}" in r.stderr


@pytest.mark.parametrize(("text", "message"), [
    ('metric = ["tool_selection_accuracy"]\n',
     "'metric' is for [[metric]] tables (one per metric, with a name); for a list of names write "
     'metrics = ["tool_selection_accuracy"]'),
    ('[metrics]\nname = "latency_score"\n', "'metrics' is a list; for one metric with parameters write a [[metric]]"),
    ("[weight]\ntool_calling = 1\n", "unknown setting 'weight': did you mean 'weights'?"),
    ("[threshold]\ntool_calling = 1\n", "did you mean 'thresholds'?"),
    ('[[criterion]]\nname = "x"\n', "did you mean 'criteria'?"),
    ('[[metric]]\nthreshold = 0.5\n', "[[metric]] entries need a 'name'"),
], ids=["metric-list", "metrics-table", "weight", "threshold", "criterion", "metric-without-name"])
def test_singular_plural_slips_are_explained(tmp_path, text, message):
    p = tmp_path / "assay.toml"
    p.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(p)
    assert message in str(err.value) and str(p) in str(err.value)


def test_a_single_metric_table_is_accepted(tmp_path):
    p = tmp_path / "assay.toml"
    p.write_text('[metric]\nname = "latency_score"\nthreshold_ms = 900\n')
    assert load_config(p).metrics == [{"name": "latency_score", "threshold_ms": 900}]


def test_a_slip_in_the_cli_is_one_error_line(tmp_path):
    (tmp_path / "assay.toml").write_text('metric = ["latency_score"]\n')
    r = subprocess.run([sys.executable, "-m", "assay", "run", str(EXAMPLES), "--no-store"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("Error: ")
    assert "write metrics = [" in r.stderr


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### Configuration file", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```toml\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the README's configuration section has one TOML example"
    return blocks[0]


def test_the_readme_documents_every_config_key(tmp_path):
    example = _readme_example()
    data = tomllib.loads(example)
    assert set(data) | {"judge"} == set(KEYS), "README and the config parser disagree on the settings"
    assert 'judge = "' in example  # the one-line form is documented next to the [judge] table
    assert "model" in data["judge"]
    documented = {k for entry in data["criteria"] for k in entry} | set(
        re.findall(r"or: (\w+) =", example))
    assert documented == set(CRITERIA_KEYS), "README and [[criteria]] disagree on the keys"
    p = tmp_path / "assay.toml"
    p.write_text(example)
    cfg = load_config(p)  # the documented example is itself a valid config
    assert cfg.judge == "openai:gpt-4o-mini" and cfg.judge_options == {"concurrency": 8, "budget_usd": 2.0}
    assert cfg.metrics and cfg.weights == {"tool_calling": 0.4} and len(cfg.criteria) == 2
    py = tmp_path / "pyproject.toml"
    py.write_text("[tool.assay]\n" + re.sub(r"^\[(\[?)(\w+)", r"[\1tool.assay.\2", example, flags=re.M))
    assert load_config(py).weights == cfg.weights  # and the same under [tool.assay]
