"""What the RAGAS and DeepEval adapters share: the installed-or-not check, the judge calls made
through assay's judge (with their accounting), and the one exchange a single-turn library scores."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass, field
from typing import Any

import pydantic

from ...judge import JudgeRequest, Verdict
from ...model import MetricResult, Trace, Warning
from .._base import MetricContext

EXTRAS = {"ragas": "ragas", "deepeval": "deepeval"}


def missing(package: str) -> str | None:
    """Why *package* cannot be used (with the pip command), or None when it is importable."""
    if importlib.util.find_spec(package) is None:
        return f"{package} is not installed: pip install 'assay[{EXTRAS.get(package, package)}]'"
    return None


def version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def not_installed(ctx: MetricContext, package: str) -> MetricResult | None:
    why = missing(package)
    return None if why is None else ctx.null(Warning.NOT_EVALUATED, why, {"missing_extra": EXTRAS[package]})


class JudgeCallFailed(RuntimeError):
    """Raised into the library when assay's judge has no usable verdict; carries the verdict."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.error or "the judge returned no verdict")
        self.verdict = verdict


class FreeText(pydantic.BaseModel):
    """The schema for a library call that asks for free text rather than a structured verdict."""

    text: str


@dataclass
class Recorder:
    """Sends the library's prompts to assay's judge and keeps every verdict for the accounting."""

    judge: Any
    key: str
    repeat: int = 0
    verdicts: list[Verdict] = field(default_factory=list)

    async def ask(self, prompt: Any, schema: type[pydantic.BaseModel] | None) -> Any:
        """The parsed verdict for *prompt* (the library's own prompt text) in *schema*."""
        text = prompt if isinstance(prompt, str) else str(prompt)
        request = JudgeRequest(messages=({"role": "user", "content": text},), schema=schema or FreeText,
                               key=self.key, repeat=self.repeat)
        verdict = await self.judge.judge(request)
        self.verdicts.append(verdict)
        if verdict.error is not None or verdict.parsed is None:
            raise JudgeCallFailed(verdict)
        return verdict.parsed if schema is not None else verdict.parsed.text  # type: ignore[attr-defined]

    def finish(self, r: MetricResult) -> MetricResult:
        made = [v for v in self.verdicts if not v.skipped]
        costs = [v.cost_usd for v in made]
        r = r.replace(judge_calls=len(made), tokens=sum(v.input_tokens + v.output_tokens for v in made),
                      cost_usd=None if not made or any(c is None for c in costs) else sum(costs))  # type: ignore[misc]
        if made:
            r.details.setdefault("judge_model", made[-1].model)
        return r

    def failure(self, ctx: MetricContext, exc: BaseException) -> MetricResult:
        """A judge error (with the raw reply) when the judge failed, else a metric error."""
        failed = exc if isinstance(exc, JudgeCallFailed) else next(
            (e for e in _chain(exc) if isinstance(e, JudgeCallFailed)), None)
        if failed is not None:
            v = failed.verdict
            warning = Warning.NOT_EVALUATED if v.skipped else Warning.JUDGE_ERROR
            return self.finish(ctx.null(warning, f"judge call failed: {v.error}", {"raw": v.raw}))
        return self.finish(ctx.null(Warning.METRIC_ERROR, f"{type(exc).__name__}: {exc}"))


def _chain(exc: BaseException) -> list[BaseException]:
    out, seen = [], set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


@dataclass(frozen=True, slots=True)
class Exchange:
    """The single exchange a single-turn library scores: the last turn with a reply."""

    input: str
    output: str | None
    contexts: list[str]
    reference: str | None
    tool_calls: list[Any]
    expected_tools: list[Any] | None


def exchange(trace: Trace) -> Exchange:
    turns = list(trace.turns or ())
    answered = [t for t in turns if t.output is not None]
    last = answered[-1] if answered else (turns[-1] if turns else None)
    reference = None
    if last is not None and last.expected is not None and last.expected.output is not None:
        reference = last.expected.output
    elif trace.expected is not None:
        reference = trace.expected.output
    contexts = list(last.context) if last is not None and last.context else \
        list(dict.fromkeys(c for t in turns for c in t.context))
    return Exchange(input=(last.input if last is not None and last.input is not None else ""),
                    output=None if last is None else last.output, contexts=contexts, reference=reference,
                    tool_calls=trace.all_tool_calls(), expected_tools=trace.expected_tool_calls())


NEEDS = {
    "output": ("the agent's reply", lambda e: e.output is not None),
    "context": ("retrieved context (turn.context)", lambda e: bool(e.contexts)),
    "reference": ("an expected output", lambda e: e.reference is not None),
    "expected_tools": ("expected tool calls", lambda e: e.expected_tools is not None),
}


def lacking(ctx: MetricContext, ex: Exchange, needs: tuple[str, ...]) -> MetricResult | None:
    """A missing_data result naming what the library metric needs and the trace lacks, or None."""
    absent = [NEEDS[n][0] for n in needs if not NEEDS[n][1](ex)]
    if absent:
        return ctx.null(Warning.MISSING_DATA, "needs " + ", ".join(absent))
    return None


def start(ctx: MetricContext, m: Any, package: str) -> MetricResult | tuple[Exchange, Recorder]:
    """Everything a library metric checks before it runs: the extra is installed, the trace has
    what the metric needs; then the exchange to score and a recorder of its judge calls."""
    absent = not_installed(ctx, package)
    if absent is not None:
        return absent
    ex = exchange(ctx.trace)
    short = lacking(ctx, ex, m.needs)
    if short is not None:
        return short
    return ex, Recorder(ctx.judge, f"{m.spec.name}@{package}-{version(package)}", ctx.repeat)
