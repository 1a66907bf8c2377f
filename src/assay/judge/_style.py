"""How a judge wants its prompts: the full or the compact form, and the order of ordinal options.

Both are settings of the judge, not of a metric: the same metric asks a frontier model and a
1.5B local model differently. ``make_judge(..., prompt_style="compact", ordinal_order="natural")``
(``--prompt-style`` / ``--ordinal-order``, ``[judge]`` keys ``prompt_style`` / ``ordinal_order``)
sets them; ``"auto"`` resolves from the model. Metrics read the resolved values with
:func:`prompt_style` and :func:`ordinal_order`, which look through wrapper layers.
"""

from __future__ import annotations

import re
from typing import Any

from assay.model._options import ORDINAL_ORDERS as ORDINAL_ORDERS, PROMPT_STYLES as PROMPT_STYLES  # re-exported by the judge package

SMALL_PARAMS_B = 9.0
"""Models whose name states at most this many billion parameters get the compact form."""
_SIZE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)\s*b(?![a-z0-9])", re.IGNORECASE)
_SMALL_FAMILIES = re.compile(r"smollm|tinyllama|qwen[\d.]*-?(?:coder-)?0\.5|phi-?[1-4]-mini|gemma-?\d*-?270m",
                             re.IGNORECASE)


def auto_style(model: str, *, local: bool = False) -> str:
    """``compact`` for a model that names a small size (``qwen2.5:1.5b``, ``Llama-3.2-3B``), a
    small family, or an in-process GGUF file without a size; else ``full``."""
    local = local or model.startswith("local:")
    name = model.rpartition("/")[2]
    sizes = [float(m.group(1)) for m in _SIZE.finditer(name)]
    if sizes:
        return "compact" if min(sizes) <= SMALL_PARAMS_B else "full"
    if _SMALL_FAMILIES.search(name) or local:
        return "compact"
    return "full"


def _layers(judge: Any) -> list[Any]:
    out, seen = [], set()
    while judge is not None and id(judge) not in seen:
        seen.add(id(judge))
        out.append(judge)
        judge = getattr(judge, "inner", None)
    return out


def _setting(judge: Any, attr: str) -> str | None:
    for layer in _layers(judge):
        value = getattr(layer, attr, None)
        if isinstance(value, str) and value != "auto":
            return value
    return None


def resolved(judge: Any) -> tuple[str, str]:
    """``(prompt_style(judge), ordinal_order(judge))``, remembered on the judge: every judge
    metric asks for them once per trace, and walking the layers each time showed in profiles."""
    if judge is None:
        return "full", AUTO_ORDER["full"]
    mark = (getattr(judge, "prompt_style", None), getattr(judge, "ordinal_order", None))
    memo = getattr(judge, "_assay_style_memo", None)
    if memo is not None and memo[0] == mark:
        return memo[1]
    got = (prompt_style(judge), ordinal_order(judge))
    try:
        judge._assay_style_memo = (mark, got)
    except (AttributeError, TypeError):
        pass  # a judge with slots: resolve each time
    return got


def prompt_style(judge: Any) -> str:
    """The resolved prompt form of *judge*: the first explicit setting in its layers, else by model."""
    if judge is None:
        return "full"
    explicit = _setting(judge, "prompt_style")
    if explicit is not None:
        return explicit
    inner = _layers(judge)[-1]
    model = str(getattr(inner, "model", "") or "")
    return auto_style(model, local=getattr(inner, "backend", None) == "local")


def ordinal_order(judge: Any) -> str:
    """The resolved order of ordinal options for *judge* (``auto``: see :data:`AUTO_ORDER`)."""
    explicit = _setting(judge, "ordinal_order") if judge is not None else None
    return explicit or AUTO_ORDER[prompt_style(judge)]


AUTO_ORDER = {"full": "shuffled", "compact": "natural"}
"""The default ordinal order per prompt form; docs/judges.md gives the measurements behind it."""


def answer_thresholds(judge: Any) -> dict[str, float]:
    """The per-question decision thresholds of *judge* (``{"failure_rate.admits": 0.35}``), from the first
    layer that has them (``make_judge(..., thresholds=...)``); empty: decide by the judge's own token."""
    for layer in _layers(judge):
        value = getattr(layer, "answer_thresholds", None)
        if isinstance(value, dict) and value:
            return value
    return {}
