"""Shared machinery of the LLM-as-judge metrics: rubrics, prompts, verdict schemas, failures as data.

Adding a judge metric is one small declaration plus a rubric file ``rubrics/<name>.md``::

    @metric("answer_relevance", dimension="response_quality", requires=("judge",), level="turn",
            judge_calls=1)
    @dataclass(frozen=True, kw_only=True)
    class AnswerRelevance(ScaleJudged):
        sections = shows(turn_sections)   # what the judge sees (fenced)

What the judge sees is built in ``_sections.py``.

A rubric file starts with ``version: N`` and holds blocks introduced by ``@@ NAME`` lines: prompt
blocks (``@@ main``, or one per call) and choice blocks (``@@ choices score`` with ``1: ...`` to
``5: ...`` lines, or ``@@ choices verdict`` with ``label: meaning`` lines). Every prompt must contain
``$fence_notice``; ``$<name>_choices`` renders a choice block in a per-request order. The version
feeds ``JudgeRequest.key`` (``"name@version"``) and therefore the judge cache.

Evaluated text (inputs, outputs, tool results, context, reasoning, expected answers, goals) reaches
the judge only through :meth:`Fence.wrap` in the user message; the system message is our rubric.
Verdict schemas put evidence and reasoning before the verdict, label options are shuffled per
request (seeded from the request identity), and every quote the judge returns is checked against
the text it was shown.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import random
import re
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ConfigError
from ..judge import (
    Fence, JudgeRequest, Verdict, VerdictField, VerdictSchema, VerdictShape, answer_probs, answer_thresholds,
    base_of, bounded_schema, content_digest, json_schema, model_of, ordered, resolved_style,
)
from ..model import MetricResult, Warning
from ._base import MetricContext
from ._sections import MAX_SECTION_CHARS, Section, clip, normalise_text, quote_found

if TYPE_CHECKING:
    import pydantic

    from ..judge._parse import Base, Schema


# -- rubrics ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Rubric:
    """A parsed rubric file: its version, prompt blocks and choice blocks."""

    name: str
    version: str
    prompts: dict[str, str]
    choices: dict[str, dict[str, str]]

    @classmethod
    def parse(cls, name: str, text: str) -> "Rubric":
        lines = text.strip().splitlines()
        head = lines[0].strip() if lines else ""
        if not head.startswith("version:") or not head.partition(":")[2].strip():
            raise ConfigError(f"rubric {name!r}: first line must be 'version: N', got {head!r}")
        version = head.partition(":")[2].strip()
        blocks: dict[str, list[str]] = {}
        current: list[str] | None = None
        for line in lines[1:]:
            if line.startswith("@@ "):
                key = " ".join(line[3:].split())
                if key in blocks:
                    raise ConfigError(f"rubric {name!r}: block {key!r} appears twice")
                current = blocks[key] = []
            elif current is not None:
                current.append(line)
            elif line.strip():
                raise ConfigError(f"rubric {name!r}: text before the first '@@ NAME' block: {line!r}")
        prompts, choices = {}, {}
        for key, body in blocks.items():
            text_ = "\n".join(body).strip()
            if key.startswith("choices "):
                choices[key.split(" ", 1)[1]] = _parse_choices(name, key, text_)
            else:
                if "$fence_notice" not in text_:
                    raise ConfigError(f"rubric {name!r}: prompt {key!r} lacks $fence_notice")
                prompts[key] = text_
        if not prompts:
            raise ConfigError(f"rubric {name!r}: no prompt block")
        return cls(name, version, prompts, choices)

    def prompt(self, call: str, style: str = "full") -> str:
        """The prompt block *call*; for the compact form its ``@@ CALL compact`` block when there is one."""
        if style == "compact" and f"{call} compact" in self.prompts:
            return self.prompts[f"{call} compact"]
        try:
            return self.prompts[call]
        except KeyError:
            raise ConfigError.unknown(f"prompt of rubric {self.name!r}:", call, self.prompts) from None


def _parse_choices(name: str, key: str, text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in filter(None, (ln.strip() for ln in text.splitlines())):
        label, sep, meaning = line.lstrip("-* ").partition(":")
        if not sep or not label.strip() or not meaning.strip():
            raise ConfigError(f"rubric {name!r}: {key}: expected 'label: meaning', got {line!r}")
        out[label.strip()] = meaning.strip()
    return out


@functools.lru_cache(maxsize=None)
def load_rubric(name: str) -> Rubric:
    """The rubric ``rubrics/<name>.md`` shipped with assay (read once, on first use)."""
    path = resources.files(__package__).joinpath("rubrics").joinpath(f"{name}.md")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no rubric file rubrics/{name}.md for judge metric {name!r}") from None
    return Rubric.parse(name, text)


RubricSource = Any
"""Where a judge metric's rubric comes from: see :func:`read_rubric`."""
RUBRIC_HELP = ("set rubric = the criterion as plain text, a full rubric ('version: N' then '@@ main' blocks), "
               "a pathlib.Path, a file name relative to the metric's module, or 'package:PKG/FILE.md'")


def read_rubric(source: RubricSource, *, module: str | None = None) -> tuple[str, str]:
    """The text of a rubric *source*, and where it came from (for error messages).

    ``pathlib.Path``: that file. ``"package:PKG/sub/FILE.md"``: package data of PKG. A one-line
    string ending in ``.md`` or ``.txt``: a file relative to *module*'s directory (else the working
    directory). Any other string: the rubric itself.
    """
    import os
    import sys
    from pathlib import Path

    if isinstance(source, os.PathLike):
        path = Path(source)
    elif isinstance(source, str) and source.startswith("package:"):
        package, _, inner = source[len("package:"):].partition("/")
        try:
            text = resources.files(package).joinpath(inner).read_text(encoding="utf-8")
        except (ModuleNotFoundError, FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise ConfigError(f"rubric {source!r}: no such package data ({type(exc).__name__}: {exc})") from None
        return text, source
    elif isinstance(source, str) and "\n" not in source.strip() and source.strip().endswith((".md", ".txt")):
        path = Path(source.strip())
        base = getattr(sys.modules.get(module or ""), "__file__", None)
        if not path.is_absolute() and base is not None and (Path(base).parent / path).exists():
            path = Path(base).parent / path
    elif isinstance(source, str):
        if not source.strip():
            raise ConfigError(f"empty rubric; {RUBRIC_HELP}")
        return source, "inline text"
    else:
        raise ConfigError(f"rubric {source!r}: {RUBRIC_HELP}")
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except OSError as exc:
        raise ConfigError(f"rubric file {str(path)!r}: cannot read it: {exc.strerror or exc}") from None


def plain_rubric(name: str, criterion: str, *, scale: tuple[int, int] | None = None,
                 labels: Sequence[str] = (), steps: Sequence[str] = ()) -> Rubric:
    """A full rubric around a plain-text criterion (the G-Eval-style template, ``rubrics/criteria.md``).

    The version is a digest of everything that shapes the prompt, so editing the text never
    reuses a cached verdict.
    """
    base = load_rubric("criteria")
    if labels:
        choices = {"verdict": {label: "" for label in labels}}
    else:
        low, high = scale or (1, 5)
        choices = {"score": {str(v): ("fully meets the criteria" if v == high else
                                      "does not meet the criteria at all" if v == low else
                                      f"meets the criteria partly ({(v - low) / (high - low):.0%} of the way)")
                             for v in range(low, high + 1)}}
    step_text = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)) if steps else \
        "(no steps given: reason from the criteria directly)"
    prompt = string.Template(base.prompt("labels" if labels else "scale")).safe_substitute(
        criteria=criterion.strip(), steps=step_text)
    blob = "\x1f".join([criterion.strip(), *steps, repr(scale), *labels])
    digest = hashlib.sha256(blob.encode()).hexdigest()[:12]
    return Rubric(name, f"{base.version}-{digest}", {"main": prompt}, choices)


def rubric_from(name: str, source: RubricSource, *, module: str | None = None, scale: tuple[int, int] | None = None,
                labels: Sequence[str] = ()) -> Rubric:
    """A parsed rubric from any source: full rubric text (``version: N`` first) or a plain criterion."""
    if isinstance(source, Rubric):
        return source
    text, where = read_rubric(source, module=module)
    if text.lstrip().startswith("version:"):
        try:
            return Rubric.parse(name, text)
        except ConfigError as exc:
            raise ConfigError(f"{exc} (rubric from {where})") from None
    return plain_rubric(name, text, scale=scale, labels=labels)


def rubric_names() -> list[str]:
    """Names of the shipped rubric files."""
    folder = resources.files(__package__).joinpath("rubrics")
    return sorted(p.name[:-3] for p in folder.iterdir() if p.name.endswith(".md"))


# -- verdict schemas ----------------------------------------------------------------------------

COMPACT_QUOTES, COMPACT_QUOTE_CHARS, COMPACT_REASON_CHARS = 2, 120, 200
"""The compact form's bounds: at most two quotes of 120 characters and a 200-character rationale.
They reach the model as field descriptions and a grammar-constrained backend as maxItems/maxLength;
validation does not enforce them, so a longer reply from a remote judge still counts."""


def evidence_field(what: str, compact: bool) -> VerdictField:
    if compact:
        return VerdictField("evidence", "array", f"At most two short quotes copied exactly from the evaluated text "
                            f"that support the {what} (may be empty).",
                            max_items=COMPACT_QUOTES, max_length=COMPACT_QUOTE_CHARS)
    return VerdictField("evidence", "array", f"Short verbatim quotes from the evaluated text that support the {what}.")


def reason_field(what: str, compact: bool) -> VerdictField:
    if compact:
        return VerdictField("reasoning", "string", f"One short sentence: why this {what}.",
                            max_length=COMPACT_REASON_CHARS)
    return VerdictField("reasoning", "string", f"Why the evidence leads to the {what}.")


@functools.lru_cache(maxsize=1024)
def scale_schema(low: int = 1, high: int = 5, applicable: bool = False, lists: tuple[str, ...] = (),
                 name: str = "ScaleVerdict", compact: bool = False) -> VerdictSchema:
    """``{<lists>..., evidence, reasoning, [applicable], score}``: evidence first, the number last.

    ``compact``: the same fields, bounded (:data:`COMPACT_QUOTES`...) and described in a few words.
    A shape: its pydantic model is built when a reply is first validated (see :mod:`assay.judge._shape`).
    """
    fields = [VerdictField(f, "array") for f in lists]
    fields += [evidence_field("score", compact), reason_field("score", compact)]
    if applicable:
        fields.append(VerdictField("applicable", "boolean",
                                   "False when the rubric's criterion cannot apply to this text."))
    fields.append(VerdictField("score", "integer", f"An integer from {low} to {high}.", minimum=low, maximum=high))
    return ordered(VerdictShape(name, tuple(fields)))


def label_schema(labels: tuple[str, ...], name: str = "LabelVerdict", compact: bool = False) -> VerdictSchema:
    """``{evidence, reasoning, verdict}`` with the labels as an enum in the given order (``compact``: bounded).

    One model per label set; the order is the request's (:func:`assay.judge.ordered`).
    """
    return ordered(_label_shape(tuple(sorted(labels)), name, compact), labels)


@functools.lru_cache(maxsize=256)
def _label_shape(labels: tuple[str, ...], name: str, compact: bool) -> VerdictShape:
    return VerdictShape(name, (evidence_field("verdict", compact), reason_field("verdict", compact),
                               VerdictField("verdict", "enum", "Exactly one of the listed labels.", options=labels)))


def normalise_scale(value: float, low: float = 1, high: float = 5) -> float:
    """(v - low) / (high - low): 1-5 becomes 0, .25, .5, .75, 1 (UAEF/AMACE)."""
    return (value - low) / (high - low)


# -- the data the judge sees ---------------------------------------------------------------------

class JudgeFailed(Exception):
    """Raised inside a metric to stop at a failed or skipped verdict; carries the null result."""

    def __init__(self, result: MetricResult) -> None:
        super().__init__(result.reason)
        self.result = result


@dataclass
class Session:
    """The judge calls one metric makes on one trace (or turn), with their accounting.

    ``ask`` sends one request and returns the parsed verdict, or raises :class:`JudgeFailed` with
    the null result (judge_error with the raw reply, or not_evaluated) that the metric returns.
    """

    ctx: MetricContext
    name: str
    rubric: Rubric
    key: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    unverified: list[str] = field(default_factory=list)
    max_tokens: int | None = None
    shown: list[tuple[str, str, str]] = field(default_factory=list)
    """(label, text, nonce) of every fenced section sent: quotes are checked against the right one."""
    style: str = "full"
    """The judge's prompt form, ``full`` or ``compact`` (``assay.judge.prompt_style``)."""
    ordinal: str = "shuffled"
    """How ordinal options are listed: ``natural``, ``reversed`` or ``shuffled`` (``assay.judge.ordinal_order``)."""
    varying: set[str] = field(default_factory=set)
    """Choice blocks listed in a per-request order: they follow the data; fixed ones stay in the rubric."""
    nonces: set[str] = field(default_factory=set)
    """The fence codes of the requests sent (a quote holding one was copied from the framing)."""
    thresholds: dict[str, float] = field(default_factory=dict)
    """``{"metric.question": p}``: yes/no answers decided by P(yes) >= p where the verdict has probabilities."""
    probs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """P(yes) of each yes/no answer (a label field: its distribution) by call, where the judge gave probabilities."""

    @classmethod
    def open(cls, metric: Any, ctx: MetricContext, rubric: Rubric | None = None, key: str | None = None) -> "Session":
        spec = metric.spec
        r = rubric or load_rubric(spec.name)
        style, ordinal = resolved_style(ctx.judge)
        s = cls(ctx, spec.name, r, key or f"{spec.name}@{r.version}", style=style, ordinal=ordinal,
                thresholds=answer_thresholds(ctx.judge) if ctx.judge is not None else {})
        if s.style != "full":
            s.details["prompt_style"] = s.style
        return s

    @property
    def compact(self) -> bool:
        return self.style == "compact"

    def identity(self, call: str) -> tuple[Any, ...]:
        """What makes a request unique: seeds the fence nonce and the option order."""
        return (self.key, self.ctx.trace.id, self.ctx.turn_index, self.ctx.repeat, call)

    def rng(self, call: str, what: str) -> random.Random:
        seed = hashlib.sha256("\x1f".join(map(str, (*self.identity(call), what))).encode()).hexdigest()
        return random.Random(seed)

    def order(self, call: str, what: str, items: Sequence[str]) -> list[str]:
        """*items* shuffled, deterministically for this request and differently across requests."""
        out = list(items)
        self.rng(call, what).shuffle(out)
        self.details.setdefault("option_order", {})[what] = out
        return out

    def render_choices(self, call: str, what: str, *, scale: bool = False,
                       ordinal: bool = False) -> tuple[str, list[str]]:
        """A choice block as prompt lines, in a per-request order, and that order.

        Nominal labels are shuffled per request, so no option is favoured by its position. Ordered
        options (a numeric *scale*, or *ordinal* labels in the rubric's order) follow the judge's
        ordinal order: ``natural`` (numbers ascending, labels as the rubric lists them),
        ``reversed``, or ``shuffled`` (numbers keep their sequence and run ascending or descending
        per request; ordinal labels are shuffled like nominal ones). Options in a fixed order stay in
        the system message (the static prefix), shuffled ones follow the data.
        """
        try:
            block = self.rubric.choices[what]
        except KeyError:
            raise ConfigError(f"rubric {self.rubric.name!r} has no '@@ choices {what}' block") from None
        if scale:
            keys = sorted(block, key=float)
            if self.ordinal == "shuffled":
                self.varying.add(what)
            if self.ordinal == "reversed" or (self.ordinal == "shuffled" and self.rng(call, what).random() < 0.5):
                keys.reverse()
            self.details.setdefault("option_order", {})[what] = "ascending" if keys[0] == min(block, key=float) \
                else "descending"
        elif ordinal and self.ordinal != "shuffled":
            keys = list(block) if self.ordinal == "natural" else list(reversed(block))
            self.details.setdefault("option_order", {})[what] = keys
        else:
            keys = self.order(call, what, list(block))
            self.varying.add(what)
        return "\n".join(f"- {k}: {block[k]}" if block[k] else f"- {k}" for k in keys), keys

    async def ask(self, call: str, schema: Schema, sections: Sequence[Section], *,
                  substitutions: dict[str, str] | None = None, prompt: str | None = None) -> Any:
        """Send the rubric's *prompt* (default: *call*) with *sections* fenced; the parsed verdict.

        *call* names the request within this metric (it seeds the fence and the option order);
        raises :class:`JudgeFailed` carrying the null result when there is no usable verdict.
        """
        if self.ctx.judge is None:
            raise JudgeFailed(self.null(Warning.NOT_EVALUATED, "no judge configured"))
        fence = Fence.for_seed(*self.identity(call))
        # The system message is the static rubric (identical for every call of this prompt, so
        # llama.cpp's KV cache and provider prompt caching reuse it); everything that varies per
        # request - the fence code, the fenced data, the options in their shuffled order - follows
        # in the user message. Options in a fixed order are static and stay in the rubric.
        fixed, options = {}, []
        for key, value in (substitutions or {}).items():
            if key.endswith("_choices") and key[:-len("_choices")] in self.varying:
                what = key[:-len("_choices")]
                fixed[key] = f"(the {what} options are listed after the data)"
                options.append(f"The {what} options:\n{value}")
            else:
                fixed[key] = value
        system = system_message(self.rubric.prompt(prompt or call, self.style), tuple(fixed.items()), fence.notice(),
                                field_guide(base_of(schema)))
        # Per section: the text (clipped), its fenced form, and what the digest and the quote check
        # keep; done list by list, since a long conversation is hundreds of sections per call.
        nonce = fence.nonce
        texts = [t if len(t) <= MAX_SECTION_CHARS else clip(t) for t in [s.text for s in sections]]
        labels = [s.label for s in sections]
        headings = [s.heading for s in sections]
        wrapped = fence.wrap_each(texts, labels)
        self.seen += [t for s, t in zip(sections, texts) if s.source]
        self.shown += zip(labels, texts, itertools.repeat(nonce))
        self.nonces.add(nonce)
        parts = [fence.code_line(), *[f"{h}\n{w}" if h else w for h, w in zip(headings, wrapped)], *options]
        content = [system, *itertools.chain.from_iterable(zip(headings, labels, texts)), *options]
        # The compact form bounds the reply by its schema (what the grammar of a local judge allows).
        max_tokens = self.max_tokens or (output_bound(base_of(schema)) if self.compact else None)
        request = JudgeRequest(messages=({"role": "system", "content": system},
                                         {"role": "user", "content": "\n\n".join(parts)}),
                               schema=schema, key=self.key, repeat=self.ctx.repeat, max_tokens=max_tokens,
                               content_key=content_digest(content))
        verdict = await self.ctx.judge.judge(request)
        self.verdicts.append(verdict)
        if verdict.skipped:
            raise JudgeFailed(self.null(Warning.NOT_EVALUATED, f"judge call '{call}' not made: {verdict.error}"))
        if verdict.error is not None or verdict.parsed is None:
            raise JudgeFailed(self.error(call, verdict.error or "the judge returned no verdict", verdict.raw))
        parsed, model = verdict.parsed, model_of(schema)
        if not isinstance(parsed, model):
            import pydantic  # loaded: the reply was validated

            try:
                parsed = model.model_validate(parsed.model_dump())
            except pydantic.ValidationError as exc:
                raise JudgeFailed(self.error(call, f"verdict does not match {model.__name__}: {exc}",
                                             verdict.raw)) from None
        if verdict.tokens:
            probs = answer_probs(verdict, model)
            if probs:
                self.probs[call] = probs
                self.details.setdefault("p", {})[call] = probs
                if self.thresholds:
                    parsed = self.decide(call, parsed, probs)
        return parsed

    def decide(self, call: str, parsed: pydantic.BaseModel, probs: dict[str, Any]) -> pydantic.BaseModel:
        """*parsed* with each yes/no answer that has a threshold decided by P(yes) >= it; every answer that
        changes is listed in details["threshold_flips"]. The threshold of ``metric.call.question`` (a question
        asked on more than one sheet, decided per sheet: goal's ``delivery.got_everything``), else that of
        ``metric.question``."""
        changed: dict[str, bool] = {}
        thresholds, name = self.thresholds, self.name
        for question, p in probs.items():
            threshold = thresholds.get(f"{name}.{call}.{question}")
            if threshold is None:
                threshold = thresholds.get(f"{name}.{question}")
            if threshold is None or not isinstance(p, float):
                continue
            yes = p >= threshold
            if yes != getattr(parsed, question):
                changed[question] = yes
                self.details.setdefault("threshold_flips", []).append(
                    f"{call}: {question} {'no -> yes' if yes else 'yes -> no'} (P(yes) {p:.3f}, threshold {threshold:g})")
        return parsed.model_copy(update=changed) if changed else parsed

    def error(self, call: str, message: str, raw: str) -> MetricResult:
        return self.null(Warning.JUDGE_ERROR, f"judge call '{call}' failed: {message}", {"raw": raw, "call": call})

    # -- evidence ------------------------------------------------------------------------------
    def verify(self, quotes: Iterable[str], *, texts: Iterable[str] | None = None) -> tuple[list[str], list[str]]:
        """Split *quotes* into those found in the evaluated text and those not (flagged in details)."""
        hay = _hay("\n".join(self.seen if texts is None else texts))
        nonces = self.nonces
        ok, bad = [], []
        for q in quotes:
            q = q.strip()
            if not q:
                continue
            # A quote that carries our fence markers or code was copied from the prompt's framing,
            # not from the evaluated text (the neutralised text holds neither).
            forged = _MARKER.search(q) is not None or any(n in q.lower() for n in nonces)
            (ok if not forged and quote_found(q, hay) else bad).append(q)
        self.unverified.extend(q for q in bad if q not in self.unverified)
        return ok, bad

    # -- results -------------------------------------------------------------------------------
    def finish(self, r: MetricResult) -> MetricResult:
        """Copy calls, tokens and cost of every verdict so far (and flagged quotes) into *r*."""
        made = [v for v in self.verdicts if not v.skipped]
        costs = [v.cost_usd for v in made]
        r = r.replace(judge_calls=len(made), tokens=sum(v.input_tokens + v.output_tokens for v in made),
                      cost_usd=None if not made or any(c is None for c in costs) else sum(costs))  # type: ignore[misc]
        if self.verdicts:
            r.details.setdefault("judge_model", self.verdicts[-1].model)
            r.details.setdefault("rubric", self.key)
        if self.unverified:
            r.details["unverified_evidence"] = list(self.unverified)
        for k, v in self.details.items():
            r.details.setdefault(k, v)
        return r

    def result(self, score: float, reason: str = "", evidence: Iterable[str] = (),
               details: dict[str, Any] | None = None) -> MetricResult:
        return self.finish(MetricContext.result(min(1.0, max(0.0, round(score, 10))), reason, evidence,
                                                 dict(details or {})))

    def null(self, warning: Warning, reason: str, details: dict[str, Any] | None = None) -> MetricResult:
        return self.finish(MetricContext.null(warning, reason, dict(details or {})))


@functools.lru_cache(maxsize=512)
def system_message(template: str, fixed: tuple[tuple[str, str], ...], notice: str, guide: str) -> str:
    """The system message: the rubric's prompt with its fixed substitutions and the fence notice,
    then the schema's field guide. The same for every call of a prompt with the same fixed options,
    so it is made once, not per call."""
    return string.Template(template).safe_substitute({**dict(fixed), "fence_notice": notice}) + "\n\n" + guide


@functools.lru_cache(maxsize=1024)
def output_bound(schema: Schema | Base) -> int:
    """The most output tokens a reply within the schema's bounds needs (the compact form's max_tokens)."""
    return bounded_schema(schema)[1]


@functools.lru_cache(maxsize=1024)
def field_guide(schema: Schema | Base) -> str:
    """The model's field meanings, in order, as prompt text: grammars enforce the shape, not the sense.

    Static per model (label order lives in the enum, not in the descriptions), so it belongs to
    the reusable head of the prompt.
    """
    root = json_schema(schema)
    defs = root.get("$defs", {})
    lines = []
    for name, node in root.get("properties", {}).items():
        desc = node.get("description", "")
        items = node.get("items", {})
        ref = items.get("$ref", "") if isinstance(items, dict) else ""
        if ref:
            inner = defs.get(ref.rsplit("/", 1)[-1], {}).get("properties", {})
            sub_fields = "; ".join(f"{k}: {v.get('description', '')}".rstrip(": ") for k, v in inner.items())
            desc = f"{desc} Each entry has {sub_fields}." if desc else f"Each entry has {sub_fields}."
        lines.append(f"- {name}: {desc}".rstrip(": ") if desc else f"- {name}")
    names = list(root.get("properties", {}))
    last = names[-1] if names else ""
    order = ("Fill them in this order: evidence and reasoning first, the " + last + " last."
             if last in ("score", "verdict") and len(names) > 1 else "Fill them in this order.")
    return "Reply with one JSON object with these fields:\n" + "\n".join(lines) + "\n" + order


_hay = functools.lru_cache(maxsize=4)(normalise_text)
"""The evaluated text as quotes are looked up in it: one metric checks each of its quotes against the same text."""

_MARKER = re.compile(r"<<<|>>>|\b(?:BEGIN|END) [A-Z0-9_]+ [0-9a-f]{16}\b|fence code", re.IGNORECASE)


def shows(build: Callable[..., Sequence[Section] | MetricResult], **options: Any) -> Callable[..., Any]:
    """A ``sections`` method that shows the judge what ``build(ctx, **options)`` returns.

    Lets a metric say what the judge sees in one line: ``sections = shows(turn_sections, expected=True)``.
    """

    def sections(self: Any, ctx: MetricContext) -> Sequence[Section] | MetricResult:
        return build(ctx, **options)

    return sections


# -- one-call judge metrics ----------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class OneCall:
    """What the one-call families share: the data shown, the session, rubric substitutions."""

    threshold: float = 0.7

    def sections(self, ctx: MetricContext) -> Sequence[Section] | MetricResult:  # pragma: no cover
        raise NotImplementedError

    rubric: ClassVar[RubricSource] = None
    """The rubric: plain text (one criterion), a full rubric, a Path, a file next to the module or
    ``"package:PKG/FILE.md"`` (see :func:`read_rubric`). Built-in metrics leave it None and use
    ``rubrics/<name>.md``. Read and checked when the metric is defined."""

    def session(self, ctx: MetricContext) -> Session:
        return Session.open(self, ctx, type(self).__dict__.get("_rubric"))

    @classmethod
    def check_definition(cls) -> None:
        """Read and check the rubric now (called by ``@metric``): a bad one is a ConfigError at definition."""
        spec = cls.spec  # type: ignore[attr-defined]
        where = f"judge metric {spec.name!r} ({cls.__module__}.{cls.__qualname__})"
        parsed = cls.__dict__.get("_rubric")
        try:
            if parsed is None and cls.rubric is None:
                if not cls.__module__.startswith(f"{__package__}."):
                    raise ConfigError(f"no rubric; {RUBRIC_HELP}")
                parsed = load_rubric(spec.name)
            elif parsed is None:
                parsed = rubric_from(spec.name, cls.rubric, module=cls.__module__, **cls._plain_options())
            cls._check_rubric(parsed)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        cls._rubric = parsed  # type: ignore[attr-defined]

    @classmethod
    def _plain_options(cls) -> dict[str, Any]:
        return {}

    @classmethod
    def _check_rubric(cls, rubric: Rubric) -> None:
        pass

    def substitutions(self) -> dict[str, str]:
        """Extra ``$name`` values for the rubric prompt (our own text, never evaluated data)."""
        return {}

    def prepare(self, ctx: MetricContext) -> tuple[Sequence[Section], Session] | MetricResult:
        """The sections and an open session, or the null result when the data allows no score."""
        got = self.sections(ctx)
        return got if isinstance(got, MetricResult) else (got, self.session(ctx))


# -- the 1-5 scale family -------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class ScaleJudged(OneCall):
    """Base of one-call judge metrics on an integer scale (1-5 unless ``scale`` says otherwise).

    Subclasses set ``sections`` (usually ``shows(...)``) to return the fenced sections, or a null
    MetricResult when the data does not allow a score; optionally ``adjust(ctx, score, session)``
    changes the normalised score (a failed workflow's penalty) and returns a note for the reason.
    """

    scale: ClassVar[tuple[int, int]] = (1, 5)
    applicable: ClassVar[bool] = False
    """Add an 'applicable' field: the judge may answer that the criterion does not apply."""
    lists: ClassVar[tuple[str, ...]] = ()
    """Extra list-of-strings fields asked before the evidence (e.g. inferred intentions)."""

    def adjust(self, ctx: MetricContext, score: float, session: Session) -> tuple[float, str]:
        return score, ""

    @classmethod
    def _plain_options(cls) -> dict[str, Any]:
        return {"scale": cls.scale}

    @classmethod
    def _check_rubric(cls, rubric: Rubric) -> None:
        low, high = cls.scale
        if "main" not in rubric.prompts:
            raise ConfigError(f"rubric {rubric.name!r} has no '@@ main' prompt block")
        got = rubric.choices.get("score")
        want = {str(v) for v in range(low, high + 1)}
        if got is None or set(got) != want:
            raise ConfigError(f"rubric {rubric.name!r}: '@@ choices score' must give a line for each of "
                              f"{low}..{high}, got {sorted(got or {}, key=str)}")

    async def score(self, ctx: MetricContext) -> MetricResult:
        prepared = self.prepare(ctx)
        if isinstance(prepared, MetricResult):
            return prepared
        got, s = prepared
        low, high = self.scale
        choices, _ = s.render_choices("main", "score", scale=True)
        schema = scale_schema(low, high, self.applicable, self.lists, compact=s.compact)
        try:
            v = await s.ask("main", schema, got, substitutions={**self.substitutions(), "score_choices": choices,
                                                                 "low": str(low), "high": str(high)})
        except JudgeFailed as failed:
            return failed.result
        evidence, _ = s.verify(v.evidence)
        details: dict[str, Any] = {"raw_score": v.score, "scale": [low, high]}
        for name in self.lists:
            details[name] = list(getattr(v, name))
        if self.applicable and not v.applicable:
            return s.null(Warning.NOT_APPLICABLE, f"judge: not applicable: {v.reasoning}", details)
        value, note = self.adjust(ctx, normalise_scale(v.score, low, high), s)
        reason = f"{v.score}/{high}: {v.reasoning}" + (f" ({note})" if note else "")
        return s.result(value, reason, evidence, details)


# -- the label family -----------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class LabelJudged(OneCall):
    """Base of one-call judge metrics that classify into labels with fixed weights.

    Subclasses set ``weights`` (label -> score) and ``sections`` (see ``shows``); the rubric's
    ``@@ choices verdict`` block must list exactly these labels. Labels are shown (and enumerated
    in the schema) in a per-request shuffled order; the order is kept in details["option_order"].
    """

    weights: ClassVar[dict[str, float]] = {}
    ordinal: ClassVar[bool] = False
    """The labels are levels of one scale, listed best to worst in the rubric: they follow the
    judge's ordinal order instead of being shuffled."""

    @classmethod
    def _plain_options(cls) -> dict[str, Any]:
        return {"labels": tuple(cls.weights)}

    @classmethod
    def _check_rubric(cls, rubric: Rubric) -> None:
        if len(cls.weights) < 2 or not all(isinstance(w, (int, float)) and not isinstance(w, bool) and 0 <= w <= 1
                                           for w in cls.weights.values()):
            raise ConfigError(f"weights must map at least two labels to scores in [0, 1], got {cls.weights!r}")
        if "main" not in rubric.prompts:
            raise ConfigError(f"rubric {rubric.name!r} has no '@@ main' prompt block")
        labels = rubric.choices.get("verdict")
        if labels is None or set(labels) != set(cls.weights):
            raise ConfigError(f"rubric {rubric.name!r}: verdict labels {sorted(labels or {})} differ from the "
                              f"metric's weights {sorted(cls.weights)}")

    async def score(self, ctx: MetricContext) -> MetricResult:
        prepared = self.prepare(ctx)
        if isinstance(prepared, MetricResult):
            return prepared
        got, s = prepared
        choices, order = s.render_choices("main", "verdict", ordinal=self.ordinal)
        if set(order) != set(self.weights):
            raise ConfigError(f"rubric {s.rubric.name!r}: verdict labels {sorted(order)} differ from the metric's "
                              f"{sorted(self.weights)}")
        try:
            v = await s.ask("main", label_schema(tuple(order), compact=s.compact), got,
                            substitutions={**self.substitutions(), "verdict_choices": choices})
        except JudgeFailed as failed:
            return failed.result
        if v.verdict not in self.weights:  # only reachable with a judge that skips validation
            return s.error("main", f"unknown label {v.verdict!r}; expected one of {sorted(self.weights)}",
                           v.model_dump_json())
        evidence, _ = s.verify(v.evidence)
        return s.result(self.weights[v.verdict], f"{v.verdict}: {v.reasoning}", evidence,
                        {"verdict": v.verdict, "label_weights": dict(self.weights)})
