"""The record limits and text checks, for the importers (they live in model: chat messages decode
JSON-string tool arguments there, under the same limits)."""

from ..model._limits import (
    DEFAULT, MAX_DEPTH_CEILING, Limits, RecordError, _current, check_value, current, decode_text, depth_exceeds,
    loads, may_have_lone_surrogate, reading_limits, reject_constant, too_deep, too_large,
)

__all__ = ["DEFAULT", "MAX_DEPTH_CEILING", "Limits", "RecordError", "_current", "check_value", "current",
           "decode_text", "depth_exceeds", "loads", "may_have_lone_surrogate", "reading_limits", "reject_constant", "too_deep",
           "too_large"]
