"""Peak RSS and size of the HTML report (``assay run --html``) as the input grows.

The report shows at most ``MAX_TRACES`` rows and ``MAX_VIEWS`` trace views (failed ones first), so
its size must stop growing once the run is larger than that; this checks that the memory of the
run that writes it stays bounded too. For each N it generates N small traces (~800 bytes, the
``deterministic.py --small`` set: 20% call a wrong tool, 20% a wrong argument) and runs, each in
a fresh process,

(a) ``assay run -q --no-progress -m ...5 metrics`` with ``-o x.jsonl`` (the streaming baseline) and
(b) the same with ``--html r.html`` added,

with and without the run store (with it, the report reads the run back from the store), and
with the store also (c) ``assay report RUN`` of the stored run (it streams the run's results
past the same digest), and prints the peak RSS of each, (b) - (a) (what the report costs), the
report's size, and the growth of both from the smallest N to the largest: bounded means the
extra memory and the page size stay flat while N grows 10x and 100x.

    python benchmarks/report_memory.py                       # N = 2,000, 20,000, 200,000
    python benchmarks/report_memory.py --n 1000 --n 10000    # a quicker look
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from deterministic import SMALL_METRICS, make_small_traces, run_child  # noqa: E402


def measure(path: Path, tmp: Path, store: bool) -> dict[str, float]:
    base = [sys.executable, "-m", "assay", "run", str(path), "-q", "--no-progress",
            *(a for m in SMALL_METRICS for a in ("-m", m)), "-o", str(tmp / "x.jsonl")]
    flags = ["--store", str(tmp / "store.sqlite3")] if store else ["--no-store"]
    _, _, rss_plain, _ = run_child([*base, *flags])
    html = tmp / "r.html"
    wall, _, rss_html, _ = run_child([*base, *flags, "--html", str(html)])
    out = {"plain": rss_plain, "html": rss_html, "extra": rss_html - rss_plain, "size": html.stat().st_size / 1e6,
           "wall": wall, "report": float("nan")}
    if store:
        _, _, out["report"], _ = run_child([sys.executable, "-m", "assay", "report", "latest", "--store",
                                            str(tmp / "store.sqlite3"), "-o", str(tmp / "r2.html")])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, action="append", help="input sizes (repeatable)")
    args = ap.parse_args(argv)
    sizes = sorted(args.n or [2_000, 20_000, 200_000])
    from assay.report import MAX_TRACES, MAX_VIEWS

    print(f"report bounds: MAX_TRACES {MAX_TRACES} rows, MAX_VIEWS {MAX_VIEWS} trace views")
    print(f"{'N':>9} {'store':>5} {'RSS -o jsonl':>13} {'RSS +--html':>12} {'report extra':>13} {'report size':>12}"
          f" {'wall':>6} {'RSS report RUN':>15}")
    rows: dict[tuple[int, bool], dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for n in sizes:
            path = tmp / f"in-{n}.jsonl"
            make_small_traces(path, n)
            for store in (False, True):
                (tmp / "store.sqlite3").unlink(missing_ok=True)
                r = rows[n, store] = measure(path, tmp, store)
                print(f"{n:9,} {'yes' if store else 'no':>5} {r['plain']:10.0f} MB {r['html']:9.0f} MB "
                      f"{r['extra']:10.0f} MB {r['size']:9.2f} MB {r['wall']:5.1f}s "
                      + (f"{r['report']:12.0f} MB" if store else f"{'-':>15}"))
            path.unlink()
    lo, hi = sizes[0], sizes[-1]
    for store in (False, True):
        a, b = rows[lo, store], rows[hi, store]
        print(f"store {'yes' if store else 'no '}: N x{hi / lo:.0f} -> peak RSS with --html x{b['html'] / a['html']:.2f}, "
              f"report extra {a['extra']:.0f} -> {b['extra']:.0f} MB, report size x{b['size'] / a['size']:.2f}"
              + (f", assay report RUN {a['report']:.0f} -> {b['report']:.0f} MB" if store else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
