"""From a model string (or an object the user already has) to a composed judge.

``make_judge("anthropic:claude-3-5-sonnet-latest")`` resolves the provider, reads credentials from
the standard environment variables (only now, never at import), builds the backend and wraps it
in the default stack: Cached(Reasking(Retrying(Limited(Tripping(Metered(backend)))))).

The prefix picks a backend factory: the built-in providers below, then the ``assay.judges``
entry points of installed plugins, then ``register_backend("myprovider", factory)`` calls.
A prefix claimed twice is an error unless the later one says ``replace=True``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from assay import _plugins
from assay.errors import ConfigError
from assay.model._options import GROWTH, LOCAL_TIMEOUT, REMOTE_TIMEOUT, JudgeOptions

from ._adapters import CallableJudge, ClientJudge, LangChainJudge
from ._anthropic import AnthropicJudge
from ._backend_options import check_factory, check_options
from ._base import Backend
from ._breaker import Tripping
from ._budget import Budget, DryRun, Metered
from ._cache import Cached
from ._limits import Limited
from ._local import local_backend
from ._openai import OpenAICompatible, endpoint_identity
from ._prices import Price, is_local_url, resolve_price
from ._protocol import Judge, check_logprobs
from ._retry import Reasking, Retrying
from ._stats import JudgeStats


@dataclass(frozen=True, slots=True)
class Provider:
    """How to reach one provider: default base URL and where its key lives."""

    kind: str                     # "openai" (chat completions) or "anthropic" (messages)
    base_url: str | None = None   # None: the SDK's default
    key_env: tuple[str, ...] = ()  # first one set wins
    url_env: str | None = None     # overrides base_url
    local: bool = False            # runs on this machine: free, and needs no key


PROVIDERS: Mapping[str, Provider] = {
    "openai": Provider("openai", None, ("OPENAI_API_KEY",), "OPENAI_BASE_URL"),
    "azure": Provider("openai", None, ("AZURE_OPENAI_API_KEY",), "AZURE_OPENAI_ENDPOINT"),
    "anthropic": Provider("anthropic", None, ("ANTHROPIC_API_KEY",), "ANTHROPIC_BASE_URL"),
    "google": Provider("openai", "https://generativelanguage.googleapis.com/v1beta/openai/",
                       ("GOOGLE_API_KEY", "GEMINI_API_KEY")),
    "groq": Provider("openai", "https://api.groq.com/openai/v1", ("GROQ_API_KEY",)),
    "together": Provider("openai", "https://api.together.xyz/v1", ("TOGETHER_API_KEY",)),
    "openrouter": Provider("openai", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",)),
    "litellm": Provider("openai", "http://localhost:4000", ("LITELLM_API_KEY",), "LITELLM_BASE_URL"),
    "ollama": Provider("openai", "http://localhost:11434", (), "OLLAMA_HOST", local=True),
    "vllm": Provider("openai", "http://localhost:8000/v1", ("VLLM_API_KEY",), local=True),
    "llamacpp": Provider("openai", "http://localhost:8080/v1", (), local=True),
    "lmstudio": Provider("openai", "http://localhost:1234/v1", (), local=True),
    "openai-compatible": Provider("openai", None, ("ASSAY_JUDGE_API_KEY", "OPENAI_API_KEY")),
}
ALIASES = {"gemini": "google", "llama.cpp": "llamacpp", "llama-cpp": "llamacpp", "compatible": "openai-compatible",
           "lm-studio": "lmstudio", "azure-openai": "azure", "claude": "anthropic"}

BackendFactory = Callable[..., Any]
"""``factory(model, **options) -> Backend`` (or anything :func:`adapt` accepts: a client, a function).

``options`` are what the caller passed to ``make_judge`` for the backend (``api_key``, ``timeout``,
``prices``, ``max_tokens``, ...) plus ``base_url`` when the model string or environment gave one.
"""


@dataclass(frozen=True, slots=True)
class BackendEntry:
    """One judge prefix: what builds its backend and where it came from."""

    factory: BackendFactory
    origin: str
    """'built-in', 'plugin DIST' or 'registered'."""
    local: bool = False
    """Runs on this machine: free, so dry runs price it at 0."""


class _Backends:
    """Prefix -> BackendEntry, layered: built-ins, plugins (read lazily), registrations."""

    def __init__(self) -> None:
        # Built-ins that are not an HTTP provider: the in-process llama.cpp judge.
        self._entries: dict[str, BackendEntry] = {"local": BackendEntry(local_backend, "built-in", True)}
        self._plugins_read = False

    def _read_plugins(self) -> None:
        if self._plugins_read:
            return
        self._plugins_read = True
        for ep in _plugins.entry_points("assay.judges"):
            prefix = ep.name.lower()
            entry = BackendEntry(_lazy(ep), _plugins.origin_of(ep))
            self._claim(prefix, entry, replace=False)

    def _claim(self, prefix: str, entry: BackendEntry, *, replace: bool) -> None:
        builtin = ALIASES.get(prefix, prefix)
        held = self._entries.get(prefix) or (BackendEntry(_builtin(builtin), "built-in", PROVIDERS[builtin].local)
                                              if builtin in PROVIDERS else None)
        if held is not None and not replace:
            raise ConfigError(f"judge backend prefix {prefix!r} from {entry.origin} clashes with the one from "
                              f"{held.origin}; pick another prefix or pass replace=True")
        self._entries[prefix] = entry

    def register(self, prefix: str, factory: BackendFactory, *, local: bool, replace: bool) -> None:
        key = prefix.strip().lower()
        if not key.replace("-", "_").replace(".", "_").isidentifier():
            raise ConfigError(f"judge backend prefix {prefix!r}: expected a name like 'myprovider'")
        if not callable(factory):
            raise ConfigError(f"judge backend {prefix!r}: factory {factory!r} is not callable")
        self._read_plugins()
        self._claim(key, BackendEntry(factory, "registered", local), replace=replace)

    def claimed(self) -> dict[str, BackendEntry]:
        """Plugin and registered prefixes (read so far); built-ins are in PROVIDERS."""
        return self._entries

    def get(self, prefix: str) -> BackendEntry | None:
        entry = self._entries.get(prefix)
        if entry is None and prefix not in PROVIDERS:
            self._read_plugins()
            entry = self._entries.get(prefix)
        if entry is None and prefix in PROVIDERS:
            return BackendEntry(_builtin(prefix), "built-in", PROVIDERS[prefix].local)
        return entry

    def origins(self) -> dict[str, str]:
        self._read_plugins()
        return {**{p: "built-in" for p in PROVIDERS}, **{p: e.origin for p, e in self._entries.items()}}


def _lazy(ep: Any) -> BackendFactory:
    def factory(model: str, **options: Any) -> Any:
        target = _plugins.load(ep)
        check_factory(target, f"judge backend {ep.name}:{model}", options)
        return target(model, **options)
    return factory


_BACKENDS = _Backends()


def register_backend(prefix: str, factory: BackendFactory, *, local: bool = False, replace: bool = False) -> None:
    """Make ``--judge PREFIX:MODEL`` (and ``make_judge("PREFIX:MODEL")``) build ``factory(MODEL, **options)``.

    The factory returns a :class:`Backend` (or a client or function, adapted as ``make_judge``
    adapts objects); the default stack (cache, retries, limits, metering) wraps it. A prefix that
    a built-in provider, a plugin or an earlier call already claims is an error unless
    ``replace=True``. ``local=True`` marks a backend that runs on this machine (free).
    """
    _BACKENDS.register(prefix, factory, local=local, replace=replace)


def backends() -> dict[str, str]:
    """Every judge prefix and where it comes from ('built-in', 'plugin DIST', 'registered')."""
    return dict(sorted(_BACKENDS.origins().items()))


@dataclass(frozen=True, slots=True)
class Spec:
    """A resolved model string."""

    provider: str
    model: str
    base_url: str | None = None


_URL_AT = re.compile(r"@(?=https?://)", re.IGNORECASE)


def parse_spec(spec: str, *, base_url: str | None = None) -> Spec:
    """``"gpt-4o"``, ``"provider:model"`` or ``"openai-compatible:model@http://host:port/v1"``.

    A bare name goes to the provider its prefix implies (claude -> anthropic, gemini -> google,
    anything else -> openai, as eval_lib does), or to ``openai-compatible`` when a base URL is given.
    """
    text = spec.strip()
    if not text:
        raise ConfigError("empty judge model string; expected e.g. 'openai:gpt-4o-mini'")
    head, sep, rest = text.partition(":")
    name = head.lower() if head.lower() in _BACKENDS.claimed() else ALIASES.get(head.lower(), head.lower())
    if sep and not rest.startswith("//") and _BACKENDS.get(name) is not None:
        provider, model = name, rest
    elif sep and not rest.startswith("//") and head.isidentifier() and "/" not in head and "@" not in head \
            and not any(c.isdigit() for c in head):
        # "llama3:8b" (an Ollama tag) has digits; "foo:bar" is a typo'd provider.
        raise ConfigError.unknown("judge provider", head, _BACKENDS.origins())
    else:
        lowered = text.lower()
        provider = ("openai-compatible" if base_url else "anthropic" if lowered.startswith("claude")
                    else "google" if lowered.startswith("gemini") else "openai")
        model = text
    at = _URL_AT.search(model)  # the first "@" that starts a URL: a password in it may hold another "@"
    if at:
        model, base_url = model[:at.start()], model[at.end():]
    if not model:
        raise ConfigError(f"judge model string {spec!r} names no model; expected e.g. 'openai:gpt-4o-mini'")
    if provider == "openai-compatible" and not base_url:
        raise ConfigError(f"judge {spec!r} needs a base URL: 'openai-compatible:MODEL@http://host:port/v1', "
                          "base_url=..., or ASSAY_JUDGE_BASE_URL")
    return Spec(provider, model, base_url)


def _openai_host(base_url: str | None) -> bool:
    """Whether ``base_url`` is OpenAI's own API (None: the SDK's default, which is)."""
    if not base_url:
        return True
    from urllib.parse import urlsplit
    try:
        host = urlsplit(base_url if "//" in base_url else f"//{base_url}").hostname
    except ValueError:
        return False
    return (host or "").lower() == "api.openai.com"


def _env(names: tuple[str, ...]) -> str | None:
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def build_backend(spec: Spec, **options: Any) -> Backend:
    """The bare backend for *spec* from its prefix's factory (built-in, plugin or registered)."""
    entry = _BACKENDS.get(spec.provider)
    if entry is None:
        raise ConfigError.unknown("judge provider", spec.provider, _BACKENDS.origins())
    if spec.base_url:
        options["base_url"] = spec.base_url
    label = f"{spec.provider}:{spec.model}"
    if entry.origin == "built-in":  # a built-in backend's options class says what it takes
        check_options("local" if spec.provider == "local" else PROVIDERS[spec.provider].kind, label, options)
    elif entry.origin == "registered":  # a plugin's (lazy) factory is checked once loaded
        check_factory(entry.factory, f"judge backend {label}", options)
    backend = entry.factory(spec.model, **options)
    if entry.origin == "built-in":
        return backend if isinstance(backend, Backend) else adapt(backend, prices=options.get("prices"))
    # A plugin's or a registration's judge is the model it was given, whatever object its factory
    # returned: 'plugin:m2' never answers from 'plugin:m1''s cached verdicts, and run records and
    # judge cards name the model.
    if not isinstance(backend, Backend):
        backend = adapt(backend, prices=options.get("prices"))
        backend.name, backend.model = spec.model, f"{spec.provider}:{spec.model}"
    backend._identity = {**backend.identity, "judge": f"{spec.provider}:{spec.model}"}
    return backend


def _builtin(provider: str) -> BackendFactory:
    def factory(model: str, **options: Any) -> Backend:
        return _provider_backend(Spec(provider, model, options.pop("base_url", None)), **options)
    return factory




def provider_base_url(spec: Spec) -> str | None:
    """The base URL a built-in provider's backend will use (spec, else its environment variable, else its default)."""
    info = PROVIDERS[spec.provider]
    base_url = spec.base_url or (os.environ.get(info.url_env) if info.url_env else None) or info.base_url
    if spec.provider == "ollama" and base_url and not base_url.rstrip("/").endswith("/v1"):
        base_url = base_url.rstrip("/") + "/v1"
        base_url = base_url if "//" in base_url else f"http://{base_url}"  # OLLAMA_HOST may be "host:port"
    return base_url


def _provider_backend(spec: Spec, *, api_key: str | None = None, timeout: float | None | str = "auto",
                      prices: Mapping[str, Price | tuple[float, float]] | None = None,
                      **backend_options: Any) -> Backend:
    """A built-in provider's backend, with credentials and base URL from options or the environment."""
    info = PROVIDERS[spec.provider]
    local_only = sorted(k for k in ("threads", "n_ctx", "gpu_layers") if backend_options.pop(k, None) is not None)
    if local_only:
        raise ConfigError(f"judge option(s) {', '.join(local_only)} apply only to an in-process judge "
                          f"(local:PATH.gguf), not to {spec.provider}:{spec.model}")
    base_url = provider_base_url(spec)
    local = info.local or is_local_url(base_url)
    if timeout == "auto":
        timeout = LOCAL_TIMEOUT if local else REMOTE_TIMEOUT
    key_env = info.key_env
    if spec.provider == "openai-compatible" and not _openai_host(base_url):
        key_env = tuple(n for n in key_env if n != "OPENAI_API_KEY")  # OpenAI's key is sent to OpenAI only
    api_key = api_key or _env(key_env)
    if api_key is None and not local and spec.provider != "openai-compatible":
        names = " or ".join(info.key_env)
        raise ConfigError(f"judge {spec.provider}:{spec.model} needs an API key: set {names} or pass api_key=...")
    price = resolve_price(spec.model, local=local, overrides=prices)
    if info.kind == "anthropic":
        return AnthropicJudge(spec.model, api_key=api_key, base_url=base_url, timeout=timeout, price=price,
                                **backend_options)
    if spec.provider == "azure":
        if not base_url:
            raise ConfigError("an Azure judge needs its endpoint: set AZURE_OPENAI_ENDPOINT or pass base_url=...")
        backend_options.setdefault("api_version", os.environ.get("OPENAI_API_VERSION", "2024-10-21"))
    return OpenAICompatible(spec.model, base_url=base_url, api_key=api_key, provider=spec.provider,
                         timeout=timeout, price=price, **backend_options)


def compose(backend: Judge, options: JudgeOptions | None = None, *, stats: JudgeStats | None = None,
            **kwargs: Any) -> Judge:
    """Wrap *backend* in the default stack; every layer shares one JudgeStats (``judge.stats``).

    The stack's settings are a :class:`JudgeOptions` (or its fields as keyword arguments):
    ``cache`` True for the default path, a path or JudgeCache, or False/None for no cache;
    ``trip_after`` / ``trip_grace_s``: skip the rest of a run's calls once that many attempts in a
    row failed without any answer for that long (:mod:`assay.judge._breaker`); 0 or None: never.
    ``prompt_style`` / ``ordinal_order``: how metrics phrase their requests to this judge
    (:mod:`assay.judge._style`); kept on the outermost layer, as are ``thresholds`` (how metrics
    decide yes/no answers from the judge's probabilities, :func:`assay.judge.answer_thresholds`).
    ``max_concurrency``: how far the concurrency limit may grow while latency holds; default
    ``GROWTH`` (4) x ``concurrency`` for elastic backends (the HTTP providers except single-slot
    local servers), else ``concurrency`` (no growth).
    """
    o = JudgeOptions.of(options, **kwargs)
    stats = stats or JudgeStats()
    budget = Budget(usd=o.budget_usd, tokens=o.budget_tokens) \
        if o.budget_usd is not None or o.budget_tokens is not None else None
    if budget is not None and budget.usd is not None and getattr(backend, "price", None) is None \
            and not isinstance(backend, ClientJudge):
        raise ConfigError(f"budget_usd needs a known price for {backend.model!r}: pass prices={{...}} "
                          "or use budget_tokens")
    judge: Judge = backend
    if isinstance(backend, DryRun):
        backend.stats = stats  # nothing is sent, so nothing to limit, retry or meter
    else:
        judge = Metered(judge, budget=budget, price=getattr(backend, "price", None), stats=stats)
        if o.trip_after:
            judge = Tripping(judge, trip_after=o.trip_after, grace_s=o.trip_grace_s, stats=stats)
        max_concurrency = o.max_concurrency
        if max_concurrency is None and getattr(backend, "elastic", False):
            max_concurrency = GROWTH * o.concurrency
        judge = Limited(judge, concurrency=o.concurrency, rpm=o.rpm, tpm=o.tpm, adaptive=o.adaptive,
                        max_concurrency=max_concurrency, stats=stats)
        judge = Retrying(judge, retries=o.retries, base_delay=o.base_delay, max_delay=o.max_delay, stats=stats)
        judge = Reasking(judge, reasks=o.reasks, stats=stats)
    if o.cache is not False and o.cache is not None:
        judge = Cached(judge, None if o.cache is True else o.cache, stats=stats)
    if o.prompt_style != "auto":
        judge.prompt_style = o.prompt_style  # type: ignore[attr-defined]
    if o.ordinal_order != "auto":
        judge.ordinal_order = o.ordinal_order  # type: ignore[attr-defined]
    if o.thresholds:
        judge.answer_thresholds = dict(o.thresholds)  # type: ignore[attr-defined]
    return judge


def make_judge(spec: Any = None, **options: Any) -> Judge:
    """A ready judge from a model string or object; see the module docstring for the stack.

    Strings: "gpt-4o", "openai:gpt-4o-mini", "anthropic:claude-3-5-sonnet-latest",
    "google:gemini-2.0-flash", "ollama:llama3", "openai-compatible:MODEL@http://host:port/v1".
    Objects: an existing Judge is returned unchanged; a LangChain chat model (``ainvoke``), an
    eval_lib-style client (``chat_complete``) or a function ``f(messages) -> str`` become backends.
    Options: the fields of :class:`JudgeOptions` (stack options of :func:`compose`; ``dry_run=True``;
    ``api_key``, ``base_url``, ``timeout``, ``prices``, ``max_tokens``, ``seed``, ``max_reply_mb`` for the
    backend);
    other keywords go to the backend factory.
    ``spec=None`` reads ASSAY_JUDGE; ASSAY_JUDGE_BASE_URL supplies a base URL for bare names.
    """
    return build_judge(spec, JudgeOptions.of(options))


def build_judge(spec: Any, options: JudgeOptions) -> Judge:
    """``make_judge`` with its options already typed: what the CLI, the engine and Dask workers call."""
    backend_options = options.backend()
    if spec is None:
        spec = os.environ.get("ASSAY_JUDGE")
        if not spec:
            raise ConfigError("no judge model given: pass one (e.g. 'openai:gpt-4o-mini') or set ASSAY_JUDGE")
    if isinstance(spec, str):
        base_url = backend_options.pop("base_url", None) or os.environ.get("ASSAY_JUDGE_BASE_URL") or None
        resolved = parse_spec(spec, base_url=base_url)
        if base_url and not resolved.base_url:
            resolved = Spec(resolved.provider, resolved.model, base_url)
        if options.dry_run:
            entry = _BACKENDS.get(resolved.provider)
            local = (entry is not None and entry.local) or is_local_url(resolved.base_url)
            price = resolve_price(resolved.model, local=local, overrides=options.prices)
            identity = None  # the real backend's, so a dry run sees the cache hits the run would get
            if resolved.provider in PROVIDERS:
                kind = "anthropic" if PROVIDERS[resolved.provider].kind == "anthropic" else resolved.provider
                identity = endpoint_identity(kind, provider_base_url(resolved),
                                             os.environ.get("OPENAI_API_VERSION", "2024-10-21")
                                             if resolved.provider == "azure" else None)
                if options.logprobs and kind != "anthropic":
                    identity["logprobs"] = check_logprobs(options.logprobs)
            return compose(DryRun(f"{resolved.provider}:{resolved.model}", price=price, identity=identity), options)
        return compose(build_backend(resolved, **backend_options), options)
    if isinstance(spec, Judge) and not isinstance(spec, Backend):
        if options != _NO_OPTIONS:
            raise ConfigError(f"options {sorted(options.given())!r} cannot apply to an existing judge "
                              f"{spec!r}; configure it where it is built")
        return spec
    backend = adapt(spec, **backend_options)
    if options.dry_run:
        return compose(DryRun(backend.model, price=backend.price, identity=backend.identity), options)
    return compose(backend, options)


_NO_OPTIONS = JudgeOptions()


def adapt(obj: Any, **options: Any) -> Backend:
    """A bare backend for a user object: Backend, LangChain model, custom client or callable."""
    prices = options.pop("prices", None)
    if isinstance(obj, Backend):
        return obj
    kind: type[Backend]
    if callable(getattr(obj, "ainvoke", None)):
        kind, what = LangChainJudge, "a LangChain chat model"
    elif callable(getattr(obj, "chat_complete", None)):
        kind, what = ClientJudge, "a chat_complete() client"
    elif callable(obj):
        kind, what = CallableJudge, "a function judge"
    else:
        raise ConfigError(f"cannot make a judge from {obj!r}: expected a model string, a Judge, a LangChain "
                          "chat model, a client with chat_complete(), or a function f(messages) -> str")
    check_factory(kind, what, options, positional=1)  # the object itself comes first
    backend: Backend = kind(obj, **options)
    if prices and backend.price is None:
        backend.price = resolve_price(backend.name, local=False, overrides=prices)
    return backend


def judge_from_env(**options: Any) -> Judge:
    """``make_judge`` for the model named by ASSAY_JUDGE (and ASSAY_JUDGE_BASE_URL)."""
    return make_judge(None, **options)

