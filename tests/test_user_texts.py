"""User-facing texts name the systems assay differs from; they never cite files users do not have."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
INTERNAL = re.compile(r"\bseeds?(?:'s)? \d{3}\b|\bPEERS\.md\b|\bthe seeds?(?:'s?)?\b|\bseed snippets?\b|\bseed page", re.I)


def _texts():
    yield from sorted((ROOT / "src" / "assay").rglob("*.py"))
    yield from sorted((ROOT / "src" / "assay").rglob("*.md"))
    yield from sorted((ROOT / "docs").glob("*.md"))
    yield ROOT / "README.md"
    yield ROOT / "CHANGELOG.md"


def test_no_internal_file_references_in_code_docs_or_readme():
    hits = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
            for path in _texts() if path.exists()
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if INTERNAL.search(line)]
    assert hits == [], "\n".join(hits)


def test_every_metric_description_is_free_of_them_too():
    from assay.metrics import REGISTRY  # what `assay metrics NAME` prints

    names = sorted(s.name for s in REGISTRY.specs())
    assert len(names) > 30
    bad = {n: INTERNAL.findall(REGISTRY.describe(n)) for n in names}
    assert {k: v for k, v in bad.items() if v} == {}
