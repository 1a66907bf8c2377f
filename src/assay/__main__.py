"""``python -m assay``."""

from .cli import entry

entry()
