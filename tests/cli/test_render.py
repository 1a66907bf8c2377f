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


def _in_pty(args: list[str], cols: int = 80, rows: int = 60) -> str:
    """Run ``args`` on a pseudo-terminal of ``cols`` x ``rows``; the screen text, escapes removed."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
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
    return ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r\n", "\n")


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
