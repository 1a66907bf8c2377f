"""The verdict fields the one-call judge metrics built with pydantic before verdict shapes: an independent
reference for what a shape must send and validate (tests compare the two)."""

from __future__ import annotations

from typing import Any

import pydantic


def evidence_and_reasoning(what: str, compact: bool) -> dict[str, Any]:
    """``evidence`` and ``reasoning`` for ``pydantic.create_model``, written out as they were."""
    if compact:
        return {
            "evidence": (list[str], pydantic.Field(
                description=f"At most two short quotes copied exactly from the evaluated text that support the {what} "
                            "(may be empty).", json_schema_extra={"maxItems": 2, "items": {"type": "string", "maxLength": 120}})),
            "reasoning": (str, pydantic.Field(description=f"One short sentence: why this {what}.",
                                              json_schema_extra={"maxLength": 200}))}
    return {"evidence": (list[str], pydantic.Field(
                description=f"Short verbatim quotes from the evaluated text that support the {what}.")),
            "reasoning": (str, pydantic.Field(description=f"Why the evidence leads to the {what}."))}


IGNORE_EXTRA = pydantic.ConfigDict(extra="ignore")
