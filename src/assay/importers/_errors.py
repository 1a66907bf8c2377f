"""Shared wording for messages about JSON input."""

from ..model._messages import json_type

__all__ = ["json_type"]
