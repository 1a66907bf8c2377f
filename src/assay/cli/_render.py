"""Terminal rendering of run results (rich)."""

from __future__ import annotations

import errno
import functools
import re
from typing import Any

from ..model import RunResult
from ..model._status import apart
from ._common import shown


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _below(score: float | None, threshold: float | None) -> str:
    """``score<threshold`` with as many digits as it takes for the two to differ (never "0.70<0.70")."""
    if score is None or threshold is None:
        return f"{_fmt(score, 2)}<{_fmt(threshold, 2)}"
    return "<".join(apart(score, threshold))


def _ci(ci: Any, digits: int = 2) -> str:
    return "" if not ci else f" [{ci[0]:.{digits}f},{ci[1]:.{digits}f}]"


def _pct_ci(ci: Any) -> str:
    return "" if not ci else f" [{100 * ci[0]:.0f},{100 * ci[1]:.0f}]"


def one_line(result: RunResult) -> str:
    r = result.run
    runs = f" ({r.n_failed_runs} failed run{'s' if r.n_failed_runs != 1 else ''})" if r.n_failed_runs else ""
    excluded = r.n_excluded or 0
    unscored = r['n_traces'] - r['n_passed'] - r['n_failed'] - excluded
    return (f"{r['n_traces']} traces: {r['n_passed']} passed, {r['n_failed']} failed{runs}, "
            f"{unscored} unscored" + (f", {excluded} excluded (harness faults)" if excluded else "")
            + f"; {r['n_input_issues']} input record{'' if r['n_input_issues'] == 1 else 's'} skipped")


def outcome_lines(result: RunResult) -> list[str]:
    """What failed runs and harness faults did to the counts: never silent."""
    r, out = result.run, []
    if r.n_failed_runs:
        out.append(f"{r.n_failed_runs} trial(s) failed because the agent's run failed (trace status 'failed'): "
                   "counted as failed trials whatever their metrics say")
    for kind, e in (r.excluded or {}).items():
        why = str(e.get("reason") or "").removeprefix(f"{kind}:").strip()
        out.append(f"{e.get('n')} trial(s) excluded from every statistic: harness fault '{kind}'"
                   + (f" (first: {why[:200]})" if why else "") + "; they count against --max-errors")
    return out


TASKS_SHOWN = 20
"""Tasks listed in the terminal's per-task table (the results file has every task up to 20,000)."""


def task_lines(result: RunResult) -> list[str]:
    """The per-task reliability table (``statistics.trials.tasks``): flaky and weakest tasks first."""
    trials = (result.statistics or {}).get("trials") or {}
    tasks = trials.get("tasks") or []
    if not tasks:
        return []
    k = trials.get("per_task_k") or 0
    ranked = sorted(tasks, key=lambda t: (not t.get("flaky"), t["pass_rate"] if t.get("pass_rate") is not None else 2))
    width = min(40, max(4, *(len(str(t["task_id"])) for t in ranked[:TASKS_SHOWN])))
    head = f"{'task':<{width}}  trials  passed  pass rate [CI]    pass^{k}  notes"
    total = len(tasks) + int(trials.get("tasks_omitted") or 0)
    lines = [f"per task ({total} tasks, {trials.get('n_flaky', 0)} flaky; pass^{k}: at the largest k every "
             f"task has):", head]
    for t in ranked[:TASKS_SHOWN]:
        rate = "—" if t.get("pass_rate") is None else f"{t['pass_rate']:.2f}{_ci(t.get('pass_rate_ci'))}"
        notes = [n for n in ("flaky" if t.get("flaky") else "",
                             f"{t['failed_runs']} failed run{'s' if t['failed_runs'] != 1 else ''}"
                             if t.get("failed_runs") else "",
                             f"{t['excluded']} excluded" if t.get("excluded") else "",
                             f"{t['unscored']} unscored" if t.get("unscored") else "") if n]
        name = str(t["task_id"])
        name = name if len(name) <= width else name[:width - 1] + "…"
        lines.append(f"{name:<{width}}  {t['trials']:>6}  {t['passed']:>6}  {rate:<16}  "
                     f"{_fmt(t.get('pass_pow_k'), 2):>6}  {', '.join(notes)}")
    if total > TASKS_SHOWN:
        where = ("every task in the results file: statistics.trials.tasks" if total == len(tasks) else
                 f"the flaky and weakest {len(tasks)} in the results file: statistics.trials.tasks")
        lines.append(f"... and {total - TASKS_SHOWN} more tasks ({where})")
    return lines


def prepare() -> None:
    """Import what :func:`table` needs (rich: ~25 ms), in the background while a run's last replies come
    (``Evaluation.near_end``), so that the table follows the last reply at once."""
    import rich.box
    import rich.console
    import rich.markup
    import rich.padding
    import rich.table
    import rich.text  # noqa: F401

    from . import _summary  # noqa: F401


def plain_console(**kw: Any) -> Any:
    """A rich console that leaves user data alone: no number/path highlighting, no ``:name:`` emoji; a
    reader that went away (``| head``) is a BrokenPipeError for ``handle_errors`` (rich would exit 1 itself,
    the status of a failed threshold)."""
    return _plain_console_class()(highlight=False, emoji=False, **kw)


@functools.cache
def _plain_console_class() -> Any:
    from rich.console import Console

    class PlainConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    return PlainConsole


def _text(*parts: Any) -> Any:
    """``Text`` from ``(string, style)`` pairs or plain strings: user data is never parsed as markup or emoji,
    and its control characters are shown escaped, never sent to the terminal (``_common.shown``)."""
    from rich.text import Text
    return Text.assemble(*((shown(p) if isinstance(p, str) else (shown(p[0]), *p[1:])) for p in parts))


def escape(text: str) -> str:
    """User data for a rich markup string: control characters shown escaped, ``[`` not read as markup."""
    from rich.markup import escape as markup_escape
    return markup_escape(shown(text))


def table(result: RunResult, console: Any = None, *, judge_line: bool = True) -> None:
    """The summary table, grouped by dimension, with full metric names: it fits 80 columns for names up to
    26 characters (longer ones wrap, never cut), each interval on one line, counts as numbers (0, not blank).

    Trace ids, metric names, sources, reasons and model names are user data: they go in as ``Text``,
    so ``[red]``, ``:x:`` or digits in them print as written. ``judge_line``: end with the judge's calls,
    errors and cost (``assay run`` prints that line on stderr instead, unwrapped)."""
    from rich import box
    from rich.padding import Padding
    from rich.table import Table

    from ._summary import judge_summary

    console = console or plain_console()
    t = Table(title="assay results", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
              padding=0, show_edge=False)  # the box draws one space between columns
    t.add_column("metric", justify="left", overflow="fold")
    for col in ("n", "tasks", "null", "err", "mean [CI]", "pass% [CI]", "thr"):
        t.add_column(col, justify="right", no_wrap=True)
    by_dim: dict[str, list[str]] = {}
    for name, s in result.summary.items():
        by_dim.setdefault(s.dimension, []).append(name)
    nulls: dict[str, list[str]] = {}
    for dim, names in by_dim.items():
        t.add_row(_text((f"{dim}:", "bold")), *[""] * 7)
        for name in names:
            s = result.summary[name]
            style = "" if s.pass_rate is None else ("green" if s.pass_rate == 1 else "red" if s.pass_rate < 0.5 else "yellow")
            rate = "—" if s.pass_rate is None else f"{100 * s.pass_rate:.0f}{_pct_ci(s.pass_rate_ci)}"
            if s.n == 0:
                nulls.setdefault(s.null_reason or "no score", []).append(name)
            t.add_row(_text(name), str(s.n), str(s.n_tasks if s.n_tasks is not None else 0 if s.n == 0 else "—"),
                      str(s.n_null), str(s.n_errored), _fmt(s.mean, 2) + _ci(s.mean_ci), _text((rate, style)),
                      _fmt(s.threshold, 2))
    console.print(t)
    console.print("[dim]n: traces scored, from that many distinct tasks (the intervals rest on tasks); null: no "
                  "score; err: metric or judge failed; pass% [CI]: pass rate and interval in %; thr: threshold[/]",
                  highlight=False)
    for why, names in nulls.items():  # why a metric shows no score at all, said here and not only in JSON/HTML
        console.print(_text(("no score", "yellow"), f" for {', '.join(names)}: {why}"))
    by_reason: dict[str, list[str]] = {}
    for name, why in result.run.get("skipped_metrics", {}).items():
        by_reason.setdefault(why, []).append(name)
    for why, names in by_reason.items():  # once per reason, not per metric or trace
        console.print(_text((f"skipped {len(names)} metric(s) ({', '.join(names)}): {why}", "dim")))
    line = passk_line(result)
    if line:
        console.print(_text(line))
    for note in outcome_lines(result):
        console.print(_text((note, "yellow")))
    if line and (rows := task_lines(result)):
        console.print()
        for row in rows:
            console.print(_text(row))
    failed = [tr for tr in result.traces if tr.passed is False] or result.failed
    n_failed = len(failed) if result.traces else result.run.get("n_failed", len(failed))
    if failed:
        console.print()
        console.print(_text((f"{n_failed} trace(s) failed", "bold red")))
        for tr in failed[:10]:
            bad = [f"{n} {_below(r.score, r.threshold)}" for n, r in tr.metrics.items()
                   if r.passed is False and not (r.details and r.details.get("failed_trial"))]
            if tr.outcome is not None:
                bad.insert(0, tr.outcome_reason or "the agent's run failed")
            dims = [f"{d} {_below(v.score, v.threshold)}" for d, v in tr.dimensions.items() if v.passed is False]
            console.print(Padding(_text((str(tr.id), "bold"), *((" ", (str(tr.source), "dim")) if tr.source else ())),
                                  (0, 0, 0, 2), expand=False))
            console.print(Padding(_text(", ".join(bad + [f"dimension {x}" for x in dims])), (0, 0, 0, 4), expand=False))
        if n_failed > 10:
            console.print(f"  ... and {n_failed - 10} more", highlight=False)
    summary = judge_summary(result.run) if judge_line else None
    if summary:
        console.print()
        console.print(_text(summary))
    console.print(_text(one_line(result)))


def passk_line(result: RunResult) -> str | None:
    """``pass@k / pass^k over 3 tasks x 3 trials (trace passed): k=1 0.67 / 0.67, ...`` when tasks have trials."""
    trials = (result.statistics or {}).get("trials") or {}
    rows = trials.get("trace_passed") or []
    per_task = trials.get("trials_per_task") or {}
    if not rows or (per_task.get("max") or 1) < 2:
        return None
    n = per_task["min"] if per_task.get("min") == per_task.get("max") else f"{per_task.get('min')}-{per_task['max']}"

    def fmt(v: Any) -> str:
        return "—" if v is None else f"{v:.2f}"
    total = trials.get("n_tasks")
    uneven = any(r.get("n_tasks") != total for r in rows)

    def on(r: Any) -> str:  # how many tasks the row rests on, when not all of them
        return f" ({r.get('n_tasks')} tasks)" if uneven else ""
    shown = ", ".join(f"k={r['k']} {fmt(r.get('pass_at_k'))} / {fmt(r.get('pass_pow_k'))}{on(r)}" for r in rows)
    return f"pass@k / pass^k over {total} tasks x {n} trials (a trial passes when its trace does): {shown}"


def _when(iso: str | None) -> str:
    return "" if not iso else iso.replace("T", " ").replace("Z", "")[:19]


def _status_style(status: str) -> str:
    return {"completed": "green", "running": "yellow", "failed": "red", "interrupted": "magenta",
            "incomplete": "magenta"}.get(status, "")


def _judge_of(info: Any) -> str:
    j = info.judge if isinstance(info.judge, dict) else {}
    return str(j.get("model") or "—")


def _name(info: Any) -> str:
    return str(getattr(info, "name", None) or (info.config or {}).get("name") or "")


def _tags(info: Any) -> str:
    tags = getattr(info, "tags", None) or (info.config or {}).get("tags") or {}
    return ",".join(f"{k}={v}" for k, v in tags.items())


def runs_table(infos: list[Any], console: Any = None) -> None:
    """``assay runs``: one row per stored run, newest first (name and tags when any run has them)."""
    from pathlib import PurePath

    from rich import box
    from rich.table import Table

    console = console or plain_console()
    labelled = any(_name(r) or _tags(r) for r in infos)
    t = Table(title="assay runs", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=0,
              show_edge=False)
    # Below 100 columns a judge and a cost column that would hold only "—" are left out (they cut the header
    # to "jud…" and the status to "interrupt" at 80), and the status column is as wide as the longest shown.
    unused = {"judge", "cost"} if not any(_judge_of(r) != "—" or r.cost_usd is not None for r in infos) else set()
    status_width = max([len("status"), *(len(r.status) for r in infos)])
    for col, just in (("id", "left"), ("started (UTC)", "left"), ("inputs", "left"), ("traces", "right"),
                      ("pass", "right"), ("metrics", "right"), ("judge", "left"), ("cost", "right"), ("status", "left")):
        if col in unused and console.width < 100:
            continue
        short = ({"inputs": 14, "judge": 16} if console.width >= 100 or unused else {"inputs": 9, "judge": 6}).get(col)  # names may be cut here; `runs show` has them whole
        t.add_column(col, justify=just, no_wrap=True, overflow="ellipsis" if short else "fold",  # type: ignore[arg-type]
                     max_width=short, min_width=None if short else {"id": 13, "started (UTC)": 16,
                                                                    "status": status_width}.get(col, len(col)))
    wide = console.width >= 110
    if labelled and wide:
        t.add_column("name / tags", overflow="fold", ratio=1, min_width=10)
    for r in infos:
        inputs = ", ".join(PurePath(str(i.get("path"))).name for i in r.inputs)
        rate = "—" if r.pass_rate is None else f"{r.pass_rate:.0%}"
        cost = "—" if r.cost_usd is None else f"${r.cost_usd:.4f}"
        style = _status_style(r.status)
        row = [r.id, _when(r.started_at)[:16], _text(inputs), str(r.n_traces), rate, str(len(r.metrics)),
               *(() if unused and console.width < 100 else (_text(_judge_of(r)), cost)), _text((r.status, style))]
        if labelled and wide:
            row.append(_text(" ".join(x for x in (_name(r), _tags(r)) if x)))
        t.add_row(*row)
    if labelled and not wide:  # narrow terminal: names and tags under the table rather than squeezed into it
        t.caption_justify = "left"
        t.caption = _text("\n".join(f"{r.id}  {_name(r)}" + (f"  ({_tags(r)})" if _tags(r) else "") for r in infos
                                    if _name(r) or _tags(r)))
    console.print(t)
    if not infos:
        console.print("[dim]no runs stored yet: `assay run` records every run[/]")


def run_detail(info: Any, result: RunResult, console: Any = None) -> None:
    """``assay runs show``: the run's information, its metrics and configuration, then the summary table."""
    console = console or plain_console()
    title = f"run {info.id}" + (f" ({_name(info)})" if _name(info) else "")
    console.print(_text((title, "bold"), "  ", (info.status, _status_style(info.status))))
    if _tags(info):
        console.print(_text(f"tags {_tags(info)}"))
    console.print(f"started {_when(info.started_at)} UTC" + (f", finished {_when(info.finished_at)}" if info.finished_at else ""))
    for i in info.inputs:
        digest = f"  sha256 {i['sha256'][:16]}…" if i.get("sha256") else ""
        console.print(_text(f"input {i.get('path')}{digest}"))
    console.print(_text("judge " + (str(info.judge.get("model")) if info.judge else "none")))
    cost = "—" if info.cost_usd is None else f"${info.cost_usd:.4f}"
    console.print(f"tokens {info.tokens}, cost {cost}")
    if info.metrics:
        console.print(f"metrics ({len(info.metrics)}):")
        for m in info.metrics:
            params = ", ".join(f"{k}={v}" for k, v in (m.get("params") or {}).items())
            console.print(_text(f"  {m.get('name')}" + (f" v{m['version']}" if m.get("version") else ""),
                                *((("  " + params, "dim"),) if params else ())))
    config = info.config or {}
    for key in ("dimension_weights", "dimension_thresholds"):
        if config.get(key):
            console.print(_text(f"{key.replace('_', ' ')}: " + ", ".join(
                f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}" for k, v in config[key].items())))
    for key in ("input_format", "strict"):
        if config.get(key):
            console.print(_text(f"{key.replace('_', ' ')}: {config[key]}"))
    if info.error:
        console.print(_text((f"error: {info.error}", "red")))
    if info.status in ("running", "incomplete", "failed", "interrupted"):
        console.print(f"[yellow]{info.n_traces} trace(s) recorded; summaries below cover those only[/]")
    table(result, console)


def dry_run(result: RunResult) -> str:
    """What a dry run estimates, and what it cannot see."""
    j = result.run.judge or {}
    cost = j.get("estimated_cost_usd")
    lines = [f"dry run: ~{j.get('estimated_calls', 0)} judge calls, ~{j.get('estimated_input_tokens', 0)} input + "
             f"~{j.get('estimated_output_tokens', 0)} output tokens, "
             + ("cost unknown (no price for this model)" if cost is None else f"~${cost:.4f}")]
    multi = [f"{m['name']} ({m['judge_calls']})" for m in result.run.get("metrics", [])
             if max(map(int, re.findall(r"\d+", str(m.get("judge_calls", "0")))), default=0) > 1]
    if multi:
        lines.append("these metrics make several sequential calls; the estimate counts their first call only: "
                     + ", ".join(multi))
    return "\n".join(lines)


CATALOG_TABLE_WIDTH = 140
"""Below this many columns ``assay metrics`` prints a list, not a table: five columns in 80 would
leave the formula a dozen characters, one word per line."""


def catalog(specs: Any, origins: dict[str, str], defaults: set[str], console: Any = None) -> None:
    """The metric catalog: a table on a wide terminal; else one entry per metric, its name,
    dimension and requirements on one line and its formula wrapped under it."""
    import textwrap

    from rich.table import Table

    console = console or plain_console()
    rows = []
    for s in sorted(specs, key=lambda s: (origins[s.name] != "built-in", s.dimension, s.name)):
        name = s.name + ("" if s.name in defaults else " (opt-in)" if origins[s.name] == "built-in" else "")
        rows.append((name, s.dimension, ", ".join(map(str, s.requires)) or "—", s.summary, origins[s.name]))
    if console.width >= CATALOG_TABLE_WIDTH:
        t = Table(title=f"{len(rows)} metrics", title_justify="left")
        for col in ("metric", "dimension", "requires", "formula / basis", "from"):
            t.add_column(col, overflow="fold")
        for row in rows:
            t.add_row(*(_text(cell) for cell in row))
        console.print(t)
        return
    width = max(console.width - 1, 40)
    console.print(_text((f"{len(rows)} metrics", "bold"), " (name · dimension · requires; formula below)"))
    for name, dimension, requires, summary, origin in rows:
        head = textwrap.wrap(f"{name} · {dimension} · {requires}" + ("" if origin == "built-in" else f" · from {origin}"),
                             width, subsequent_indent="  ", break_on_hyphens=False)
        body = _wrap(summary, width, "    ")
        first = head[0]
        console.print(_text((first[:len(name)], "bold"), first[len(name):]), *map(_text, head[1:]), *map(_text, body),
                      sep="\n", soft_wrap=True)


def _wrap(text: str, width: int, indent: str) -> list[str]:
    """*text* wrapped to *width* under *indent*, narrowing the lines a little rather than leaving one
    word alone on the last (a lone word reads as a fragment)."""
    import textwrap

    lines: list[str] = []
    for w in range(width, max(width - 24, 20), -1):
        lines = textwrap.wrap(text, w, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)
        if len(lines) < 2 or (len(lines[-1].split()) > 1 and len(lines[-1].strip()) >= 10):
            return lines
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)


def table_text(result: RunResult) -> str:
    """The table as plain text, 100 columns (``-o results.txt``)."""
    import io

    from rich.console import Console

    buf = io.StringIO()
    table(result, Console(file=buf, width=100, color_system=None, force_terminal=False, emoji=False,
                          highlight=False))
    return buf.getvalue()
