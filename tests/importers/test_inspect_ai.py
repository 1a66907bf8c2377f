"""Inspect AI eval logs: one trace per sample and epoch, task_id = sample id, trial = epoch."""

from __future__ import annotations

from ._helpers import DATA, issues_of, plain, traces_of
from .test_openai_chat import run_cli


def test_each_sample_and_epoch_is_a_trial_of_the_sample() -> None:
    t = traces_of(DATA / "inspect_eval_log.json")
    assert [(x.id, x.task_id, x.trial) for x in t.values()] == [
        ("3-epoch1", "3", 1), ("3-epoch2", "3", 2), ("4-epoch1", "4", 1), ("4-epoch2", "4", 2)]
    first = plain(t["3-epoch1"])
    assert first["system"] == "You are a helpful assistant with a calculator."
    assert first["turns"] == [{"input": "What is 3 squared?", "output": "9", "reasoning": "Use the calculator.",
                               "tool_calls": [{"name": "calculator", "arguments": {"expression": "3**2"}, "result": "9",
                                               "id": "call_3_1"}]}]
    assert first["expected"] == {"output": "9"}
    assert first["usage"] == {"input_tokens": 180, "output_tokens": 24, "total_tokens": 204}  # model_usage
    assert first["latency_ms"] == 1500.0 and first["status"] == "completed"
    assert first["metadata"]["scores"]["match"]["value"] == "C"
    assert first["metadata"]["model"] == "openai/gpt-4o-mini" and first["metadata"]["eval"]["task"] == "squares"


def test_a_tool_error_is_the_calls_error() -> None:
    call = plain(traces_of(DATA / "inspect_eval_log.json")["4-epoch2"])["turns"][0]["tool_calls"][0]
    assert call["error"] == "calculator timed out" and "result" not in call


def test_malformed_samples_are_issues_naming_the_sample() -> None:
    issues = [str(i).split("inspect_malformed.json:", 1)[1] for i in issues_of(DATA / "inspect_malformed.json")]
    assert issues[0].startswith("1: samples[0].messages[2].tool_calls[0].arguments: not valid JSON")
    assert issues[1:] == ["1: samples[1].epoch: expected an integer",
                          "1: trace '4-epoch1' has no turns: no user message, answer or tool call was found in it, "
                          "so there is nothing to score",
                          "1: samples[3].id: required field is missing"]
    assert traces_of(DATA / "inspect_malformed.json") == {}


def test_assay_run_detects_the_log_and_computes_pass_at_k_across_epochs() -> None:
    out = run_cli(DATA / "inspect_eval_log.json", "-m", "latency_score")
    assert [(t["task_id"], t["trial"]) for t in out["traces"]] == [("3", 1), ("3", 2), ("4", 1), ("4", 2)]
    trials = out["statistics"]["trials"]
    assert trials["n_tasks"] == 2 and trials["trials_per_task"] == {"min": 2, "max": 2}
    assert [row["k"] for row in trials["by_metric"]["latency_score"]] == [1, 2]


# ------------------------------------------------------------ the .eval archive (Inspect's default format)

import json  # noqa: E402
import zipfile  # noqa: E402

import pytest  # noqa: E402

from assay.importers import read_traces  # noqa: E402
from assay.model._limits import Limits  # noqa: E402


def _archive(path, log, *, header="header.json", extra=()):
    """Write *log* the way Inspect writes a .eval: the header without samples, one member per sample."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        if header:
            zf.writestr(header, json.dumps({k: v for k, v in log.items() if k != "samples"}))
        for s in log.get("samples", []):
            zf.writestr(f"samples/{s['id']}_epoch_{s.get('epoch', 1)}.json", json.dumps(s))
        zf.writestr("summaries.json", "[]")
        for name, data in extra:
            zf.writestr(name, data)
    return path


LOG = json.loads((DATA / "inspect_eval_log.json").read_text())


@pytest.mark.parametrize("header", ["header.json", "_journal/start.json"])
def test_an_eval_archive_reads_like_the_json_log(tmp_path, header):
    from_json = traces_of(DATA / "inspect_eval_log.json")
    from_zip = traces_of(_archive(tmp_path / "run.eval", LOG, header=header))
    assert list(from_zip) == list(from_json)
    assert [plain(t) for t in from_zip.values()] == [plain(t) for t in from_json.values()]


def test_an_eval_archive_is_detected_by_content_under_any_name(tmp_path):
    path = _archive(tmp_path / "logfile.bin", LOG)
    assert [t.task_id for t in traces_of(path).values()] == ["3", "3", "4", "4"]


def test_bad_members_are_issues_naming_the_member_and_the_rest_is_read(tmp_path):
    log = json.loads(json.dumps(LOG))
    log["samples"][1]["epoch"] = "two"
    path = _archive(tmp_path / "run.eval", log, extra=[("samples/9_epoch_1.json", "{not json")])
    records = list(read_traces(path))
    issues = [str(i).split("run.eval:", 1)[1] for _, i in records if not hasattr(i, "turns")]
    assert issues[0] == "2: samples/3_epoch_two.json:epoch: expected an integer"
    assert issues[1].startswith("5: samples/9_epoch_1.json: ") and "JSON" in issues[1]
    assert [i.id for _, i in records if hasattr(i, "turns")] == ["3-epoch1", "4-epoch1", "4-epoch2"]


def test_a_member_over_the_record_limit_is_refused_before_it_is_inflated(tmp_path):
    log = json.loads(json.dumps(LOG))
    log["samples"][0]["metadata"] = {"pad": "x" * 200_000}  # compresses to almost nothing
    path = _archive(tmp_path / "bomb.eval", log)
    records = list(read_traces(path, limits=Limits(max_record_bytes=100_000)))
    issue = records[0][1]
    assert issue.field == "samples/3_epoch_1.json" and "over the limit" in issue.message
    assert [i.id for _, i in records[1:]] == ["3-epoch2", "4-epoch1", "4-epoch2"]


def test_an_archive_without_samples_or_broken_says_so(tmp_path):
    empty = _archive(tmp_path / "empty.eval", {**LOG, "samples": []})
    assert [i.message for _, i in read_traces(empty)] == [
        "the log holds no samples (was it written with --no-log-samples?)"]
    cut = tmp_path / "cut.eval"
    cut.write_bytes(_archive(tmp_path / "whole.eval", LOG).read_bytes()[:300])
    (loc, issue), = list(read_traces(cut))
    assert loc.endswith("cut.eval:1") and "not a readable .eval archive" in issue.message


def test_assay_run_scores_an_eval_archive(tmp_path):
    out = run_cli(_archive(tmp_path / "run.eval", LOG), "-m", "latency_score")
    assert [(t["task_id"], t["trial"]) for t in out["traces"]] == [("3", 1), ("3", 2), ("4", 1), ("4", 2)]
