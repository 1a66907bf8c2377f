"""pass@k's distinct (trials, passes) pairs per task, counted without a sort where the counts are small."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.engine._statistics import _pairs


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 60), st.floats(0, 1)), min_size=1, max_size=200),
       st.sampled_from([1, 1000, 10**6]))
def test_counted_pairs_are_the_sorted_unique_pairs(rows, scale):
    n = np.array([a * (scale if i == 0 else 1) for i, (a, _) in enumerate(rows)], dtype=np.int64)  # a large n: sorted
    c = np.array([int(f * a) for a, f in zip(n.tolist(), (f for _, f in rows))], dtype=np.int64)
    pairs, mult = np.unique(np.stack([n, c], axis=1), axis=0, return_counts=True)
    got = _pairs(np, n, c)
    assert got == ([(int(a), int(b)) for a, b in pairs], [int(m) for m in mult])
    assert all(type(m) is int for m in got[1]) and all(type(x) is int for p in got[0] for x in p)
