"""The judge flags of ``assay run`` (and the other judging commands), gathered in one decorator.

Each flag's destination is the name of its :class:`assay.judge.JudgeOptions` field, so the flags
become one JudgeOptions without a table of names here; ``--no-cache`` is ``cache=False``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import click

from ..model._options import JudgeOptions

_FIELDS = frozenset(f.name for f in dataclasses.fields(JudgeOptions))


def judge_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add the judge flags to a click command (they arrive as keyword arguments)."""
    options = [
        click.option("--judge-base-url", "base_url", default=None, envvar="ASSAY_JUDGE_BASE_URL",
                     help="Base URL of an OpenAI-compatible server (vLLM, llama.cpp, LM Studio, a LiteLLM proxy)."),
        click.option("--concurrency", type=click.IntRange(1), default=None,
                     help=f"Judge calls in flight at the start (default {JudgeOptions().concurrency}); it halves on 429 and may grow "
                          "up to --max-concurrency."),
        click.option("--max-concurrency", type=click.IntRange(1), default=None,
                     help="Let judge concurrency grow up to this while the provider keeps answering without "
                          "429s and latency holds (doubling, then one more per round once latency grows). "
                          "Default: 4x --concurrency for hosted APIs and other OpenAI-compatible servers; "
                          "no growth for Ollama, llama.cpp, LM Studio and local:. Equal to --concurrency: "
                          "pinned."),
        click.option("--rpm", type=click.FloatRange(min=0, min_open=True), default=None, help="Judge requests per minute."),
        click.option("--tpm", type=click.FloatRange(min=0, min_open=True), default=None, help="Judge tokens per minute."),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="Seconds per judge call (default 60; 600 for a local server; none in-process)."),
        click.option("--max-tokens", type=click.IntRange(1), default=None,
                     help="Most tokens a judge may write per verdict (default: the server's)."),
        click.option("--max-reply-mb", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="Largest judge reply accepted, in MiB once decompressed (default 16); a larger "
                          "one is refused as an error, not retried. Backends that cannot enforce it refuse "
                          "the option (an in-process local: judge: use --max-tokens)."),
        click.option("--temperature", type=click.FloatRange(min=0), default=None,
                     help="Judge sampling temperature (default 0)."),
        click.option("--seed", type=click.INT, default=None, help="Judge sampling seed, where the provider has one."),
        click.option("--judge-threads", "threads", type=click.IntRange(1), default=None,
                     help="CPU threads of a local:PATH.gguf judge (default half the cores)."),
        click.option("--judge-ctx", "n_ctx", type=click.IntRange(256), default=None,
                     help="Context size in tokens of a local:PATH.gguf judge (default 8192)."),
        click.option("--prompt-style", type=click.Choice(["auto", "full", "compact"]), default=None,
                     help="How judge metrics ask: the full rubric with quoted evidence, or a compact form "
                          "(short rubric, one-sentence rationale, turn numbers, bounded output) that small "
                          "local models can follow (default auto: compact for models of <= 9B parameters "
                          "and in-process GGUF judges)."),
        click.option("--ordinal-order", type=click.Choice(["auto", "natural", "reversed", "shuffled"]),
                     default=None, help="Order of the options of ordinal scales in judge prompts (default auto: "
                                        "shuffled for the full form, natural for the compact form)."),
        click.option("--retries", type=click.IntRange(0), default=None, help=f"Retries on transient errors (default {JudgeOptions().retries})."),
        click.option("--budget-usd", type=click.FloatRange(min=0), default=None,
                     help="Stop making judge calls once this much is spent; the rest are not evaluated."),
        click.option("--budget-tokens", type=click.IntRange(0), default=None, help="The same, in tokens."),
        click.option("--dry-run", is_flag=True, help="Estimate judge calls, tokens and cost; send nothing."),
        click.option("--cache", "cache", type=click.Path(dir_okay=False), default=None,
                     help="Judge cache file (default: judge.sqlite3 in the user cache dir)."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the judge cache, which --no-store leaves on."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def pop_judge_flags(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Remove the judge flags from ``kwargs``; return those given, by JudgeOptions field."""
    out = {k: kwargs.pop(k) for k in [*kwargs] if k in _FIELDS}
    out = {k: v for k, v in out.items() if v is not None and v is not False}
    if kwargs.pop("no_cache", False):
        out["cache"] = False
    return out


def pop_judge_options(kwargs: dict[str, Any], base: JudgeOptions | None = None) -> JudgeOptions:
    """The JudgeOptions of the judge flags in ``kwargs`` (removed from it) over ``base`` (a config's ``[judge]``)."""
    return JudgeOptions.of(base, **pop_judge_flags(kwargs))
