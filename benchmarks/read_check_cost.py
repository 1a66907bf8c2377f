"""What the after-reading check (importers._check.unparsed) costs: reading time with and without it.

    python benchmarks/read_check_cost.py FILE [--rounds 5]

Reads FILE whole (load_traces) alternately with the check on and off, and prints the least time
of each and their ratio, then times the check alone over the traces read, in one run (ratios,
not a timed test; on a loaded machine the first ratio is noisy, the second is the steadier one).
"""

from __future__ import annotations

import argparse
import time
import warnings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import assay.importers._registry as registry
    from assay import load_traces

    check = registry.unparsed

    def once() -> float:
        t0 = time.perf_counter()
        load_traces(args.file)
        return time.perf_counter() - t0

    once()  # warm: imports, caches
    on: list[float] = []
    off: list[float] = []
    for _ in range(args.rounds):
        registry.unparsed = check
        on.append(once())
        registry.unparsed = lambda trace: []  # type: ignore[assignment]
        off.append(once())
    registry.unparsed = check
    traces, _ = load_traces(args.file)
    alone: list[float] = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        for trace in traces:
            check(trace)
        alone.append(time.perf_counter() - t0)
    print(f"reading with the check {min(on):.3f} s, without {min(off):.3f} s, ratio {min(on) / min(off):.3f}; "
          f"the check alone {min(alone) * 1000:.1f} ms for {len(traces)} traces "
          f"({min(alone) / min(off):.1%} of the reading time)")


if __name__ == "__main__":
    main()
