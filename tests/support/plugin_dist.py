"""A real, installed third-party plugin: a distribution written to a directory put on sys.path.

``install_plugin(root)`` writes ``assay_dummy_plugin/`` and its ``.dist-info`` (METADATA,
entry_points.txt, RECORD: the layout pip installs) into *root*; with *root* on ``sys.path`` (or
``PYTHONPATH`` for a subprocess) ``importlib.metadata`` finds its entry points like any other
installed package. The plugin declares:

- ``assay.metrics``: ``shouty`` (a deterministic metric class) and ``assay_dummy_plugin.judged``
  (a module whose one-line ``rubric_metric`` defines the judge metric ``courtesy``);
- ``assay.judges``: ``dummy`` -> ``make_backend`` (an OpenAI-compatible backend at
  ``$DUMMY_JUDGE_URL``, as a real provider plugin would read its endpoint);
- ``assay.importers``: ``dummylog`` -> an Importer for ``*.dummylog`` files (one input per line).
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

DIST = "assay-dummy-plugin"
PACKAGE = "assay_dummy_plugin"

_INIT = '''
"""A dummy assay plugin (tests only)."""
import json
import os
from dataclasses import dataclass

from assay import MetricContext, metric
from assay.importers import Importer
from assay.judge import OpenAICompatible
from assay.model import Trace, Turn


@metric("shouty", dimension="style", register=False)
@dataclass(frozen=True, kw_only=True)
class Shouty:
    """Share of upper-case letters in the final output."""

    threshold: float = 0.5

    def score(self, ctx: MetricContext):
        text = (ctx.trace.turns[-1].output or "") if ctx.trace.turns else ""
        letters = [c for c in text if c.isalpha()]
        if not letters:
            return ctx.null("missing_data", "no letters in the output")
        return ctx.result(sum(c.isupper() for c in letters) / len(letters))


def make_backend(model, **options):
    return OpenAICompatible(model, base_url=os.environ["DUMMY_JUDGE_URL"], api_key="dummy", provider="dummy",
                            **options)


def _read(stream, source):
    for i, line in enumerate(stream):
        if line.strip():
            yield f"{source}:{i + 1}", Trace(id=f"d{i}", turns=[Turn(input="q", output=line.decode().strip())])


dummylog = Importer("dummylog", "one output per line (dummy plugin)", _read,
                    lambda head, filename: filename.endswith(".dummylog"))
'''

_JUDGED = '''
"""A judge metric in one line, from package data."""
from assay.metrics import rubric_metric

courtesy = rubric_metric("courtesy", rubric="package:assay_dummy_plugin/courtesy.md", dimension="style")
'''

_RUBRIC = "Is the final answer courteous to the user? 1 = courteous, 0 = rude.\n"

_ENTRY_POINTS = f'''
[assay.metrics]
shouty = {PACKAGE}:Shouty
judged = {PACKAGE}.judged

[assay.judges]
dummy = {PACKAGE}:make_backend

[assay.importers]
dummylog = {PACKAGE}:dummylog
'''


def install_plugin(root: Path) -> Path:
    """Write the plugin distribution into *root* (returned); put *root* on the path to install it."""
    pkg = root / PACKAGE
    pkg.mkdir(parents=True, exist_ok=True)
    files = {pkg / "__init__.py": _INIT, pkg / "judged.py": _JUDGED, pkg / "courtesy.md": _RUBRIC}
    info = root / f"{PACKAGE}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    files[info / "METADATA"] = f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 0.1\n"
    files[info / "entry_points.txt"] = _ENTRY_POINTS
    files[info / "top_level.txt"] = PACKAGE + "\n"
    for path, text in files.items():
        path.write_text(textwrap.dedent(text).lstrip())
    (info / "RECORD").write_text("".join(f"{p.relative_to(root)},,\n" for p in files) + f"{info.name}/RECORD,,\n")
    return root


@pytest.fixture()
def installed_plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The dummy plugin installed (on sys.path) for one test, then removed again.

    Its module entry point registers into the default registry, which is restored afterwards.
    """
    from assay.metrics._base import REGISTRY

    REGISTRY.names()
    saved = dict(REGISTRY._entries)
    root = install_plugin(tmp_path_factory.mktemp("site-packages"))
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    try:
        yield root
    finally:
        uninstall(root)
        REGISTRY._entries.clear()
        REGISTRY._entries.update(saved)


def uninstall(root: Path) -> None:
    """Take the plugin off ``sys.path`` and forget its modules."""
    while str(root) in sys.path:
        sys.path.remove(str(root))
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
