"""OpenAI chat-completions data in the shapes it is logged and collected in.

- ``{"messages": [...]}`` records, the fine-tuning and evals JSONL shape, with or without an
  ``id`` (without: ``<file stem>-<n>``). Other top-level fields (``model``, ``tools``,
  ``temperature``, ...) are kept in ``metadata``; ``usage`` (``prompt_tokens`` /
  ``completion_tokens``) becomes the trace's usage.
- A list of messages, one per line, or a file that is one array of messages: one conversation.
- ``{"request": {...}, "response": {...}}`` logs: the request's ``messages`` followed by the
  response's ``choices[0].message``, with the response's ``usage`` and ``model``; Batch-API
  ``{"body": ...}`` wrappers are opened and ``custom_id`` is the id.
- A line holding a list of such records: one trace each (ids ``<stem>-<n>.<i>`` when they have none).

``{"id", "messages"}`` records with nothing else are assay's own format and read by it.
"""

from __future__ import annotations

from ._chat import anthropic, is_chat, read
from ._native import TRACE_KEYS
from ._registry import Importer, register_importer
from ._sniff import inspect


def sniff(head: bytes, filename: str) -> bool:
    h = inspect(head)
    return is_chat(h, TRACE_KEYS) and not anthropic(h)


register_importer(Importer("openai", "OpenAI chat logs: {messages} records, message lists, {request, response} logs",
                           read, sniff))
