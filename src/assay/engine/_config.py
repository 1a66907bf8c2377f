"""Run configuration from a TOML or JSON file, merged under command-line flags.

```toml
judge = "openai:gpt-4o-mini"          # or [judge] with model = ... and options
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
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError

_KEYS = {"judge", "metrics", "metric", "weights", "thresholds", "criteria"}


@dataclass
class RunConfig:
    metrics: list[Any] | None = None
    judge: str | None = None
    judge_options: dict[str, Any] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=dict)
    criteria: list[dict[str, Any]] = field(default_factory=list)
    """Custom judge-criteria metrics defined in the file (G-Eval style)."""


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
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a table of settings")
    unknown = set(data) - _KEYS
    if unknown:
        raise ConfigError.unknown(f"setting in {path}:", sorted(unknown)[0], _KEYS)
    cfg = RunConfig()
    metrics: list[Any] = []
    for m in data.get("metrics", []):
        if not isinstance(m, (str, dict)):
            raise ConfigError(f"{path}: metrics: expected names or tables, got {m!r}")
        metrics.append(m)
    for m in data.get("metric", []):
        if not isinstance(m, dict) or "name" not in m:
            raise ConfigError(f"{path}: [[metric]] entries need a 'name'")
        metrics.append(m)
    cfg.metrics = metrics or None
    judge = data.get("judge")
    if isinstance(judge, dict):
        judge = dict(judge)
        cfg.judge = judge.pop("model", None)
        cfg.judge_options = judge
    elif judge is not None:
        cfg.judge = str(judge)
    for key in ("weights", "thresholds"):
        table = data.get(key, {})
        if not isinstance(table, dict) or not all(isinstance(v, (int, float)) for v in table.values()):
            raise ConfigError(f"{path}: [{key}] must map dimension names to numbers")
        setattr(cfg, key, {k: float(v) for k, v in table.items()})
    cfg.criteria = list(data.get("criteria", []))
    return cfg
