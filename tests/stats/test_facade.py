"""The assay.stats facade: explicit exports, and an import that pulls in neither numpy nor scipy."""

import json
import pathlib
import re
import subprocess
import sys

import assay.stats


def test_all_names_resolve_and_are_public():
    assert sorted(assay.stats.__all__) == sorted(set(assay.stats.__all__))
    for name in assay.stats.__all__:
        value = getattr(assay.stats, name)
        if name.isupper():  # family names, e.g. "trial_unbiased"
            assert isinstance(value, str)
        else:
            assert value.__module__.startswith("assay.stats._"), name


def test_import_loads_no_numpy_or_scipy():
    code = ("import sys, json, assay.stats;"
            "print(json.dumps(sorted(m for m in ('numpy', 'scipy') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert json.loads(out) == []


def test_stats_imports_nothing_else_from_assay():
    # The statistics layer sits below metrics, engine and the rest: only the error tree is allowed.
    # (`import assay.stats` runs assay/__init__.py first, so sys.modules cannot tell; read the source.)
    for path in pathlib.Path(assay.stats.__file__).parent.glob("*.py"):
        for line in path.read_text().splitlines():
            match = re.match(r"\s*(?:from|import)\s+(assay\.\w+)", line)
            if match:
                assert match.group(1) in ("assay.stats", "assay.errors"), (path.name, line)
