"""Readers that turn files into traces: assay's own format and the formats agents already produce."""

from ._limits import Limits, reading_limits
from ._native import parse_trace
from ._registry import (
    Importer, check_file, detect_format, importer_origins, importers, load_traces, read_traces, register_importer,
)

__all__ = ["Importer", "Limits", "check_file", "detect_format", "importer_origins", "importers", "load_traces",
           "parse_trace", "read_traces", "reading_limits", "register_importer"]
