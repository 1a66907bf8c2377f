"""``assay metrics`` reads at 80 columns: in a pipe and on a real terminal, a list, never one word per line."""

from __future__ import annotations

import re

import pytest

from tests.support.cli import cli_env, run_pipe, run_pty

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _check_narrow(lines: list[str], width: int) -> None:
    assert len(lines) > 70, lines[:5]
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    entries = [line for line in lines if " · " in line and not line.startswith(" ")]
    assert len(entries) >= 70 and entries[0].split(" · ")[0]  # name · dimension · requires, one line each
    formula = [line for line in lines if line.startswith("    ")]
    assert formula and all(len(line.split()) > 1 for line in formula)  # no fragment of one word
    assert not any("┃" in line or "│" in line for line in lines)


def test_a_pipe_gets_the_list_at_80_columns(tmp_path):
    env = cli_env(tmp_path)
    del env["COLUMNS"]  # `assay metrics | cat`: no terminal, no COLUMNS
    r = run_pipe(["metrics"], env)
    assert r.returncode == 0, r.stderr
    _check_narrow(r.stdout.splitlines(), 80)
    assert "tool_sequence_correctness · tool_calling · expected_tools" in r.stdout


@pytest.mark.parametrize("columns", [80, 60])
def test_a_narrow_terminal_gets_the_list(tmp_path, columns):
    env = cli_env(tmp_path, COLUMNS=str(columns))
    r = run_pty(["metrics"], env, columns=columns)
    assert r.returncode == 0, r.output
    _check_narrow([ANSI.sub("", line) for line in r.output.replace("\r\n", "\n").splitlines()], columns)


def test_a_wide_terminal_keeps_the_table(tmp_path):
    r = run_pipe(["metrics"], cli_env(tmp_path, COLUMNS="200"))
    assert r.returncode == 0 and "formula / basis" in r.stdout and "┃" in r.stdout
