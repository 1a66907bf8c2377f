"""Third-party extensions: entry-point groups read lazily, and modules named by the user.

A plugin distribution declares, in its pyproject.toml::

    [project.entry-points."assay.metrics"]
    polite = "my_pkg.metrics:Polite"          # a metric class (its spec name is the metric's name)
    [project.entry-points."assay.judges"]
    myprovider = "my_pkg.judge:make_backend"  # factory(model, **options) -> Backend
    [project.entry-points."assay.importers"]
    mylog = "my_pkg.importer:MYLOG"            # an Importer, or a module that registers importers

Groups are read only when a name is looked up or listed, never at ``import assay``.
``--plugin my_pkg.metrics`` or ``--plugin ./my_metrics.py`` (or ``plugins = [...]`` in
assay.toml) imports a module whose ``@metric`` / ``register_backend`` / ``register_importer``
calls register what it defines.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import ConfigError

GROUPS = ("assay.metrics", "assay.judges", "assay.importers")


def entry_points(group: str) -> list[metadata.EntryPoint]:
    """The installed entry points of *group*, sorted by name (stable order across runs).

    Every group of every installed distribution is read in one scan, kept while ``sys.path`` is the same:
    a run looks up two or three groups, and each scan reads every distribution's metadata (about 3 ms here).
    A distribution added to a directory already on ``sys.path`` while the process runs is not seen (the
    registries load their plugins once anyway); one on a new path entry is."""
    global _SCANNED
    path = tuple(sys.path)
    if _SCANNED is None or _SCANNED[0] != path:
        _SCANNED = (path, metadata.entry_points(), {})  # (Python 3.11: groups by name, read through .select)
    _, scanned, groups = _SCANNED
    found = groups.get(group)
    if found is None:
        found = groups[group] = sorted(scanned.select(group=group), key=lambda ep: ep.name)
    return list(found)


_SCANNED: tuple[tuple[str, ...], Any, dict[str, list[metadata.EntryPoint]]] | None = None
"""``sys.path`` when the installed distributions were scanned, the scan, and each group read from it."""


def origin_of(ep: metadata.EntryPoint) -> str:
    """'plugin NAME' for the distribution that declares *ep* (its module when unknown)."""
    dist = getattr(ep, "dist", None)
    return f"plugin {dist.metadata['Name'] if dist is not None else ep.value.partition(':')[0]}"


def load(ep: metadata.EntryPoint) -> Any:
    """The object *ep* names; an import failure is a ConfigError naming the plugin."""
    try:
        return ep.load()
    except Exception as exc:  # noqa: BLE001 - any failure inside third-party code
        raise ConfigError(f"{origin_of(ep)}: entry point {ep.group}:{ep.name} = {ep.value!r} failed to load: "
                          f"{type(exc).__name__}: {exc}") from exc


def import_modules(modules: Iterable[str]) -> None:
    """Import each ``module.path`` or ``file.py`` (``--plugin``, config ``plugins``); registration is theirs.

    The working directory is searched too (after everything else), so ``--plugin my_metrics``
    finds ``./my_metrics.py`` as ``python -m`` would.
    """
    for name in modules:
        name = name.strip()
        if not name or name in sys.modules:
            continue
        if name.endswith(".py") and not Path(name).is_file():
            raise ConfigError(f"plugin {name!r}: no such file")
        try:
            import_module_ref(name)
        except ImportError as exc:
            raise ConfigError(f"plugin {name!r} cannot be imported: {exc} (is it installed, or on PYTHONPATH?)") \
                from exc
        except Exception as exc:  # noqa: BLE001 - any failure inside third-party code
            raise ConfigError(f"plugin {name!r} failed while importing: {type(exc).__name__}: {exc}") from exc


def import_module_ref(name: str) -> ModuleType:
    """The module *name* names: a dotted name (the working directory searched last, as ``python -m``
    would) or a ``file.py`` path (registered under its stem). Imported once: a later call for the
    same module returns it, so a file is not executed again (``assay collect`` asks per trial)."""
    if not name.endswith(".py"):
        if os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())
        return importlib.import_module(name)
    from importlib import util

    file = Path(name).resolve()
    loaded = sys.modules.get(file.stem)
    if loaded is not None and getattr(loaded, "__file__", None) and Path(loaded.__file__).resolve() == file:
        return loaded
    if not file.is_file():
        raise ImportError(f"no such file {name!r}")
    spec = util.spec_from_file_location(file.stem, file)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has a loader
        raise ImportError(f"{name!r} cannot be loaded as a Python module")
    module = util.module_from_spec(spec)
    sys.modules[file.stem] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[file.stem]
        raise
    return module
