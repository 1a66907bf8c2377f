"""The report's per-task grid: a cell per trial (pass / fail / failed run / excluded), each opening its trace."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from assay.cli import main


def record(task: str, trial: int, status: str = "completed", latency: float = 0, **metadata: object) -> dict:
    return {"id": f"{task}#{trial}", "task_id": task, "trial": trial, "status": status, "latency_ms": latency,
            "messages": [{"role": "user", "content": "book it"}, {"role": "assistant", "content": "booked"}],
            "metadata": metadata}


def test_the_report_draws_each_tasks_trials_and_links_every_cell_to_its_trace(tmp_path):
    records = [record("flaky", 0), record("flaky", 1, latency=60_000), record("flaky", 2, "failed", error="timeout"),
               record("steady", 0), record("steady", 1), record("steady", 2, harness_fault="tools",
                                                                          harness_error="tool server crashed")]
    data = tmp_path / "t.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    page = tmp_path / "r.html"
    r = CliRunner().invoke(main, ["run", str(data), "-m", "latency_score", "--no-store", "--html", str(page),
                                  "--max-errors", "1"], catch_exceptions=False)
    assert r.exit_code == 1, r.output  # a failed trial fails the run
    html = page.read_text()
    section = re.search(r'<section id="tasks">.*?</section>', html, re.S).group(0)
    assert "Per task (2 tasks, 1 flaky)" in section
    rows = re.findall(r'<tr><td class="id">(\w+)</td>.*?</tr>', section, re.S)
    assert rows == ["flaky", "steady"]
    cells = re.findall(r'<span class="cell ([\w-]+)" title="trial (\d)[^"]*"><a href="#trace-(\d+)">', section)
    assert cells == [("pass", "0", "1"), ("fail", "1", "2"), ("failed-run", "2", "3"),
                     ("pass", "0", "4"), ("pass", "1", "5"), ("excluded", "2", "6")]
    for _, _, view in cells:  # every link lands on a trace view of the page
        assert f'id="trace-{view}"' in html
    assert "tool server crashed" in section and "timeout" in section
    assert "1 failed run<" in section and "1 excluded" in section
