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
from typing import Any

from .errors import ConfigError

GROUPS = ("assay.metrics", "assay.judges", "assay.importers")


def entry_points(group: str) -> list[metadata.EntryPoint]:
    """The installed entry points of *group*, sorted by name (stable order across runs)."""
    return sorted(metadata.entry_points(group=group), key=lambda ep: ep.name)


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
        try:
            if name.endswith(".py"):
                _import_file(name)
            else:
                if os.getcwd() not in sys.path:
                    sys.path.append(os.getcwd())
                importlib.import_module(name)
        except ConfigError:
            raise
        except ImportError as exc:
            raise ConfigError(f"plugin {name!r} cannot be imported: {exc} (is it installed, or on PYTHONPATH?)") \
                from exc
        except Exception as exc:  # noqa: BLE001 - any failure inside third-party code
            raise ConfigError(f"plugin {name!r} failed while importing: {type(exc).__name__}: {exc}") from exc


def _import_file(path: str) -> None:
    import importlib.util

    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"plugin {path!r}: no such file")
    module_name = file.stem
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has a loader
        raise ConfigError(f"plugin {path!r}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
