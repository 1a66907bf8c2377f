"""``assay collect``: run an agent on a task file, K trials per task, into a trace file."""

from __future__ import annotations

import sys
from typing import Any

import click

from ._common import EXIT_NOT_EVALUATED, EXIT_OK, EXIT_STATUS, debug_option, exit_quickly, handle_errors, \
    open_session, plugin_option, shown
from ._judge_options import model_options, pop_judge_flags
from ._progress import RunProgress

EPILOG = """\b
Exit status (without --score):
  0    every trial was collected (an agent that failed a trial is a failed trace, not an error)
  2    usage or input error (bad options, an invalid task file, code in it that --allow-code does not allow)
  3    not everything could be collected: no trial completed, the agent refused every call,
       or trials were not run (--budget-usd reached, the agent stopped answering)
  130  interrupted (Ctrl-C, SIGTERM); rerun the same command to collect the unfinished trials
With --score: the exit status of `assay run` on the collected traces.
\b
--seed S: trial t samples with S + t where the provider takes a seed. The model flags (--concurrency,
--timeout, --retries, --budget-usd, --cache ...) are the judge flags of `assay run`, applied to the
agent (a chat model) and the simulated user."""


class _TrialProgress(RunProgress):
    """``assay run``'s progress, counting trials of the planned task x trial grid."""

    def __init__(self, total: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.total = total

    def counts(self) -> tuple[str, int, int | None]:
        return "trials", self.traces, self.total


@click.command("collect", epilog=EPILOG)
@click.argument("tasks", type=click.Path(dir_okay=False))
@click.option("--agent", required=True, metavar="SPEC",
              help="The agent: a chat model (openai:MODEL, openai-compatible:MODEL@URL, ollama:MODEL, "
                   "local:PATH.gguf) given the task's tools; http(s)://URL (POST the conversation as JSON); "
                   "module:function (sync or async, messages in); cmd:COMMAND (one JSON line per call).")
@click.option("--user", metavar="MODEL", default=None,
              help="A judge model that plays the user (persona, goal, scenario) after each agent reply until it "
                   "stops or --max-turns. Without it each task is its fixed user turns.")
@click.option("--trials", type=click.IntRange(1), default=1, show_default=True, help="Trials per task.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The trace file (JSON Lines), written when the collection ends; trials a simulated user "
                   "broke go to OUTPUT's name + .simulator-errors.jsonl.")
@click.option("--allow-code", "allow_code", multiple=True, metavar="PREFIX",
              help="Let the task file's tools run code from PREFIX (repeatable): a module prefix (my_project.tools), "
                   "a path (./tools/, tools/book.py), or '*' for any module outside the standard library. Without "
                   "it a task file that names code is refused, with what it would run.")
@click.option("--retry-failed", type=click.IntRange(0), default=0, show_default=True, metavar="N",
              help="Run a trial whose agent failed (an error, a timeout) again, afresh, up to N times; the "
                   "attempts are recorded in the trace.")
@click.option("--max-turns", type=click.IntRange(1), default=None,
              help="Most user turns of a simulated conversation (default: the task's max_turns, else 10).")
@click.option("--temperature", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Sampling temperature of the agent and the simulated user (recorded in each trace).")
@click.option("--fresh", is_flag=True,
              help="Collect every trial again: ignore the journal an interrupted run into -o left.")
@click.option("--agent-env", "agent_env", multiple=True, metavar="NAME",
              help="Pass environment variable NAME to a cmd: agent (repeatable); it gets only PATH, HOME, "
                   "LANG, TMPDIR and the like otherwise, never assay's API keys.")
@click.option("--agent-key-env", metavar="NAME", default=None,
              help="The agent's API key is in environment variable NAME (sent to the agent's endpoint only). "
                   "OPENAI_API_KEY goes only to api.openai.com.")
@click.option("--user-key-env", metavar="NAME", default=None,
              help="The simulated user's API key is in environment variable NAME.")
@click.option("--progress/--no-progress", default=None, help="Progress over the trials (default: on).")
@click.option("--progress-every", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              metavar="SECONDS", help="Seconds between plain progress lines when stderr is not a terminal.")
@click.option("--score", is_flag=True, help="Then score the traces as `assay run OUTPUT` would.")
@click.option("-m", "--metric", "metrics", multiple=True, metavar="NAME[:param=value,...]",
              help="With --score: a metric to run (repeatable; default: every metric the data supports).")
@click.option("--judge", default=None, envvar="ASSAY_JUDGE", help="With --score: the judge model.")
@click.option("--results", "results", multiple=True, type=click.Path(dir_okay=False),
              help="With --score: write results here too (as `assay run -o`).")
@click.option("--store", default=None, type=click.Path(dir_okay=False), help="With --score: the run store file.")
@click.option("--no-store", is_flag=True, help="With --score: do not record the run in the run store.")
@model_options("seed", "max_tokens", "concurrency", "rpm", "timeout", "retries", "budget_usd", "cache",
               "no_cache", who="model")
@plugin_option
@debug_option
@handle_errors
def command(tasks: str, agent: str, user: str | None, trials: int, output: str, allow_code: tuple[str, ...],
            retry_failed: int, max_turns: int | None,
            temperature: float, fresh: bool, agent_env: tuple[str, ...], agent_key_env: str | None,
            user_key_env: str | None, progress: bool | None, progress_every: float, score: bool, metrics: tuple[str, ...],
            judge: str | None, results: tuple[str, ...], store: str | None, no_store: bool,
            plugins: tuple[str, ...], debug: bool, **model_flags: Any) -> None:
    """Run AGENT on every task of TASKS (JSON Lines), --trials times each, and write the traces to -o."""
    import threading

    from .._collect import collect, load_tasks
    from ..errors import ConfigError
    from ..session import stop_on_signals

    if not score and (metrics or results or store or no_store):
        raise ConfigError("-m, --results, --store and --no-store go with --score")
    open_session(None, plugins)
    cache, no_cache = model_flags.get("cache"), model_flags.get("no_cache", False)
    options = pop_judge_flags(model_flags)  # the agent's and the simulated user's, as the judge flags are a judge's
    seed, max_tokens = options.pop("seed", None), options.pop("max_tokens", None)  # per trace: collect's own
    sides = {side: {"api_key": _key(name, flag)} for side, name, flag in
             (("agent_options", agent_key_env, "--agent-key-env"), ("user_options", user_key_env, "--user-key-env"))
             if name is not None}
    task_list = load_tasks(tasks)
    cancel = threading.Event()
    total = len(task_list) * trials
    tracker = _TrialProgress(total, tty=sys.stderr.isatty(), interval=progress_every) \
        if progress is not False else None
    with stop_on_signals(cancel):
        if tracker is not None:
            tracker.__enter__()
        try:
            collected = collect(tasks, agent, user=user, trials=trials, output=output, temperature=temperature,
                                seed=seed, max_turns=max_turns, max_tokens=max_tokens, cancel=cancel, fresh=fresh,
                                agent_env=agent_env, allow_code=allow_code, retry_failed=retry_failed, **sides,
                                on_trial=(lambda trace, fault: tracker.trace_done()) if tracker else None,
                                **options)
        finally:
            if tracker is not None:
                tracker.__exit__(None, None, None)
    exit_quickly()
    if collected.interrupted:
        kept = len(collected.traces) + len(collected.simulator_errors)
        say(f"interrupted after {kept} of {total} trials; rerun the same command to collect the "
            "unfinished ones (finished trials are kept)")
        sys.exit(EXIT_STATUS["interrupted"])
    say(summary_line(collected, len(task_list), trials, output))
    for trace in collected.failed[:5]:
        say(f"  failed {trace.id}: {trace.metadata.get('error')}")
    for trace in collected.simulator_errors[:5]:
        say(f"  simulator error {trace.id}: {trace.metadata.get('simulator_error')}")
    if collected.not_collected:
        _, _, why = collected.not_collected[0]
        say(f"could not collect {len(collected.not_collected)} of {total} trials ({why}); the others are in "
            f"{output}: rerun the same command to collect the missing ones")
        sys.exit(EXIT_NOT_EVALUATED)
    if not collected.traces or len(collected.failed) == len(collected.traces):
        say("could not collect: no trial completed")
        sys.exit(EXIT_NOT_EVALUATED)
    if not score:
        sys.exit(EXIT_OK)
    from . import run

    click.get_current_context().invoke(run.command, paths=(output,), metrics=metrics, judge=(judge,) if judge else (),
                                       outputs=results, store=store, no_store=no_store, debug=debug,
                                       no_cache=no_cache, cache=cache)


def say(text: str) -> None:
    """One line on stderr as ``assay run`` prints them: secrets redacted, and the control characters of
    task ids, agent errors and paths (a title change, a screen clear, a bidi override) shown escaped."""
    from .._secrets import redact

    click.echo(shown(redact(text)), err=True)


def _key(name: str, flag: str) -> str:
    import os

    from ..errors import ConfigError

    value = os.environ.get(name)
    if not value:
        raise ConfigError(f"{flag} {name}: no such environment variable is set")
    return value


def summary_line(collected: Any, tasks: int, trials: int, output: str) -> str:
    """``collected 9 traces (3 tasks x 3 trials) into t.jsonl: 8 completed, 1 failed; ...``."""
    failed = len(collected.failed)
    parts = [f"{len(collected.traces) - failed} completed", f"{failed} failed"]
    if collected.simulator_errors:
        parts.append(f"{len(collected.simulator_errors)} simulator errors (not scored)")
    retried = sum(1 for t in collected.traces if "attempts" in t.metadata.get("collect", {}))
    if retried:
        parts.append(f"{retried} run again after a failure (--retry-failed)")
    if collected.resumed:
        parts.append(f"{collected.resumed} kept from the interrupted run")
    return (f"collected {len(collected.traces)} traces ({tasks} tasks x {trials} trials) into {output}: "
            + ", ".join(parts))
