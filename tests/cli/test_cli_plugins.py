"""Plugins from the command line, as a user runs them: an installed plugin package, --plugin, config.

Each test runs ``python -m assay`` in a fresh process (registrations are process-wide), with the
dummy plugin distribution of tests/support/plugin_dist.py installed on PYTHONPATH and the
scripted judge server behind its judge backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.judge_server import obj
from tests.support.plugin_dist import install_plugin

ROOT = Path(__file__).resolve().parents[2]
TRACES = [{"id": "loud", "turns": [{"input": "status?", "output": "ALL DONE, THANK YOU"}]},
          {"id": "calm", "turns": [{"input": "status?", "output": "done, thanks"}]}]


def assay(cwd: Path, *args: str, pythonpath: Path | None = None, env: dict[str, str] | None = None):
    full = {**os.environ, **(env or {})}
    full["PYTHONPATH"] = os.pathsep.join(str(p) for p in (pythonpath, ROOT / "src") if p)
    return subprocess.run([sys.executable, "-m", "assay", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture()
def site(tmp_path_factory) -> Path:
    return install_plugin(tmp_path_factory.mktemp("site-packages"))


@pytest.fixture()
def traces(tmp_path) -> Path:
    p = tmp_path / "traces.jsonl"
    p.write_text("".join(json.dumps(t) + "\n" for t in TRACES))
    return p


def test_an_installed_plugin_s_metrics_and_judge_backend_are_used_by_name(site, traces, judge_server):
    judge_server.reply = lambda req: obj({"evidence": [], "reasoning": "polite enough",
                                          "score": 5 if "THANK YOU" in req["messages"][1]["content"] else 3})
    r = assay(traces.parent, "run", str(traces), "-m", "shouty", "-m", "courtesy", "--judge", "dummy:tiny",
              "--no-store", "--no-cache", "-f", "json", pythonpath=site, env={"DUMMY_JUDGE_URL": judge_server.url})
    assert r.returncode in (0, 1), r.stderr
    out = json.loads(r.stdout)
    got = {t["id"]: {k: v["score"] for k, v in t["metrics"].items()} for t in out["traces"]}
    assert got == {"loud": {"shouty": 1.0, "courtesy": 1.0}, "calm": {"shouty": 0.0, "courtesy": 0.5}}
    assert out["run"]["judge"]["model"].startswith("dummy:tiny")
    assert len(judge_server.requests) == 2 and judge_server.requests[0].json["model"] == "tiny"


def test_assay_metrics_shows_where_each_metric_comes_from(site, tmp_path):
    r = assay(tmp_path, "metrics", "--json", pythonpath=site)
    assert r.returncode == 0, r.stderr
    origins = {m["name"]: m["origin"] for m in json.loads(r.stdout)}
    assert origins["shouty"] == origins["courtesy"] == "plugin assay-dummy-plugin"
    assert origins["contains"] == "built-in"
    r = assay(tmp_path, "metrics", "shouty", pythonpath=site)
    assert "from: plugin assay-dummy-plugin" in r.stdout and "Share of upper-case letters" in r.stdout


def test_a_plugin_importer_reads_its_format(site, tmp_path):
    (tmp_path / "run.dummylog").write_text("first answer\nsecond answer\n")
    r = assay(tmp_path, "validate", "run.dummylog", pythonpath=site)
    assert (r.returncode, r.stdout.strip().splitlines()[-1]) == (0, "2 valid trace(s), 0 invalid record(s)"), r.stderr


MY_METRICS = '''
from assay import metric

@metric("word_count_ok", dimension="custom")
def word_count_ok(ctx):
    """1 when the final answer has at most 3 words."""
    return 1.0 if len((ctx.trace.turns[-1].output or "").split()) <= 3 else 0.0
'''


def test_plugin_flag_and_config_plugins_import_a_user_module(traces):
    (traces.parent / "my_metrics.py").write_text(MY_METRICS)
    r = assay(traces.parent, "run", str(traces), "--plugin", "my_metrics", "-m", "word_count_ok", "--no-store",
              "-f", "json")
    assert r.returncode == 1, r.stderr  # "ALL DONE, THANK YOU" has 4 words
    assert [t["metrics"]["word_count_ok"]["score"] for t in json.loads(r.stdout)["traces"]] == [0.0, 1.0]
    (traces.parent / "assay.toml").write_text('plugins = ["my_metrics"]\nmetrics = ["word_count_ok"]\n')
    r = assay(traces.parent, "run", str(traces), "-c", "assay.toml", "--no-store", "-f", "json")
    assert [t["metrics"]["word_count_ok"]["score"] for t in json.loads(r.stdout)["traces"]] == [0.0, 1.0]
    r = assay(traces.parent, "run", str(traces), "--plugin", "./my_metrics.py", "-m", "word_count_ok", "--no-store")
    assert r.returncode == 1 and "word_count_ok" in r.stdout, r.stderr


def test_two_instances_from_the_command_line_and_bad_plugins(traces):
    r = assay(traces.parent, "run", str(traces), "-m", "contains@thanks:values=thank", "-m",
              'contains@done:values=["done", "all"]', "--no-store", "-f", "json")
    out = json.loads(r.stdout)
    assert [{k: v["score"] for k, v in t["metrics"].items()} for t in out["traces"]] == [
        {"contains@thanks": 1.0, "contains@done": 1.0}, {"contains@thanks": 1.0, "contains@done": 0.5}]
    r = assay(traces.parent, "run", str(traces), "-m", "contains:values=a", "-m", "contains:values=b", "--no-store")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "Error: metric instance 'contains' is selected twice: 'contains:values=a' and 'contains:values=b'; name them "
        "apart with NAME@LABEL (e.g. 'contains@second:...') or a mapping {instance name: metric}"]
    r = assay(traces.parent, "run", str(traces), "--plugin", "no_such_plugin_mod", "--no-store")
    assert r.returncode == 2 and r.stderr.startswith("Error: plugin 'no_such_plugin_mod' cannot be imported")
    assert "Traceback" not in r.stderr
