"""Judges built from objects the user already has: a LangChain chat model, an eval_lib-style
client, or a plain async function. All are duck-typed, so no framework is imported here."""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
from collections.abc import Callable
from typing import Any

from .._secrets import register_secret
from ._base import Backend, Completion
from ._parse import Schema, VerdictSchema, schema_instruction
from ._prices import Price
from ._protocol import JudgeRequest


def _messages_with_schema(request: JudgeRequest) -> list[dict[str, str]]:
    """The request's messages plus the JSON-only instruction, for backends that cannot enforce a schema."""
    return [dict(m) for m in request.messages] + [{"role": "user", "content": schema_instruction(request.schema)}]


def _model_name(obj: Any, fallback: str) -> str:
    for attr in ("model_name", "model", "model_id", "name"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value:
            return value
    return fallback


_KEY_ATTRIBUTES = ("api_key", "openai_api_key", "anthropic_api_key", "google_api_key", "groq_api_key",
                   "mistral_api_key", "cohere_api_key", "together_api_key")


def _object_identity(backend: str, obj: Any) -> dict[str, Any]:
    """A user object's cache identity: its class (or function) and any endpoint it exposes."""
    kind = obj if inspect.isfunction(obj) or inspect.ismethod(obj) else type(obj)
    name = f"{getattr(kind, '__module__', '')}.{getattr(kind, '__qualname__', type(kind).__name__)}"
    out: dict[str, Any] = {"backend": backend, "type": name}
    for name in ("openai_api_base", "base_url", "anthropic_api_url", "endpoint", "azure_deployment",
                 "deployment_name"):
        value = getattr(obj, name, None)
        if isinstance(value, str) and value:
            out[name] = value.rstrip("/")
        elif value is not None and not callable(value):
            out[name] = str(value).rstrip("/")
    return out


def register_client_secrets(obj: Any) -> None:
    """Remember the API keys a user's client or LangChain model holds, so they are redacted too."""
    for holder in (obj, getattr(obj, "client", None), getattr(obj, "_client", None),
                   getattr(obj, "async_client", None)):
        if holder is None:
            continue
        for name in _KEY_ATTRIBUTES:
            try:
                register_secret(getattr(holder, name, None))
            except Exception:  # noqa: BLE001 - a property that raises holds no key we can read
                pass


class LangChainJudge(Backend):
    """Any LangChain ``BaseChatModel`` (anything with ``ainvoke``).

    Uses ``with_structured_output(schema, include_raw=True)`` when the model has it, so usage
    metadata survives; otherwise asks for JSON in the prompt and parses the text.
    """

    backend = "langchain"

    def __init__(self, chat_model: Any, *, name: str | None = None, timeout: float | None = 120.0,
                 structured: bool = True, price: Price | None = None) -> None:
        if not callable(getattr(chat_model, "ainvoke", None)):
            raise TypeError(f"a LangChain chat model needs an 'ainvoke' method, got {type(chat_model).__name__}")
        super().__init__(name or _model_name(chat_model, type(chat_model).__name__), timeout=timeout, price=price)
        self.chat_model, self.structured = chat_model, structured
        register_client_secrets(chat_model)
        self._identity = _object_identity(self.backend, chat_model)
        self._runnables: dict[Schema, tuple[Any, bool]] = {}

    def _runnable(self, schema: Schema) -> tuple[Any, bool]:
        """(runnable, include_raw) for *schema*; built once per schema."""
        if schema not in self._runnables:
            make = getattr(self.chat_model, "with_structured_output", None) if self.structured else None
            runnable, raw = self.chat_model, False
            if callable(make):
                # A model in an option order goes as its JSON schema (LangChain then returns a dict).
                target = schema if not isinstance(schema, VerdictSchema) else (
                    schema.model_json_schema() if schema.orders else schema.model)
                try:
                    runnable, raw = make(target, include_raw=True), True
                except TypeError:
                    runnable = make(target)
                except NotImplementedError:  # BaseChatModel's default when the provider lacks it
                    pass
            self._runnables[schema] = (runnable, raw)
        return self._runnables[schema]

    async def _complete(self, request: JudgeRequest) -> Completion:
        runnable, include_raw = self._runnable(request.schema)
        structured = runnable is not self.chat_model
        messages = [dict(m) for m in request.messages] if structured else _messages_with_schema(request)
        result = await runnable.ainvoke(messages)
        message = result.get("raw") if include_raw and isinstance(result, dict) else result
        if include_raw and isinstance(result, dict):
            result = result.get("parsed") if result.get("parsed") is not None else getattr(message, "content", "")
        pydantic = sys.modules.get("pydantic")  # (not imported here: a model in a reply means it is loaded)
        if pydantic is not None and isinstance(result, pydantic.BaseModel):
            text = result.model_dump_json()
        elif isinstance(result, dict):
            text = json.dumps(result, ensure_ascii=False)
        else:
            text = getattr(result, "content", result)
            text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
        usage = getattr(message, "usage_metadata", None) or {}
        return Completion(text=text, input_tokens=int(usage.get("input_tokens") or 0),
                          output_tokens=int(usage.get("output_tokens") or 0))


class ClientJudge(Backend):
    """An eval_lib-style client: ``async chat_complete(messages, temperature) -> (text, cost)`` and
    ``get_model_name()``. The cost it reports is used as is (None when it reports none)."""

    backend = "custom"

    def __init__(self, client: Any, *, timeout: float | None = 120.0, price: Price | None = None) -> None:
        if not callable(getattr(client, "chat_complete", None)):
            raise TypeError(f"a custom judge client needs 'chat_complete', got {type(client).__name__}")
        getter = getattr(client, "get_model_name", None)
        name = getter() if callable(getter) else _model_name(client, type(client).__name__)
        super().__init__(name, timeout=timeout, price=price)
        self.client = client
        register_client_secrets(client)
        self._identity = _object_identity(self.backend, client)

    async def _complete(self, request: JudgeRequest) -> Completion:
        result = self.client.chat_complete(_messages_with_schema(request), request.temperature)
        if inspect.isawaitable(result):
            result = await result
        text, cost = result if isinstance(result, tuple) else (result, None)
        return Completion(text=str(text), cost_usd=float(cost) if cost is not None else None)


_SIMPLE = (str, int, float, bool, type(None), bytes)


def _value_identity(value: Any, depth: int = 0) -> Any:
    """What a captured value contributes to a function's identity: immutable simple values as they are
    (a model name a closure was given), a function by its own fingerprint, anything else by its class
    and model name (a mutable list or dict by its type: its contents change while the judge runs;
    never a repr with a memory address)."""
    if isinstance(value, _SIMPLE):
        return value if not isinstance(value, bytes) else value.hex()
    if isinstance(value, (tuple, frozenset)) and depth < 3 and len(value) <= 32:
        items = [_value_identity(v, depth + 1) for v in value]
        return sorted(map(str, items)) if isinstance(value, frozenset) else items
    if (inspect.isfunction(value) or inspect.ismethod(value)) and depth < 3:
        return _function_fingerprint(value, depth + 1)
    kind = type(value)
    try:
        model = _model_name(value, "")
    except Exception:  # noqa: BLE001 - a property that raises names no model
        model = ""
    return f"{kind.__module__}.{kind.__qualname__}:{model}"


def _code_identity(code: Any) -> list[Any]:
    consts = [_code_identity(c) if inspect.iscode(c) else _value_identity(c) for c in code.co_consts]
    return [code.co_code.hex(), consts, list(code.co_names)]


def _function_fingerprint(fn: Any, depth: int = 0) -> str:
    """A digest of what a function does: its code, the values it closes over and its defaults, so two
    functions that share a name (two closures of one factory, each given its own model) are two judges."""
    owner = getattr(fn, "__self__", None)
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    material: list[Any] = [_code_identity(code)] if code is not None else [repr(type(fn))]
    cells = getattr(fn, "__closure__", None) or ()
    for cell in cells:
        try:
            material.append(_value_identity(cell.cell_contents, depth))
        except ValueError:  # an empty cell
            material.append(None)
    material.append(_value_identity(getattr(fn, "__defaults__", None) or (), depth))
    material.append(_value_identity(getattr(fn, "__kwdefaults__", None) or {}, depth))
    if owner is not None:
        material.append(_value_identity(owner, depth))
    blob = json.dumps(material, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CallableJudge(Backend):
    """A function ``f(messages) -> str`` (async or not): the smallest way to plug in any model.

    Its identity (the cache key) is its module, qualified name and a digest of its code, closure
    and defaults: two functions named ``judge`` never share verdicts. The model name (run records,
    judge cards) is the function's name: give ``name=`` the model it calls to tell two apart there."""

    backend = "callable"

    def __init__(self, function: Callable[[list[dict[str, str]]], Any], *, name: str | None = None,
                 timeout: float | None = 120.0, price: Price | None = None) -> None:
        if not callable(function):
            raise TypeError(f"expected a callable, got {type(function).__name__}")
        fingerprint = _function_fingerprint(function) if inspect.isfunction(function) or inspect.ismethod(function) \
            else _function_fingerprint(getattr(type(function), "__call__", function))  # noqa: B004 - the class's own
        super().__init__(name or getattr(function, "__name__", "function"), timeout=timeout, price=price)
        self.function = function
        self._identity = {**_object_identity(self.backend, function), "code": fingerprint}

    async def _complete(self, request: JudgeRequest) -> Completion:
        result = self.function(_messages_with_schema(request))
        if inspect.isawaitable(result):
            result = await result
        return Completion(text=result if isinstance(result, str) else json.dumps(result, default=str))
