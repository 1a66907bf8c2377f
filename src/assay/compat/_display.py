"""Console output of the compat layers (``verbose=True``): rich boxes, built only when asked for."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

MAX_LOG_LINES = 20


def _console() -> Any:
    from rich.console import (
        Console,  # imported here: verbose output is the only user of rich
    )

    return Console(highlight=False, soft_wrap=False)


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "n/a" if value is None else format(value, spec)


def result_box(name: str, score: float | None, success: bool | None, reason: str, cost: float | None,
               log: Mapping[str, Any] | None = None, *, subject: str | None = None) -> None:
    """One metric result as a coloured box: status, score bar, cost, reason, the start of the log."""
    from rich.panel import Panel
    from rich.text import Text

    status = ("PASSED", "green") if success else ("ERROR", "yellow") if score is None else ("FAILED", "red")
    body = Text()
    body.append("Status:  ", style="bold").append(status[0], style=f"bold {status[1]}").append("\n")
    filled = 0 if score is None else round(40 * score)
    body.append("Score:   ", style="bold").append(_fmt(score), style="yellow")
    body.append(f" [{'█' * filled}{'░' * (40 - filled)}]\n")
    body.append("Cost:    ", style="bold").append("unknown" if cost is None else f"${cost:.6f}", style="blue")
    body.append("\n")
    body.append("Reason:  ", style="bold").append(reason or "-", style="dim")
    if log:
        lines = json.dumps(log, indent=2, ensure_ascii=False, default=str).splitlines()
        body.append("\n\nEvaluation log:\n", style="bold")
        body.append("\n".join(lines[:MAX_LOG_LINES]), style="dim")
        if len(lines) > MAX_LOG_LINES:
            body.append(f"\n... ({len(lines) - MAX_LOG_LINES} more lines)", style="dim")
    title = f"{name}" + (f" - {subject}" if subject else "")
    _console().print(Panel(body, title=title, border_style="cyan", expand=False))


def sessions_table(title: str, rows: Iterable[Mapping[str, Any]], columns: Iterable[str]) -> None:
    """A table with one row per session (Fair Forge's verbose summary)."""
    from rich.table import Table

    cols = list(columns)
    table = Table(title=title)
    for c in cols:
        table.add_column(c)
    for row in rows:
        table.add_row(*(str(row.get(c, "")) for c in cols))
    _console().print(table)
