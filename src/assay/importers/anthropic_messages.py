"""Anthropic Messages API logs.

The same record shapes as the ``openai`` importer (``{"messages"}`` records, message lists,
``{"request", "response"}`` logs), in Anthropic's spelling: a top-level ``system`` (a string or
text blocks), content blocks ``text`` / ``thinking`` / ``tool_use`` / ``tool_result`` with tool
results matched to their ``tool_use`` by id (``is_error`` results become the call's error), the
response as one ``{"type": "message", "role": "assistant", "content": [...]}`` object, and
``usage.input_tokens`` / ``output_tokens`` (cache reads and writes count as input).

Told from OpenAI data by its markers: those block types, ``stop_reason``, a ``claude`` model, or
a top-level ``system`` next to ``messages``.
"""

from __future__ import annotations

from ._chat import anthropic, is_chat, read
from ._native import TRACE_KEYS
from ._registry import Importer, register_importer
from ._sniff import inspect


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    return is_chat(h, TRACE_KEYS) and anthropic(h)


register_importer(Importer("anthropic", "Anthropic Messages API logs (content blocks, tool_use / tool_result)",
                           read, sniff))
