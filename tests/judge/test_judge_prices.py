"""The price table: known models priced, dated aliases mapped, unknown = None, local = 0."""

from __future__ import annotations

import pytest

from assay.judge import Price, is_local_url, lookup_price, resolve_price

CASES = [
    ("gpt-4o", (2.50, 10.00)), ("gpt-4o-2024-08-06", (2.50, 10.00)), ("gpt-4o-mini", (0.15, 0.60)),
    ("gpt-4o-mini-2024-07-18", (0.15, 0.60)), ("gpt-4.1", (2.00, 8.00)), ("gpt-4.1-mini", (0.40, 1.60)),
    ("gpt-4.1-nano", (0.10, 0.40)), ("o3", (2.00, 8.00)), ("o4-mini", (1.10, 4.40)),
    ("claude-3-5-sonnet-latest", (3.00, 15.00)), ("claude-3-7-sonnet-20250219", (3.00, 15.00)),
    ("claude-sonnet-4-20250514", (3.00, 15.00)), ("claude-3-5-haiku-latest", (0.80, 4.00)),
    ("claude-opus-4-1-20250805", (15.00, 75.00)), ("gemini-2.0-flash", (0.10, 0.40)),
    ("gemini-2.5-pro", (1.25, 10.00)), ("gemini-2.5-flash", (0.30, 2.50)), ("models/gemini-2.0-flash", (0.10, 0.40)),
    ("openai/gpt-4o-mini", (0.15, 0.60)), ("openai:gpt-4o", (2.50, 10.00)),
]


@pytest.mark.parametrize("model,price", CASES, ids=[c[0] for c in CASES])
def test_known_models(model, price):
    assert lookup_price(model) == Price(*price)


@pytest.mark.parametrize("model", ["llama3", "my-finetune", "gpt4o", "claude-2"])
def test_unknown_model_costs_none_not_zero(model):
    assert lookup_price(model) is None


def test_local_is_free_and_overrides_win():
    assert resolve_price("llama3", local=True) == Price(0, 0)
    assert resolve_price("gpt-4o", local=True) == Price(0, 0)
    assert resolve_price("gpt-4o", local=True, overrides={"gpt-4o": (1, 2)}) == Price(1, 2)
    assert resolve_price("my-finetune", local=False, overrides={"my-finetune": Price(3, 4)}) == Price(3, 4)
    assert Price(2.5, 10).cost(1_000_000, 100_000) == pytest.approx(3.5)


@pytest.mark.parametrize("url,local", [
    ("http://localhost:11434/v1", True), ("http://127.0.0.1:8000/v1", True), ("http://[::1]:8000", True),
    ("https://api.openai.com/v1", False), ("http://10.0.0.5:8000/v1", False), (None, False),
])
def test_is_local_url(url, local):
    assert is_local_url(url) is local
