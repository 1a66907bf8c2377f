"""The judge layer: one protocol for LLM-as-judge calls, and everything behind it.

Metrics build a :class:`JudgeRequest` and await ``judge.judge(request)`` for a :class:`Verdict`;
they never see a backend. A composed judge is layers around a backend, each doing one thing::

    Cached(Reasking(Retrying(Limited(Tripping(Metered(OpenAICompatible("gpt-4o-mini")))))))

``make_judge("openai:gpt-4o-mini", concurrency=8, budget_usd=2.0)`` builds that stack from a
model string or a user object; ``judge.stats`` holds the running totals. Importing this package
imports no SDK: backends import theirs when constructed.
"""

from assay.model._options import JudgeOptions

from ._adapters import CallableJudge, ClientJudge, LangChainJudge
from ._anthropic import AnthropicJudge
from ._base import Backend, Completion, Wrapper
from ._breaker import Tripping
from ._budget import Budget, DryRun, Metered
from ._cache import Cached, JudgeCache, cache_key, default_cache_path
from ._factory import (
    PROVIDERS, BackendFactory, Spec, adapt, backends, build_backend, build_judge, compose, judge_from_env, make_judge,
    parse_spec, register_backend,
)
from ._fence import Fence, fence, neutralise
from ._limits import Limited, TokenBucket, estimate_tokens
from ._openai import OpenAICompatible
from ._parse import (
    ParseError, VerdictSchema, base_of, bounded_schema, extract_json, json_schema, model_of, ordered, parse_verdict,
    repair_json,
)
from ._prices import PRICES, Price, is_local_url, lookup_price, resolve_price
from ._probs import answer_probs
from ._protocol import Judge, JudgeRequest, TokenLogprob, Verdict, content_digest, errored
from ._retry import Reasking, Retrying
from ._shape import VerdictField, VerdictShape
from ._stats import JudgeStats
from ._style import ORDINAL_ORDERS, PROMPT_STYLES, answer_thresholds, auto_style, ordinal_order, prompt_style
from ._style import resolved as resolved_style

__all__ = [
    # the seam
    "Judge", "JudgeRequest", "Verdict", "TokenLogprob", "errored", "content_digest",
    # building judges
    "make_judge", "build_judge", "JudgeOptions", "judge_from_env", "compose", "adapt", "build_backend", "parse_spec", "Spec", "PROVIDERS",
    "register_backend", "backends", "BackendFactory",
    # backends
    "Backend", "Completion", "OpenAICompatible", "AnthropicJudge", "LangChainJudge", "ClientJudge",
    "CallableJudge", "DryRun",
    # layers
    "Wrapper", "Cached", "Reasking", "Retrying", "Metered", "Limited", "Tripping", "Budget", "TokenBucket",
    # cache, accounting, prices
    "JudgeCache", "cache_key", "default_cache_path", "JudgeStats", "Price", "PRICES", "lookup_price",
    "resolve_price", "is_local_url", "estimate_tokens",
    # prompts and replies
    "Fence", "fence", "neutralise", "ParseError", "parse_verdict", "extract_json", "repair_json",
    "bounded_schema", "VerdictSchema", "ordered", "model_of", "base_of", "json_schema",
    # verdict models as data (JSON schema without pydantic; the model built when needed)
    "VerdictShape", "VerdictField",
    # how metrics phrase requests to a judge
    "prompt_style", "ordinal_order", "resolved_style", "auto_style", "PROMPT_STYLES", "ORDINAL_ORDERS",
    # answers read as probabilities
    "answer_probs", "answer_thresholds",
]
