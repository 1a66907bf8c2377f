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
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import ConfigError

GROUPS = ("assay.metrics", "assay.judges", "assay.importers")


def entry_points(group: str) -> list[Any]:
    """The installed entry points of *group* (``EntryPoint``, or importlib.metadata's where it scans), sorted by
    name (stable order across runs).

    Every group of every installed distribution is read in one scan, kept while ``sys.path`` is the same:
    a run looks up two or three groups. A distribution added to a directory already on ``sys.path`` while
    the process runs is not seen (the registries load their plugins once anyway); one on a new path entry is."""
    global _SCANNED
    path = tuple(sys.path)
    if _SCANNED is None or _SCANNED[0] != path:
        _SCANNED = (path, _scan(), {})
    _, scanned, groups = _SCANNED
    found = groups.get(group)
    if found is None:
        found = groups[group] = sorted(scanned.get(group, ()) if type(scanned) is dict  # (not 3.11's SelectableGroups)
                                       else scanned.select(group=group), key=lambda ep: ep.name)
    return list(found)


_SCANNED: tuple[tuple[str, ...], Any, dict[str, list[Any]]] | None = None
"""``sys.path`` when the installed distributions were scanned, the scan, and each group read from it."""


class EntryPoint:
    """An entry point read from a distribution's ``entry_points.txt``: what assay uses of importlib.metadata's
    (``name``, ``value``, ``group``, ``load()``), and ``info``, the distribution's ``*.dist-info`` or
    ``*.egg-info`` directory (its name, for messages, read from there when asked)."""

    __slots__ = ("name", "value", "group", "info")

    def __init__(self, name: str, value: str, group: str, info: str) -> None:
        self.name, self.value, self.group, self.info = name, value, group, info

    def load(self) -> Any:
        """The object the entry point names (``module`` or ``module:attr.attr``), as importlib.metadata loads it."""
        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"not an entry point reference: {self.value!r}")
        obj: Any = importlib.import_module(match.group("module"))
        for attr in filter(None, (match.group("attr") or "").split(".")):
            obj = getattr(obj, attr)
        return obj

    def dist_name(self) -> str | None:
        """The ``Name`` its distribution's metadata gives (None when it gives none)."""
        for file in ("METADATA", "PKG-INFO"):
            try:
                with open(os.path.join(self.info, file), encoding="utf-8", errors="replace") as f:
                    for line in f:
                        if not line.strip():
                            break  # the headers end here
                        if line[:5].lower() == "name:":
                            return line[5:].strip()
            except OSError:
                continue
        return None

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"


_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")
"""importlib.metadata's ``EntryPoint.pattern``."""


def _scan() -> Any:
    """Every entry point of the distributions on ``sys.path``, by group: their ``entry_points.txt`` files read
    directly (importlib.metadata's import and scan cost 14-20 ms of every command's start; this, 2.4 ms here).
    As importlib.metadata does, a distribution found in two places counts where ``sys.path`` names it first.
    Where that is not enough (a zip file on ``sys.path``, or an import hook that finds distributions of its
    own), importlib.metadata scans instead."""
    if any(hasattr(f, "find_distributions") and not _reads_sys_path(f) for f in sys.meta_path):
        return _metadata_scan()
    groups: dict[str, list[EntryPoint]] = {}
    seen: set[str] = set()
    for entry in sys.path:
        folder = entry or "."
        try:
            names = os.listdir(folder)
        except NotADirectoryError:
            return _metadata_scan()  # a zip (or egg) file: importlib.metadata reads those
        except OSError:
            continue
        for name in names:
            lower = name.lower()
            if not (lower.endswith(".dist-info") or lower.endswith(".egg-info")):
                continue
            dist = re.sub(r"[-_.]+", "_", name.rpartition(".")[0].partition("-")[0]).lower()
            if dist in seen:
                continue
            info = os.path.join(folder, name)
            if not os.path.isdir(info):
                continue
            seen.add(dist)
            try:
                with open(os.path.join(info, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except OSError:
                continue
            _parse(text, info, groups)
    return groups


def _reads_sys_path(finder: Any) -> bool:
    """Whether *finder* finds distributions only where this scan looks: the standard path finder, or the
    ``importlib_metadata`` backport's (which some libraries import, and which adds itself to ``sys.meta_path``)."""
    from importlib.machinery import PathFinder

    kind = finder if isinstance(finder, type) else type(finder)
    return finder is PathFinder or (kind.__module__ == "importlib_metadata" and kind.__name__ == "MetadataPathFinder")


def _parse(text: str, info: str, groups: dict[str, list[EntryPoint]]) -> None:
    """An ``entry_points.txt``: ``[group]`` sections of ``name = value`` lines (``#`` and ``;`` comments)."""
    group = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line[0] == "[" and line[-1] == "]":
            group = line[1:-1].strip()
            continue
        name, eq, value = line.partition("=")
        if group is not None and eq:
            groups.setdefault(group, []).append(EntryPoint(name.strip(), value.strip(), group, info))


def _metadata_scan() -> Any:
    from importlib import metadata

    return metadata.entry_points()  # (Python 3.11: groups by name, read through .select)


def origin_of(ep: Any) -> str:
    """'plugin NAME' for the distribution that declares *ep* (its module when unknown)."""
    name = ep.dist_name() if isinstance(ep, EntryPoint) else (
        ep.dist.metadata["Name"] if getattr(ep, "dist", None) is not None else None)
    return f"plugin {name if name else ep.value.partition(':')[0]}"


def load(ep: Any) -> Any:
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
