"""``RunResult.run`` is a typed RunRecord; results files and stores written before it still read.

The files in ``tests/data/before_runrecord`` were written by assay at commit 9953cb2 (``run`` a dict):
``assay run examples/traces.jsonl -m answer_relevance -m tool_selection_accuracy -m latency_score
--judge openai-compatible:scripted@... --name old-run --tag team=a --max-errors 5% --store runs.sqlite3
-o results.json -o results.jsonl``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest

from assay.model import RunRecord, RunResult, encode_run, read_results
from assay.store import RunStore

OLD = Path(__file__).resolve().parents[1] / "data" / "before_runrecord"


@pytest.mark.parametrize("name", ["results.json", "results.jsonl"])
def test_an_old_results_file_reads_into_a_typed_record_and_writes_back_the_same_run(name):
    result = read_results((OLD / name).read_bytes(), name)
    run = result.run
    assert type(run) is RunRecord
    assert (run.n_traces, run.n_passed, run.n_failed, run.name, run.tags, run.max_errors) == \
        (12, 9, 3, "old-run", {"team": "a"}, 0.05)
    assert run.judge["model"] == "openai-compatible:scripted" and run.judge["calls"] == 19
    assert run.input_files[0]["bytes"] == 12597 and run.planned_judge_calls == 19
    assert result.status == "failed"  # max_errors read as the number it was stored as
    old = json.loads((OLD / "results.json").read_bytes())["run"]
    assert run.to_dict() == old  # every key, in the order it was written
    assert list(json.loads(encode_run(result))["run"]) == list(old)


def test_an_old_store_loads_with_its_run_information(tmp_path):
    store = tmp_path / "runs.sqlite3"
    shutil.copy(OLD / "runs.sqlite3", store)
    (info,) = RunStore(store).runs()
    loaded = RunStore(store).load(info.id)
    assert type(loaded.run) is RunRecord and loaded.run.run_id == info.id and loaded.run.status == "completed"
    assert loaded.run.n_traces == 12 and loaded.run.name == "old-run" and len(loaded.traces) == 12
    from_file = read_results((OLD / "results.json").read_bytes(), "results.json")
    assert loaded.traces == from_file.traces and loaded.summary == from_file.summary


def test_dict_style_access_still_works_for_code_written_against_the_dict():
    run = RunRecord(n_traces=3, judge={"model": "m"})
    assert run["n_traces"] == 3 and run.get("run_id") is None and "interrupted" not in run
    assert {**run} == {"n_traces": 3, "judge": {"model": "m"}} and dict(run.items()) == {**run}
    run["interrupted"] = True
    run.update(name="x", custom={"mine": 1})  # a key without a field is kept, and written
    assert run.interrupted is True and run.name == "x" and run["custom"] == {"mine": 1}
    assert run.to_dict() == {"n_traces": 3, "judge": {"model": "m"}, "interrupted": True, "name": "x",
                             "custom": {"mine": 1}}
    with pytest.raises(KeyError):
        run["run_id"]
    assert RunResult([], {}, {"n_traces": 1, "future_key": 2}).run.other == {"future_key": 2}


def test_an_odd_value_in_an_old_file_is_kept_rather_than_failing_the_read():
    run = RunRecord.from_dict({"n_traces": "twelve", "repeats": 2, "name": "x"})
    assert run.repeats == 2 and run.name == "x" and run.n_traces is None and run.other == {"n_traces": "twelve"}
    assert msgspec.json.decode(msgspec.json.encode(run.to_dict())) == {"repeats": 2, "name": "x",
                                                                       "n_traces": "twelve"}
