"""The judge flags, declared once: every judging command takes them (``judge_options``), and
``assay collect`` takes the ones that apply to its agent and simulated user (``model_options``).

Each flag's destination is the name of its :class:`assay.judge.JudgeOptions` field, so the flags
become one JudgeOptions without a table of names here; ``--no-cache`` is ``cache=False``. Each
default is written once, in ``assay.model._options``; the help texts read it from there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import click

from ..model._options import CONCURRENCY, GROWTH, LOCAL_TIMEOUT, MAX_REPLY_MB, N_CTX, REMOTE_TIMEOUT, RETRIES, \
    JudgeOptions

_FIELDS = frozenset(f.name for f in dataclasses.fields(JudgeOptions))

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _declarations(who: str) -> dict[str, Decorator]:
    """Every judge flag by its JudgeOptions field, its help saying what it applies to (``who``: 'judge',
    'model')."""
    calls = f"{who} calls"
    return {
        "base_url": click.option(
            "--judge-base-url", "base_url", default=None, envvar="ASSAY_JUDGE_BASE_URL",
            help="Base URL of an OpenAI-compatible server (vLLM, llama.cpp, LM Studio, a LiteLLM proxy)."),
        "concurrency": click.option(
            "--concurrency", type=click.IntRange(1), default=None,
            help=f"{calls.capitalize()} in flight at the start (default {CONCURRENCY}); it halves on 429"
                 + (" and may grow up to --max-concurrency." if who == "judge" else ".")),
        "max_concurrency": click.option(
            "--max-concurrency", type=click.IntRange(1), default=None,
            help=f"Let {who} concurrency grow up to this while the provider keeps answering without 429s and "
                 "latency holds (doubling, then one more per round once latency grows). Default: "
                 f"{GROWTH}x --concurrency for hosted APIs and other OpenAI-compatible servers; no growth for "
                 "Ollama, llama.cpp, LM Studio and local:. Equal to --concurrency: pinned."),
        "rpm": click.option("--rpm", type=click.FloatRange(min=0, min_open=True), default=None,
                            help=f"{who.capitalize()} requests per minute."),
        "tpm": click.option("--tpm", type=click.FloatRange(min=0, min_open=True), default=None,
                            help=f"{who.capitalize()} tokens per minute."),
        "timeout": click.option(
            "--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
            help=f"Seconds per {who} call (default {REMOTE_TIMEOUT:g}; {LOCAL_TIMEOUT:g} for a local server; "
                 "none in-process)."),
        "max_tokens": click.option("--max-tokens", type=click.IntRange(1), default=None,
                                   help=f"Most tokens a {who} may write per reply (default: the server's)."),
        "max_reply_mb": click.option(
            "--max-reply-mb", type=click.FloatRange(min=0, min_open=True), default=None,
            help=f"Largest {who} reply accepted, in MiB once decompressed (default {MAX_REPLY_MB}); a larger one "
                 "is refused as an error, not retried. Backends that cannot enforce it refuse the option "
                 "(an in-process local: model: use --max-tokens)."),
        "temperature": click.option("--temperature", type=click.FloatRange(min=0), default=None,
                                    help=f"{who.capitalize()} sampling temperature (default "
                                         f"{JudgeOptions().temperature or 0:g})."),
        "seed": click.option("--seed", type=click.INT, default=None,
                             help=f"{who.capitalize()} sampling seed, where the provider has one."),
        "threads": click.option("--judge-threads", "threads", type=click.IntRange(1), default=None,
                                help="CPU threads of a local:PATH.gguf model (default half the cores)."),
        "n_ctx": click.option("--judge-ctx", "n_ctx", type=click.IntRange(256), default=None,
                              help=f"Context size in tokens of a local:PATH.gguf model (default {N_CTX})."),
        "prompt_style": click.option(
            "--prompt-style", type=click.Choice(["auto", "full", "compact"]), default=None,
            help="How judge metrics ask: the full rubric with quoted evidence, or a compact form (short rubric, "
                 "one-sentence rationale, turn numbers, bounded output) that small local models can follow "
                 "(default auto: compact for models of <= 9B parameters and in-process GGUF judges)."),
        "ordinal_order": click.option(
            "--ordinal-order", type=click.Choice(["auto", "natural", "reversed", "shuffled"]), default=None,
            help="Order of the options of ordinal scales in judge prompts (default auto: shuffled for the full "
                 "form, natural for the compact form)."),
        "logprobs": click.option(
            "--judge-logprobs", "logprobs", type=click.IntRange(1, 20), is_flag=False, flag_value=10, default=None,
            help="Ask the judge for token log-probabilities (OpenAI-compatible servers, local:PATH.gguf), N "
                 "alternatives per token (default 10): yes/no answers get P(yes) in the results' details. Off "
                 "by default (requests unchanged)."),
        "thresholds": click.option(
            "--judge-threshold", "thresholds", multiple=True, metavar="METRIC.QUESTION=P",
            help="Decide a yes/no question by P(yes) >= P where the judge gives probabilities (--judge-logprobs), "
                 "e.g. failure_rate.admits=0.35 (METRIC.SHEET.QUESTION for one sheet's: "
                 "goal_achievement_rate.delivery.got_everything); repeatable ([judge.thresholds] in assay.toml). Fit them with "
                 "benchmarks/fit_thresholds.py."),
        "retries": click.option("--retries", type=click.IntRange(0), default=None,
                                help=f"Retries on transient errors (default {RETRIES})."),
        "budget_usd": click.option(
            "--budget-usd", type=click.FloatRange(min=0), default=None,
            help=f"Stop making {calls} once this much is spent; the rest are not made (reported)."),
        "budget_tokens": click.option("--budget-tokens", type=click.IntRange(0), default=None,
                                      help="The same, in tokens."),
        "dry_run": click.option("--dry-run", is_flag=True, help="Estimate judge calls, tokens and cost; send nothing."),
        "cache": click.option("--cache", "cache", type=click.Path(dir_okay=False), default=None,
                              help=f"Cache file of {who} replies (default: judge.sqlite3 in the user cache dir); "
                                   "a rerun replays them."),
        "no_cache": click.option("--no-cache", is_flag=True,
                                 help=f"Do not read or write the {who} cache, which --no-store leaves on."),
    }


def judge_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add every judge flag to a click command (they arrive as keyword arguments)."""
    for option in reversed(list(_declarations("judge").values())):
        fn = option(fn)
    return fn


def model_options(*names: str, who: str = "model") -> Decorator:
    """The judge flags ``names`` (JudgeOptions fields, and ``no_cache``), for a command whose models are not
    judges (``assay collect``: the agent and the simulated user)."""
    table = _declarations(who)

    def add(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(names):
            fn = table[name](fn)
        return fn
    return add


def pop_judge_flags(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Remove the judge flags from ``kwargs``; return those given, by JudgeOptions field."""
    out = {k: kwargs.pop(k) for k in [*kwargs] if k in _FIELDS}
    out = {k: v for k, v in out.items() if v is not None and v is not False and v != ()}
    if kwargs.pop("no_cache", False):
        out["cache"] = False
    return out
