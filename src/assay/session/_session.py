"""The session: what every command, ``assay.evaluate`` and the pytest plugin start from.

A :class:`Session` is opened once per command: it finds and reads the config file (``-c``, else
the nearest ``assay.toml`` or ``pyproject.toml`` with ``[tool.assay]``), imports the plugins it
and ``--plugin`` name, registers its ``[[criteria]]`` metrics, and then lays the command's flags
over the file as typed overrides: :meth:`judge_options` (``[judge]`` under the judge flags),
:meth:`judge_spec` and :meth:`judge` (the judge or jury, built once), :meth:`run_spec` (the
whole run). Commands that judge (run, calibrate, versus, tournament, collect) therefore read the
same file the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..engine._config import RunConfig, discover_config, load_config, parse_weight
from ..engine._spec import JudgeSpec, RunSpec
from ..errors import ConfigError
from ..model import RunResult
from ..model._options import JudgeOptions
from ._outputs import Output


class Session:
    """A command's configuration: the config file's settings, its plugins and criteria loaded."""

    def __init__(self, config: RunConfig | None = None) -> None:
        self.config = config if config is not None else RunConfig()

    @classmethod
    def open(cls, config: str | Path | None = None, *, plugins: Iterable[str] = (), discover: bool = True,
             start: str | Path | None = None) -> Session:
        """Read ``config`` (a TOML or JSON file), else the nearest config file from ``start`` (the working
        directory) when ``discover``; import its plugins and ``plugins``; register its ``[[criteria]]``."""
        if config is not None:
            cfg = load_config(config)
        else:
            cfg = discover_config(start) if discover else RunConfig()
        from .. import _plugins
        _plugins.import_modules([*cfg.plugins, *plugins])
        if cfg.criteria:
            from ..metrics.criteria import register_criteria
            where = f"{cfg.source}: " if cfg.source is not None else ""
            try:
                register_criteria(cfg.criteria)
            except ConfigError as exc:
                raise ConfigError(f"{where}{exc}") from None
        return cls(cfg)

    @property
    def source(self) -> Path | None:
        """The config file read (None: none)."""
        return self.config.source

    # -- the judge ---------------------------------------------------------------------------------
    def judge_options(self, flags: Mapping[str, Any] | None = None) -> JudgeOptions:
        """The config's ``[judge]`` options with ``flags`` over them: JudgeOptions fields as the judge flags give
        them (None or an unset switch: not given; ``no_cache=True``: ``cache=False``)."""
        given = {k: v for k, v in (flags or {}).items()
                 if v is not None and v is not False and v != () and k != "no_cache"}  # (): a repeatable flag not given
        if (flags or {}).get("no_cache"):
            given["cache"] = False
        return JudgeOptions.of(self.config.options(), **given)

    def judge_spec(self, judge: str | Sequence[str] | None = None, flags: Mapping[str, Any] | None = None, *,
                   weights: Sequence[float] | None = None, scores: str = "mean") -> JudgeSpec | None:
        """The judge a command runs: ``judge`` (one model or a jury's) else the config's, with the options of
        :meth:`judge_options`. None when there is no judge (judge options without one are an error)."""
        options = self.judge_options(flags)
        models: Any = [judge] if isinstance(judge, str) else list(judge or ())
        if not models:
            models = self.config.judge
            if weights is None:
                weights = self.config.judge_weights
        if isinstance(models, list) and not (len(models) > 1 or weights):
            models = models[0] if models else None
        if models is None:
            return JudgeSpec.of(None, options)
        return JudgeSpec.of(models, options, weights=weights, scores=scores)

    def judge(self, judge: str | Sequence[str] | None = None, flags: Mapping[str, Any] | None = None, *,
              needed_by: str | None = None, **jury: Any) -> Any:
        """The judge built (a Jury for several), or None; with ``needed_by`` (a command's name) no judge is an
        error saying how to give one."""
        spec = self.judge_spec(judge, flags, **jury)
        if spec is None:
            if needed_by is not None:
                raise ConfigError(f"{needed_by} needs a judge: pass --judge (e.g. openai:gpt-4o-mini), set "
                                  "ASSAY_JUDGE, or give judge = \"...\" in assay.toml")
            return None
        return spec.build()

    # -- the run -----------------------------------------------------------------------------------
    def metrics(self, given: Any = None) -> Any:
        """The metric selection: ``given`` (``-m``; names, tables, classes, instances, or a mapping of instance
        name -> item) when it names any, else the config's (None: every metric the data supports)."""
        if given is None or (isinstance(given, (tuple, list)) and not given):
            return self.config.metrics
        return list(given) if isinstance(given, tuple) else given

    def run_spec(self, *, metrics: Any = None, judge: JudgeSpec | None = None,
                 weights: Iterable[str] | Mapping[str, float] = (), **settings: Any) -> RunSpec:
        """The run's RunSpec: ``metrics`` else the config's, ``judge`` (see :meth:`judge_spec`), the config's
        weights with ``weights`` over them (``DIMENSION=W`` texts or a mapping), its thresholds, and
        ``settings`` (RunSpec fields: repeats, limits, max_errors, name, tags, executor ...)."""
        merged = dict(self.config.weights)
        if isinstance(weights, Mapping):
            merged.update(weights)
        else:
            merged.update(parse_weight(w) for w in weights)
        settings.setdefault("thresholds", self.config.thresholds)
        return RunSpec(metrics=self.metrics(metrics), judge=judge, weights=merged, **settings)

    def run(self, paths: Sequence[str], *, judge: str | Sequence[str] | None = None,
            judge_flags: Mapping[str, Any] | None = None, jury_weights: Sequence[float] | None = None,
            jury_scores: str = "mean", outputs: Iterable[Output] = (), fmt: str | None = None,
            store: Path | None = None, judge_cards: tuple[str, ...] = (), progress: Any = None,
            table: Any = None, near_end: Callable[[], None] | None = None, **spec: Any) -> RunResult:
        """Score ``paths``: the judge of :meth:`judge_spec`, the RunSpec of :meth:`run_spec` (``spec``: its
        settings), then :func:`~assay.session.run_files` into the store and the outputs. A dry run is a plan:
        it is not stored, no output file is written (one already there stays as it was), and its record
        says ``dry_run``."""
        from ._run import run_files

        judge_spec = self.judge_spec(judge, judge_flags, weights=jury_weights, scores=jury_scores)
        run_spec = self.run_spec(judge=judge_spec, **spec)
        result = run_files(list(paths), run_spec, outputs=() if run_spec.dry_run else outputs, fmt=fmt,
                           store=None if run_spec.dry_run else store, judge_cards=judge_cards, progress=progress,
                           table=table, near_end=near_end)
        if run_spec.dry_run:
            result.run.dry_run = True
        return result
