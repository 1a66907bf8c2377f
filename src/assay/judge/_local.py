"""An in-process judge: a GGUF model run by llama.cpp through ``xllamacpp`` (``--judge local:PATH.gguf``).

No server to start and nothing leaves the machine. xllamacpp embeds llama.cpp's own server, so
requests and replies are the OpenAI chat-completions shapes and the verdict schema becomes a
grammar (constrained output: the reply is the object). One model load per process and per
settings, shared by every judge built on it; one slot, so calls run one at a time in a worker
thread, and a call that is still running is never abandoned and retried (the retry would only
queue behind it): there is no timeout unless one is asked for, and one asked for counts from when
the call has the slot (see ``Backend.single_slot``). llama.cpp keeps the previous
prompt's KV cache, so the static rubric at the head of each prompt is not recomputed; the reused
prompt tokens are counted in ``cached_prompt_tokens``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import threading
from pathlib import Path
from typing import Any

from assay.errors import ConfigError, ProviderError

from assay.model._options import N_CTX

from ._base import Backend, Completion
from ._parse import bounded_schema
from ._prices import Price
from ._protocol import JudgeRequest, check_logprobs, read_logprobs

DEFAULT_CTX = N_CTX

_LOADED: dict[tuple[str, int, int, int], Any] = {}
_LOAD_LOCK = threading.Lock()


def import_xllamacpp() -> Any:
    try:
        import xllamacpp  # imported here so that assay works without the extra
    except ImportError:
        raise ConfigError.missing_extra("a local judge (--judge local:PATH.gguf)", "local", "xllamacpp") from None
    return xllamacpp


def default_threads() -> int:
    """Half the cores: llama.cpp's threads spin while they wait, so on a busy machine more is slower."""
    return max(1, (os.cpu_count() or 2) // 2)


class _Model:
    """One loaded model and the lock that serialises its single slot."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.lock = threading.Lock()


def _load(path: str, threads: int, n_ctx: int, gpu_layers: int) -> _Model:
    key = (path, threads, n_ctx, gpu_layers)
    with _LOAD_LOCK:
        model = _LOADED.get(key)
        if model is None:
            x = import_xllamacpp()
            params = x.CommonParams()
            params.model.path = path
            params.n_ctx = n_ctx
            params.n_parallel = 1
            params.n_gpu_layers = gpu_layers
            params.cpuparams.n_threads = threads
            params.cpuparams_batch.n_threads = threads
            params.warmup = False
            params.cache_prompt = True
            try:
                params.verbosity = -1
            except (AttributeError, TypeError):
                pass
            try:
                server = x.Server(params)
            except Exception as exc:
                raise ConfigError(f"local judge: could not load {path}: {type(exc).__name__}: {exc}") from None
            model = _LOADED[key] = _Model(server)
    return model


_TIGHT = {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"}


@functools.lru_cache(maxsize=256)
def tight_grammar(schema_json: str) -> str | None:
    """The schema as an llguidance grammar for JSON without whitespace and without extra keys.

    llama.cpp's own schema grammar lets a model pretty-print, and small models do: indentation
    was 30-40% of a verdict's tokens, each one a full decoding step. Wheels built without
    llguidance get None and the plain ``response_format``.
    """
    x = import_xllamacpp()
    convert = getattr(x, "json_schema_to_grammar", None)
    if convert is None:
        return None

    def closed(node: Any) -> Any:
        if isinstance(node, list):
            return [closed(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: closed(v) for k, v in node.items()}
        if out.get("type") == "object" and "additionalProperties" not in out:
            out["additionalProperties"] = False  # llguidance would otherwise let the model add keys
        return out

    tight = {**closed(json.loads(schema_json)), "x-guidance": _TIGHT}
    try:
        grammar = convert(json.dumps(tight))
    except Exception:  # noqa: BLE001 - an unsupported schema keeps the plain response_format
        return None
    return grammar if isinstance(grammar, str) and grammar.startswith("%llguidance") else None


class LocalLlama(Backend):
    """A GGUF model in this process; ``model`` is ``"local:<file name>"``, cost 0.

    ``threads``: CPU threads (default half the cores); ``n_ctx``: context size in tokens (default
    8192; a prompt that does not fit is a per-call error saying so); ``gpu_layers``: layers to
    offload when the wheel has a GPU backend; ``text_limit``/``quote_limit``: the characters the
    grammar allows a free-text field / a quote, which bound the reply (and the default max_tokens).
    """

    backend = "local"
    single_slot = True

    def __init__(self, path: str | os.PathLike[str], *, threads: int | None = None, n_ctx: int | None = None,
                 gpu_layers: int = 0, timeout: float | None = None, max_tokens: int | None = None,
                 seed: int | None = None, temperature: float | None = None, price: Price | None = None,
                 text_limit: int = 400, quote_limit: int = 160, logprobs: int | None = None) -> None:
        file = Path(path).expanduser()
        if file.suffix.lower() != ".gguf":
            raise ConfigError(f"local judge: expected a .gguf model file, got {str(path)!r}")
        if not file.is_file():
            raise ConfigError(f"local judge: no model file at {str(file)!r}")
        import_xllamacpp()  # fail now, with the pip command, rather than at the first verdict
        super().__init__(str(file.resolve()), backend="local", timeout=timeout, price=price or Price(0.0, 0.0))
        self.model = f"local:{file.name}"
        self.threads = threads or default_threads()
        self.n_ctx = n_ctx or DEFAULT_CTX
        self.gpu_layers, self.max_tokens, self.seed, self.temperature = gpu_layers, max_tokens, seed, temperature
        self.text_limit, self.quote_limit = text_limit, quote_limit
        self.prompt_tokens = 0
        self.cached_prompt_tokens = 0
        self.logprobs = check_logprobs(logprobs)

    @property
    def identity(self) -> dict[str, Any]:
        # a verdict with probabilities is not one without: keyed apart, only when asked for
        return {"backend": self.backend, "logprobs": self.logprobs} if self.logprobs else {"backend": self.backend}

    def _params(self, request: JudgeRequest) -> dict[str, Any]:
        temperature = request.temperature if self.temperature is None or request.temperature else self.temperature
        # The grammar caps every string and list, so the reply closes within `bound` tokens:
        # max_tokens defaults to that bound; given both, the request's and the judge's, the tighter.
        schema, bound = bounded_schema(request.schema, self.text_limit, self.quote_limit)
        params: dict[str, Any] = {"messages": [dict(m) for m in request.messages], "temperature": temperature}
        grammar = tight_grammar(json.dumps(schema))  # key order is the order of generation
        if grammar is not None:
            params["grammar"] = grammar
        else:
            params["response_format"] = {"type": "json_schema", "json_schema": {"name": request.schema.__name__,
                                                                                "schema": schema}}
        params["max_tokens"] = min(filter(None, (request.max_tokens, self.max_tokens)), default=bound)
        if self.seed is not None:
            params["seed"] = self.seed
        if self.logprobs:
            params["logprobs"], params["top_logprobs"] = True, self.logprobs
        return params

    def _run(self, params: dict[str, Any]) -> Any:
        model = _load(self.name, self.threads, self.n_ctx, self.gpu_layers)
        with model.lock:
            return model.server.handle_chat_completions(params)

    async def _complete(self, request: JudgeRequest) -> Completion:
        running = asyncio.get_running_loop().run_in_executor(None, self._run, self._params(request))
        try:
            reply = await asyncio.shield(running)
        except asyncio.CancelledError:
            # llama.cpp cannot be stopped mid-call: this call holds the slot until the thread ends
            await asyncio.wait([running])
            raise
        if isinstance(reply, dict) and "error" in reply:
            raise self._error(reply["error"])
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not choices or not isinstance(choices[0], dict):
            raise ProviderError(f"local judge: unexpected reply {str(reply)[:200]!r}", backend="local",
                                model=self.name, retryable=False)
        choice = choices[0]
        text = (choice.get("message") or {}).get("content") or ""
        usage = reply.get("usage") or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens")
                     or (reply.get("timings") or {}).get("cache_n") or 0)
        self.prompt_tokens += prompt
        self.cached_prompt_tokens += cached
        truncated = choice.get("finish_reason") == "length"
        return Completion(text=text, input_tokens=prompt, output_tokens=int(usage.get("completion_tokens") or 0),
                          cost_usd=0.0, note="truncated at max_tokens" if truncated else None, structured=True,
                          truncated=truncated, tokens=read_logprobs(choice) if self.logprobs else None)

    def _error(self, error: Any) -> ProviderError:
        message = error.get("message") if isinstance(error, dict) else str(error)
        code = error.get("code") if isinstance(error, dict) else None
        text = str(message)
        if "context" in text.lower():
            text = (f"{text} (the prompt does not fit the local judge's context of {self.n_ctx} tokens: "
                    "pass a larger n_ctx, e.g. --judge-ctx 16384)")
        # No HTTP status: a prompt that does not fit is this call's failure, not the whole run's.
        return ProviderError(f"local judge: {text}" + (f" (code {code})" if code else ""), backend="local",
                             model=self.name, retryable=False)


def local_backend(model: str, **options: Any) -> LocalLlama:
    """The factory behind the ``local`` prefix: ``model`` is the path of a GGUF file."""
    for unused in ("api_key", "base_url", "prices", "structured"):
        options.pop(unused, None)
    return LocalLlama(model, **options)
