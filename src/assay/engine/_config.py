"""Run configuration from a TOML or JSON file, merged under command-line flags.

Without ``--config``, ``assay run`` uses the first ``assay.toml``, or ``pyproject.toml`` with a
``[tool.assay]`` table, found in the working directory or one of its parents (``find_config``).

```toml
plugins = ["my_pkg.metrics"]          # modules to import first (their metrics can then be named)
judge = "openai:gpt-4o-mini"          # or [judge] with model = ... and options, or a jury:
                                       # [[judge]] tables with model = ... and weight = ...
metrics = ["tool_selection_accuracy", "latency_score:threshold_ms=1500"]
[[metric]]                             # or tables, one per metric, with parameters
name = "token_efficiency"
expected_tokens = 2000
[weights]                              # per dimension
tool_calling = 0.4
[thresholds]                           # per dimension
responsible_ai = 0.9
```
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..model._options import JudgeOptions

_KEYS = {"judge", "metrics", "metric", "weights", "thresholds", "criteria", "plugins"}
KEYS = frozenset(_KEYS)
"""Every top-level setting (the README documents each; a test holds the two together)."""
CONFIG_NAMES = ("assay.toml", "pyproject.toml")
_NEAR = {"weight": "weights", "threshold": "thresholds", "criterion": "criteria", "criterias": "criteria",
         "judges": "judge", "metrices": "metrics"}
"""Singular/plural slips, each explained rather than only flagged as unknown."""


@dataclass
class RunConfig:
    metrics: list[Any] | None = None
    judge: str | list[str] | None = None
    """One judge model, or the jurors of a jury (``[[judge]]`` tables)."""
    judge_weights: list[float] | None = None
    """The jurors' weights, when any ``[[judge]]`` table gives one."""
    source: Path | None = None
    """The file the settings came from (None: no file)."""
    judge_options: dict[str, Any] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=dict)
    criteria: list[dict[str, Any]] = field(default_factory=list)
    """Custom judge-criteria metrics defined in the file (G-Eval style)."""
    plugins: list[str] = field(default_factory=list)
    """Modules to import before metrics are resolved (``--plugin`` adds to them)."""

    def options(self) -> JudgeOptions:
        """The ``[judge]`` table's options, typed and checked (an error names the file)."""
        try:
            return JudgeOptions.of(self.judge_options)
        except (ConfigError, TypeError) as exc:
            raise ConfigError(f"{self.source}: [judge]: {exc}") from None


def find_config(start: str | Path | None = None) -> Path | None:
    """The nearest ``assay.toml`` (or ``pyproject.toml`` with ``[tool.assay]``) in ``start`` or its parents."""
    here = Path(start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "assay.toml").is_file():
            return d / "assay.toml"
        py = d / "pyproject.toml"
        if py.is_file():
            try:
                if "assay" in tomllib.loads(py.read_text(encoding="utf-8")).get("tool", {}):
                    return py
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue  # someone else's broken pyproject is not ours to report
    return None


def discover_config(start: str | Path | None = None) -> RunConfig:
    """``load_config`` of ``find_config(start)``, or an empty config when there is none."""
    found = find_config(start)
    return load_config(found) if found is not None else RunConfig()


def _plural_hint(key: str, value: Any, where: str) -> str | None:
    if key == "metric" and isinstance(value, list) and any(isinstance(v, str) for v in value):
        return (f"{where}: 'metric' is for [[metric]] tables (one per metric, with a name); for a list of names "
                f"write metrics = {json.dumps(value)}")
    if key == "metrics" and isinstance(value, dict):
        return (f"{where}: 'metrics' is a list; for one metric with parameters write a [[metric]] table "
                f"(note the double brackets), or metrics = [\"NAME:param=value\"]")
    if key in _NEAR:
        return f"{where}: unknown setting {key!r}: did you mean {_NEAR[key]!r}?"
    return None


def load_config(path: str | Path) -> RunConfig:
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror}") from None
    try:
        data = json.loads(raw) if p.suffix == ".json" else tomllib.loads(raw.decode())
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid {'JSON' if p.suffix == '.json' else 'TOML'}: {exc}") from None
    if p.name == "pyproject.toml" and isinstance(data, dict):
        data = data.get("tool", {}).get("assay", {})
        path = f"{path} [tool.assay]"
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a table of settings")
    for key, value in data.items():
        hint = _plural_hint(key, value, str(path))
        if hint:
            raise ConfigError(hint)
    unknown = set(data) - _KEYS
    if unknown:
        raise ConfigError.unknown(f"setting in {path}:", sorted(unknown)[0], _KEYS)
    cfg = RunConfig(source=p)
    metrics: list[Any] = []
    for m in data.get("metrics", []):
        if not isinstance(m, (str, dict)):
            raise ConfigError(f"{path}: metrics: expected names or tables, got {m!r}")
        metrics.append(m)
    singles = data.get("metric", [])
    for m in [singles] if isinstance(singles, dict) else singles:  # [metric] (one table) as well as [[metric]]
        if not isinstance(m, dict) or "name" not in m:
            raise ConfigError(f"{path}: [[metric]] entries need a 'name' (got {m!r})")
        metrics.append(m)
    cfg.metrics = metrics or None
    judge = data.get("judge")
    if isinstance(judge, dict):
        judge = dict(judge)
        cfg.judge = judge.pop("model", None)
        cfg.judge_options = judge
    elif isinstance(judge, list):
        models, weights = [], []
        for i, entry in enumerate(judge):
            entry = {"model": entry} if isinstance(entry, str) else entry
            if not isinstance(entry, dict) or not isinstance(entry.get("model"), str) or \
                    set(entry) - {"model", "weight"}:
                raise ConfigError(f"{path}: [[judge]] #{i + 1}: expected a table with model = \"...\" and an optional "
                                  f"weight, got {entry!r}")
            weight = entry.get("weight", 1.0)
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not (0 <= weight < math.inf):
                raise ConfigError(f"{path}: [[judge]] #{i + 1}: weight must be a finite number >= 0, got {weight!r}")
            models.append(entry["model"])
            weights.append(float(weight))
        cfg.judge = models or None
        cfg.judge_weights = weights if any("weight" in e for e in judge if isinstance(e, dict)) else None
    elif judge is not None:
        cfg.judge = str(judge)
    for key in ("weights", "thresholds"):
        table = data.get(key, {})
        if not isinstance(table, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                  for v in table.values()):
            raise ConfigError(f"{path}: [{key}] must map dimension names to numbers")
        for dim, v in table.items():
            check_setting(key[:-1], dim, float(v), f"{path}: [{key}] ")
        setattr(cfg, key, {k: float(v) for k, v in table.items()})
    cfg.criteria = list(data.get("criteria", []))
    plugins = data.get("plugins", [])
    if not isinstance(plugins, list) or not all(isinstance(p_, str) and p_.strip() for p_ in plugins):
        raise ConfigError(f"{path}: plugins: expected a list of module names, got {plugins!r}")
    cfg.plugins = list(plugins)
    return cfg


def check_setting(kind: str, dimension: str, value: float, where: str = "") -> None:
    """A weight must be finite and >= 0, a threshold in [0, 1]; ConfigError otherwise."""
    if kind == "weight" and not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"{where}weight of {dimension!r} must be a finite number >= 0, got {value!r}")
    if kind == "threshold" and not 0.0 <= value <= 1.0:
        raise ConfigError(f"{where}threshold of {dimension!r} must be between 0 and 1, got {value!r}")


def parse_weight(text: str) -> tuple[str, float]:
    """``--weight DIMENSION=W`` as (dimension, weight), checked like a config file's."""
    dim, eq, val = text.partition("=")
    try:
        weight = float(val)
    except ValueError:
        raise ConfigError(f"--weight {text!r}: expected DIMENSION=NUMBER") from None
    if not eq or not dim:
        raise ConfigError(f"--weight {text!r}: expected DIMENSION=NUMBER")
    check_setting("weight", dim, weight, f"--weight {text!r}: ")
    return dim, weight


def check_dimensions(weights: Mapping[str, float] | None, thresholds: Mapping[str, float] | None,
                     known: Iterable[str]) -> None:
    """Every weighted or thresholded dimension is known (built in, or declared by a metric) and
    its value in range; an unknown name is a ConfigError with the closest names."""
    known = set(known)
    for kind, table in (("weight", weights), ("threshold", thresholds)):
        for dim, value in (table or {}).items():
            if dim not in known:
                raise ConfigError.unknown(f"dimension (in the {kind}s)", dim, known)
            check_setting(kind, dim, float(value))
