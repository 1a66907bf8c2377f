"""The run table at 80 columns, in a real pseudo-terminal and in a pipe: full names, one-line intervals."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[2] / "examples" / "traces.jsonl"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
ASSAY = [sys.executable, "-m", "assay"]


def _in_pty(args: list[str], cols: int = 80, rows: int = 60, raw: bool = False, cwd: Path | None = None) -> str:
    """Run ``args`` on a pseudo-terminal of ``cols`` x ``rows``; the screen text, escapes removed (``raw``: kept)."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True, cwd=cwd)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 30)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=30)
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return text if raw else ANSI.sub("", text)


def _names() -> list[str]:
    import json

    out = subprocess.run([*ASSAY, "run", str(EXAMPLES), "--no-store", "-f", "json"], capture_output=True, text=True)
    return list(json.loads(out.stdout)["summary"])


def _check(screen: str, names: list[str]) -> None:
    lines = screen.splitlines()
    assert lines and max(len(line.rstrip()) for line in lines) <= 80, "a line is wider than the terminal"
    rows = {}
    for line in lines:
        first = line.split(" ", 1)[0]
        if first in names:
            rows[first] = line
    assert sorted(rows) == sorted(names), "a metric name is cut or wrapped"  # tool_se… twice used to be ambiguous
    assert "…" not in "".join(rows.values())
    latency = rows["latency_score"].split()
    assert latency[1:5] == ["12", "7", "0", "0"]  # n, tasks, null, errored: 0 shown, not blank
    assert re.fullmatch(r"0\.86 \[[01]\.\d\d,[01]\.\d\d\]", " ".join(latency[5:7]))  # the interval on the row's own line
    assert rows["tool_selection_accuracy"].split()[2] == "2"  # from 2 tasks: [0.00,1.00] says little
    assert "no score for cost_efficiency, token_efficiency: no quality score" in " ".join(screen.split())


@pytest.mark.skipif(not hasattr(pty, "openpty") or sys.platform == "win32", reason="needs a POSIX pty")
def test_run_table_fits_80_columns_in_a_terminal():
    screen = _in_pty([*ASSAY, "run", str(EXAMPLES), "--no-store"])
    _check(screen, _names())
    assert "4 trace(s) failed" in screen


def test_run_table_fits_80_columns_in_a_pipe():
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run([*ASSAY, "run", str(EXAMPLES), "--no-store"], capture_output=True, text=True, env=env)
    assert out.returncode == 1
    _check(out.stdout, _names())


needs_pty = pytest.mark.skipif(not hasattr(pty, "openpty") or sys.platform == "win32", reason="needs a POSIX pty")


@needs_pty
def test_with_outputs_the_terminal_still_gets_the_table_and_the_failed_list(tmp_path):
    screen = _in_pty([*ASSAY, "run", str(EXAMPLES), "--no-store", "--no-progress", "-o", "r.jsonl", "-o", "r.html"],
                     cwd=tmp_path)
    _check(screen, _names())
    assert "4 trace(s) failed" in screen and "  support-refund-2 " in screen
    assert screen.rstrip().splitlines()[-1] == "jsonl results written to r.jsonl; report written to r.html"
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 13  # 12 traces and the summary record
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


@needs_pty
def test_quiet_leaves_only_the_count_on_the_terminal(tmp_path):
    screen = _in_pty([*ASSAY, "run", str(EXAMPLES), "--no-store", "--no-progress", "-q", "-o", "r.json"], cwd=tmp_path)
    assert screen.strip().splitlines() == ["12 traces: 8 passed, 4 failed, 0 unscored; 0 input records skipped"]
    assert (tmp_path / "r.json").exists()


@needs_pty
def test_user_data_prints_as_written_no_highlighting_markup_or_emoji(tmp_path):
    import json

    weird = "order-42 :x: [red]boom[/red] /tmp/a.txt"
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"id": weird, "turns": [{"input": "q", "output": "a", "tool_calls": [{"name": "bad"}]}],
                             "expected": {"tool_calls": [{"name": "search"}]}}) + "\n")
    raw = _in_pty([*ASSAY, "run", str(p), "--no-store", "--no-progress", "-m", "tool_selection_accuracy"], cols=120,
                  raw=True)
    assert weird in raw  # one run of plain characters: no colour code inside the digits or the path, no emoji
    assert "\u274c" not in raw
    assert "1 trace(s) failed" in ANSI.sub("", raw)
    line = next(x for x in raw.splitlines() if "tool_selection_accuracy 0.00<0.70" in x)
    assert "0.00<0.70" in line  # scores are not highlighted as numbers either
