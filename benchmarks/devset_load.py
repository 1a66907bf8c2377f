"""The written development set (``benchmarks/devset/``): load, validate, second labels, agreement.

Each writer wrote ``W<letter>/failure_rate.jsonl`` and ``W<letter>/goal_achievement_rate.jsonl``
(one labelled conversation per line: ``{"id", "label", "note", "turns", "expected"?}``); another
person relabelled every item blind into ``labels/<labeller>_on_<writer>_<metric>.jsonl`` (``{"id",
"label", "note"}`` lines; ids are the writer's, or the blind copies' opaque ids, mapped back through
any ``map_<letter>.json`` under the set's folder). An item enters the set only when both labels
agree, or when ``adjudicated.jsonl`` (``{"id", "label", "note"}``) settles the disagreement; every
other disagreement is listed in ``DISAGREEMENTS.md`` and left out. The halves are by writer, fixed
before any figure was seen: tuning = A, C (and E), held-back = B, D (and F).

    python benchmarks/devset_load.py --check [--root DIR]   # counts, agreement; exit 1 on any invalid item
    python benchmarks/devset_load.py --write [--root DIR]   # (re)write DISAGREEMENTS.md
    python benchmarks/devset_load.py --markdown             # the README's agreement and kept-items tables

``items(metric, half)`` gives the agreed items in the form ``judge_quality`` scores: a trace plus
``label``, ``score`` (the label's weight, as in ``judge_quality_set``), ``note`` and ``writer``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_quality_set import FAILURE_WEIGHTS, ORDINAL, OUTCOME_WEIGHTS  # noqa: E402

from assay import read_traces  # noqa: E402
from assay.stats import cohen_kappa, confusion_matrix  # noqa: E402

ROOT = Path(__file__).resolve().parent / "devset"
WEIGHTS = {"failure_rate": FAILURE_WEIGHTS, "goal_achievement_rate": OUTCOME_WEIGHTS}
METRICS = tuple(WEIGHTS)
SHORT = {"failure_rate": "fr", "goal_achievement_rate": "ga"}
# Fixed before any judge ran on the set. A and C / B and D as issue #41's brief set them; E and F,
# added later, go with the voices nearest theirs so no phrasing crosses: E (agents acting through
# tools: bookings, email, SQL) beside A (support desks with tools), F (a librarian's sources and
# citations) beside B and D (docs, flags and versions; trivia facts).
HALF_OF_WRITER = {"A": "tuning", "C": "tuning", "E": "tuning", "B": "heldback", "D": "heldback", "F": "heldback"}
HALVES = ("tuning", "heldback")
ITEM_KEYS = {"id", "label", "note", "turns", "expected", "metadata"}
TRACE_KEYS = ("id", "turns", "expected", "metadata")
LABEL_FILE = re.compile(r"^(?P<labeller>.+)_on_W?(?P<writer>[A-Z])_(?P<metric>failure_rate|goal_achievement_rate|fr|ga)"
                        r"\.jsonl$")


def labels_of(metric: str) -> list[str]:
    """The metric's labels: goal levels in scale order (none .. fully), failure labels as weighted."""
    return list(ORDINAL.get(metric) or WEIGHTS[metric])


@dataclass
class Item:
    """One written conversation with its writer's label and, where relabelled, the second label."""

    metric: str
    writer: str
    where: str                       # "WA/failure_rate.jsonl:12"
    record: dict[str, Any]           # the line as written
    second: tuple[str, str, str] | None = None   # (labeller, label, note)
    adjudicated: tuple[str, str] | None = None   # (label, note)

    @property
    def id(self) -> str:
        return str(self.record["id"])

    @property
    def label(self) -> str:
        return str(self.record["label"])

    @property
    def half(self) -> str:
        return HALF_OF_WRITER[self.writer]

    @property
    def agreed_label(self) -> str | None:
        """The label the set uses: both labels when equal, else an adjudication, else None (left out)."""
        if self.second is not None and self.second[1] == self.label:
            return self.label
        return self.adjudicated[0] if self.adjudicated else None

    def as_trace_item(self, written: bool = False) -> dict[str, Any]:
        label = self.label if written else self.agreed_label or self.label
        out = {k: self.record[k] for k in TRACE_KEYS if k in self.record}
        out.update(label=label, score=WEIGHTS[self.metric][label], note=self.record.get("note", ""), writer=self.writer)
        return out


@dataclass
class DevSet:
    root: Path
    items: dict[str, list[Item]] = field(default_factory=lambda: {m: [] for m in METRICS})
    problems: list[str] = field(default_factory=list)   # invalid items and label lines: the set is unusable
    notes: list[str] = field(default_factory=list)      # worth reading, not invalid (reading warnings)
    labellers: dict[tuple[str, str], str] = field(default_factory=dict)  # (writer, metric) -> labeller

    def agreed(self, metric: str, half: str | None = None, writer: str | None = None) -> list[Item]:
        return [i for i in self.items[metric] if i.agreed_label is not None
                and (half is None or i.half == half) and (writer is None or i.writer == writer)]

    def disagreements(self, metric: str) -> list[Item]:
        return [i for i in self.items[metric] if i.second is not None and i.second[1] != i.label]


def _read_jsonl(path: Path, where: str, problems: list[str]) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}:{n}: not JSON: {exc}")
            continue
        if not isinstance(value, dict):
            problems.append(f"{where}:{n}: expected a JSON object, got {type(value).__name__}")
            continue
        out.append((n, value))
    return out


def _check_item(metric: str, writer: str, where: str, rec: dict[str, Any]) -> list[str]:
    """What is wrong with one written item, beyond what assay's reader checks."""
    bad = []
    labels = labels_of(metric)
    if not isinstance(rec.get("id"), str) or not rec["id"]:
        bad.append(f"{where}: id: expected a non-empty string, got {rec.get('id')!r}")
    elif not re.match(rf"W?{writer}-{SHORT[metric]}-\w+$", rec["id"]):
        bad.append(f"{where}: id: {rec['id']!r} should read {writer}-{SHORT[metric]}-<number> or W{writer}-... "
                   f"(writer W{writer}, {metric})")
    if rec.get("label") not in labels:
        bad.append(f"{where}: label: {rec.get('label')!r} is not one of {labels}")
    if not isinstance(rec.get("note"), str) or not rec["note"].strip():
        bad.append(f"{where}: note: expected a one-line reason, got {rec.get('note')!r}")
    unknown = sorted(set(rec) - ITEM_KEYS)
    if unknown:
        bad.append(f"{where}: unknown field(s) {unknown}; an item has {sorted(ITEM_KEYS)}")
    turns = rec.get("turns")
    if not isinstance(turns, list) or not turns:
        bad.append(f"{where}: turns: expected a non-empty list, got {turns!r:.60}")
    else:
        for t, turn in enumerate(turns):
            for key in ("input", "output"):
                if not isinstance(turn, dict) or not isinstance(turn.get(key), str) or not turn[key].strip():
                    bad.append(f"{where}: turns[{t}].{key}: expected non-empty text")
    return bad


def _read_as_traces(records: list[tuple[str, int, dict[str, Any]]], problems: list[str], notes: list[str]) -> set[str]:
    """Every item through ``assay.read_traces`` (label and note set aside, as ``judge_quality`` does);
    returns where the items that did not read are."""
    if not records:
        return set()
    with tempfile.TemporaryDirectory(prefix="devset-") as tmp:
        path = Path(tmp) / "items.jsonl"
        lines = (json.dumps({k: rec[k] for k in TRACE_KEYS if k in rec}, ensure_ascii=False) for _, _, rec in records)
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        where = {n: w for n, (w, _, _) in enumerate(records, 1)}
        with warnings.catch_warnings(record=True):  # duplicate ids: checked and named by the loader
            warnings.simplefilter("always")
            read = list(read_traces(path, input_format="assay"))
        failed: set[str] = set()
        traced = 0
        for _, got in read:
            if hasattr(got, "turns"):
                traced += 1
                continue
            msg = ": ".join(p for p in (getattr(got, "field", None), getattr(got, "message", str(got))) if p)
            line = where.get(getattr(got, "line", None) or 0, "?")
            if getattr(got, "is_warning", False):
                notes.append(f"{line}: as an assay trace: {msg}")
            else:
                problems.append(f"{line}: as an assay trace: {msg}")
                failed.add(line)
        if traced + len(failed) < len(records):
            problems.append(f"{len(records) - traced} item(s) did not read as assay traces")
    return failed


def _blind_maps(root: Path) -> dict[str, str]:
    """Opaque ids of the blind copies -> the writers' ids, from every map_<letter>.json under *root*."""
    mapping: dict[str, str] = {}
    for path in sorted(root.rglob("map_*.json")):
        mapping.update({str(k): str(v) for k, v in json.loads(path.read_text(encoding="utf-8")).items()})
    return mapping


def load(root: Path | str = ROOT) -> DevSet:
    """Read every writer file and label file under *root*; problems are collected, not raised."""
    root = Path(root)
    ds = DevSet(root=root)
    by_id: dict[str, Item] = {}
    records: list[tuple[str, int, dict[str, Any]]] = []
    for folder in sorted(p for p in root.glob("W?") if p.is_dir()):
        writer = folder.name[1]
        if writer not in HALF_OF_WRITER:
            ds.problems.append(f"{folder.name}: writer {writer!r} is in no half (HALF_OF_WRITER in "
                               f"benchmarks/devset_load.py has {', '.join(sorted(HALF_OF_WRITER))})")
            continue
        for other in sorted(p.name for p in folder.iterdir() if p.name not in {f"{m}.jsonl" for m in METRICS}):
            ds.notes.append(f"{folder.name}/{other}: not read (a writer's folder holds "
                            + " and ".join(f"{m}.jsonl" for m in METRICS) + ")")
        for metric in METRICS:
            path = folder / f"{metric}.jsonl"
            if not path.exists():
                continue
            rel = f"{folder.name}/{path.name}"
            for n, rec in _read_jsonl(path, rel, ds.problems):
                where = f"{rel}:{n}"
                bad = _check_item(metric, writer, where, rec)
                ds.problems.extend(bad)
                if bad:
                    continue
                if rec["id"] in by_id:
                    ds.problems.append(f"{where}: id {rec['id']!r} also at {by_id[rec['id']].where}")
                    continue
                item = Item(metric, writer, where, rec)
                by_id[item.id] = item
                ds.items[metric].append(item)
                records.append((where, n, rec))
    failed = _read_as_traces(records, ds.problems, ds.notes)
    for metric in METRICS:
        ds.items[metric] = [i for i in ds.items[metric] if i.where not in failed]
    by_id = {k: i for k, i in by_id.items() if i.where not in failed}

    blind = _blind_maps(root)
    for path in sorted((root / "labels").glob("*.jsonl")):
        m = LABEL_FILE.match(path.name)
        rel = f"labels/{path.name}"
        if m is None:
            ds.problems.append(f"{rel}: name should be <labeller>_on_<writer>_<metric>.jsonl")
            continue
        metric = {"fr": "failure_rate", "ga": "goal_achievement_rate"}.get(m["metric"], m["metric"])
        ds.labellers[(m["writer"], metric)] = m["labeller"]
        for n, rec in _read_jsonl(path, rel, ds.problems):
            where = f"{rel}:{n}"
            item = by_id.get(blind.get(str(rec.get("id")), str(rec.get("id"))))
            if item is None or item.metric != metric or item.writer != m["writer"]:
                ds.problems.append(f"{where}: id {rec.get('id')!r} is no valid {metric} item of writer W{m['writer']}")
            elif rec.get("label") not in labels_of(metric):
                ds.problems.append(f"{where}: label: {rec.get('label')!r} is not one of {labels_of(metric)}")
            elif item.second is not None:
                ds.problems.append(f"{where}: {item.id} labelled twice (also by {item.second[0]})")
            else:
                item.second = (m["labeller"], str(rec["label"]), str(rec.get("note", "")))
    adjudicated = root / "adjudicated.jsonl"
    if adjudicated.exists():
        for n, rec in _read_jsonl(adjudicated, adjudicated.name, ds.problems):
            item = by_id.get(str(rec.get("id")))
            if item is None or rec.get("label") not in labels_of(item.metric):
                ds.problems.append(f"{adjudicated.name}:{n}: no item {rec.get('id')!r} "
                                   "or a label not in its metric's set")
            else:
                item.adjudicated = (str(rec["label"]), str(rec.get("note", "")))
    return ds


def items(metric: str, half: str | None = None, root: Path | str = ROOT, *,
          written: bool = False) -> list[dict[str, Any]]:
    """The agreed items of *metric* (one *half*, or both), as ``judge_quality`` scores them;
    ``written``: every valid item with its writer's label (before or without the second labelling).

    Raises ``ValueError`` naming the problems when any item or label line is invalid."""
    if half is not None and half not in HALVES:
        raise ValueError(f"half must be one of {HALVES}, got {half!r}")
    ds = load(root)
    if ds.problems:
        raise ValueError(f"the development set under {ds.root} has {len(ds.problems)} problem(s), first: "
                         + "; ".join(ds.problems[:3]) + " (python benchmarks/devset_load.py --check lists them)")
    if written:
        return [i.as_trace_item(written=True) for i in ds.items[metric] if half is None or i.half == half]
    return [i.as_trace_item() for i in ds.agreed(metric, half)]


def present(root: Path | str = ROOT) -> bool:
    """Whether any writer file is there (the set is committed)."""
    return any(Path(root).glob("W?/*.jsonl"))


# -- agreement -------------------------------------------------------------------------------------

def agreement(metric: str, pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Two raters' labels of the same items: n, exact share, Cohen's kappa (unweighted; and
    quadratic-weighted on the goal scale, labels in scale order); kappa None where undefined."""
    labels = labels_of(metric)
    matrix = confusion_matrix([a for a, _ in pairs], [b for _, b in pairs], labels)
    out: dict[str, Any] = {"n": len(pairs), "exact": sum(a == b for a, b in pairs) / len(pairs) if pairs else None,
                           "kappa": cohen_kappa(matrix) if pairs else None, "matrix": matrix}
    if metric in ORDINAL:
        out["weighted_kappa"] = cohen_kappa(matrix, weights="quadratic") if pairs else None
    return out


def agreement_table(ds: DevSet, metric: str) -> dict[str, dict[str, Any]]:
    """Agreement of writer and second labeller, over all relabelled items and per writer."""
    relabelled = [i for i in ds.items[metric] if i.second is not None]
    table = {"all": agreement(metric, [(i.label, i.second[1]) for i in relabelled])}  # type: ignore[index]
    for writer in sorted({i.writer for i in relabelled}):
        table[writer] = agreement(metric, [(i.label, i.second[1]) for i in relabelled if i.writer == writer])  # type: ignore[index]
    return table


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)


def report(ds: DevSet) -> str:
    """What ``--check`` prints: counts per metric, writer and label; agreement; what the set keeps."""
    lines = [f"development set under {ds.root}"]
    for metric in METRICS:
        labels = labels_of(metric)
        lines.append(f"\n{metric}: {len(ds.items[metric])} valid items written")
        lines.append(f"  {'writer':8}{'half':10}" + "".join(f"{lab:>{len(lab) + 2}}" for lab in labels)
                     + f"{'total':>8}{'relabelled':>12}{'agreed':>8}  labeller")
        for writer in sorted({i.writer for i in ds.items[metric]}):
            mine = [i for i in ds.items[metric] if i.writer == writer]
            count = Counter(i.label for i in mine)
            relabelled = sum(i.second is not None for i in mine)
            agreed = sum(i.agreed_label is not None for i in mine)
            lines.append(f"  {'W' + writer:8}{HALF_OF_WRITER[writer]:10}"
                         + "".join(f"{count[lab]:>{len(lab) + 2}}" for lab in labels)
                         + f"{len(mine):>8}{relabelled:>12}{agreed:>8}  {ds.labellers.get((writer, metric), '-')}")
        table = agreement_table(ds, metric)
        weighted = metric in ORDINAL
        lines.append("  agreement, writer vs second labeller (n, exact, kappa"
                     + (", quadratic-weighted kappa)" if weighted else ")"))
        for who, a in table.items():
            lines.append(f"    {who if who == 'all' else 'W' + who:5} n={a['n']:<4} exact {_fmt(a['exact'])}  "
                         f"kappa {_fmt(a['kappa'])}" + (f"  weighted {_fmt(a['weighted_kappa'])}" if weighted else ""))
        for half in HALVES:
            kept = Counter(i.agreed_label for i in ds.agreed(metric, half))
            lines.append(f"  kept, {half:9} {sum(kept.values()):>4}: "
                         + ", ".join(f"{lab} {kept[lab]}" for lab in labels))
        adjudicated = sum(i.adjudicated is not None and i.second is not None and i.second[1] != i.label
                          for i in ds.items[metric])
        unlabelled = sum(i.second is None for i in ds.items[metric])
        lines.append(f"  left out: {len(ds.disagreements(metric)) - adjudicated} disagreements "
                     f"({adjudicated} adjudicated and kept), {unlabelled} not relabelled")
        lines.append("  shape per writer: turns 1/2/3/4/5/6+, items with tool calls, with context, with expected.goal")
        for writer in sorted({i.writer for i in ds.items[metric]}):
            lines.append(f"    W{writer}  {shape([i for i in ds.items[metric] if i.writer == writer])}")
    for note in ds.notes:
        lines.append(f"note: {note}")
    lines.append(f"\n{len(ds.problems)} problem(s)" + (":" if ds.problems else ""))
    lines.extend(f"  {p}" for p in ds.problems[:100])
    if len(ds.problems) > 100:
        lines.append(f"  ... and {len(ds.problems) - 100} more")
    return "\n".join(lines)


def shape(items: list[Item]) -> str:
    """How a group of items is built: turn counts, and the shares with tools, context, a stated goal."""
    turns = Counter(min(len(i.record["turns"]), 6) for i in items)
    n = len(items) or 1

    def share(test: Any) -> str:
        return f"{sum(map(test, items))} ({100 * sum(map(test, items)) / n:.0f}%)"
    return ("/".join(str(turns[k]) for k in range(1, 7))
            + f"; tools {share(lambda i: any(t.get('tool_calls') for t in i.record['turns']))}"
            + f"; context {share(lambda i: any(t.get('context') for t in i.record['turns']))}"
            + f"; goal {share(lambda i: bool((i.record.get('expected') or {}).get('goal')))}")


def markdown(ds: DevSet) -> str:
    """The README's agreement and kept-items tables, filled in (``--markdown``)."""
    tables = {m: agreement_table(ds, m) for m in METRICS}
    writers = sorted({w for t in tables.values() for w in t if w != "all"})

    def cell(metric: str, who: str) -> str:
        a = tables[metric].get(who)
        if a is None:
            return "-"
        parts = [str(a["n"]), _fmt(a["exact"]), _fmt(a["kappa"])]
        return " / ".join(parts + ([_fmt(a["weighted_kappa"])] if "weighted_kappa" in a else []))
    out = ["| | failure_rate: n / exact / kappa | goal_achievement_rate: n / exact / kappa / weighted |",
           "| --- | --- | --- |"]
    out += [f"| {who} | {cell(METRICS[0], who)} | {cell(METRICS[1], who)} |" for who in ["all", *writers]]
    out += ["", "| | " + " | ".join(METRICS) + " |", "| --- | --- | --- |"]
    for half in HALVES:
        ws = ", ".join(sorted(w for w, h in HALF_OF_WRITER.items() if h == half))
        cells = []
        for metric in METRICS:
            kept = Counter(i.agreed_label for i in ds.agreed(metric, half))
            cells.append(f"{sum(kept.values())} ({', '.join(f'{lab} {kept[lab]}' for lab in labels_of(metric))})")
        out.append(f"| {half} ({ws}) | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def disagreements_md(ds: DevSet) -> str:
    """DISAGREEMENTS.md: every item the two labellers disagree on, with both notes (generated)."""
    out = ["# Disagreements between writer and second labeller",
           "",
           "Generated by `python benchmarks/devset_load.py --write`; do not edit. These items are left out of",
           "the development set unless `adjudicated.jsonl` settles them (then the adjudicated label is shown).",
           ""]
    for metric in METRICS:
        rows = ds.disagreements(metric)
        out += [f"## {metric} ({len(rows)})", ""]
        if not rows:
            out += ["None.", ""]
            continue
        out += ["| id | writer's label | writer's note | second label | second labeller's note | adjudicated |",
                "| --- | --- | --- | --- | --- | --- |"]
        for i in sorted(rows, key=lambda i: i.id):
            labeller, label, note = i.second  # type: ignore[misc]
            adj = f"{i.adjudicated[0]}: {_cell(i.adjudicated[1])}" if i.adjudicated else "-"
            out.append(f"| {i.id} | {i.label} | {_cell(str(i.record.get('note', '')))} | {label} ({labeller}) "
                       f"| {_cell(note)} | {adj} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="print counts and agreement; exit 1 on any invalid item")
    parser.add_argument("--write", action="store_true", help="(re)write DISAGREEMENTS.md under the set's folder")
    parser.add_argument("--markdown", action="store_true", help="print the README's agreement and kept-items tables")
    parser.add_argument("--root", type=Path, default=ROOT, help=f"the set's folder (default {ROOT})")
    args = parser.parse_args(argv)
    if not (args.check or args.write or args.markdown):
        parser.error("say --check, --write and/or --markdown")
    ds = load(args.root)
    if args.write:
        (args.root / "DISAGREEMENTS.md").write_text(disagreements_md(ds), encoding="utf-8")
    if args.check or args.write:
        print(report(ds))
    if args.markdown:
        print(markdown(ds))
    return 1 if ds.problems else 0


if __name__ == "__main__":
    sys.exit(main())
