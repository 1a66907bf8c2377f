"""A small version of benchmarks/coverage.py: the cells the old intervals failed worst.

400 replicates per cell (Monte Carlo sd ~0.011), so the tolerance is wider than the benchmark's
[0.93, 0.99]; the old intervals covered 0.03-0.47 (saturated pass@5), 0.40 (t on a 0/1 metric at
n = 10) and would fail by far. The benchmark also checks that its vectorised intervals equal what
``bounded_mean_interval`` and ``trial_pass_k`` return.
"""

import pytest

pytest.importorskip("numpy")

from benchmarks import coverage  # noqa: E402


def test_small_coverage_grid_stays_near_nominal():
    cells = coverage.grid(reps=400, seed=3, quick=True)
    assert len(cells) == 10
    bad = [(c.design, c.statistic, c.covered) for c in cells if not 0.90 <= c.covered <= 0.999]
    assert not bad, bad
