"""The one place assay.stats imports numpy: lazily, so `import assay.stats` stays light."""

from __future__ import annotations

from types import ModuleType

from assay.errors import ConfigError


def require_numpy(what: str) -> ModuleType:
    """numpy, or a ConfigError carrying the pip command when the `stats` extra is missing."""
    try:
        import numpy  # imported here so the package imports without the extra
    except ImportError:
        raise ConfigError.missing_extra(what, "stats", "numpy") from None
    return numpy


def canonical(keys):
    """*keys* in a canonical order, so results do not depend on the order the caller listed them."""
    try:
        return sorted(keys)
    except TypeError:  # mixed, incomparable ids
        return sorted(keys, key=lambda key: (type(key).__name__, repr(key)))
