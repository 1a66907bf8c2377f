"""Exact sums of floats, so a run's means do not depend on how its traces were split or ordered.

A float sum rounds at every step, so summing two shards and adding the results differs in the
last digit from one pass over both. Every finite double is an integer multiple of 2**-1074, so a
sum kept as that integer ("units", a Python int) is exact: it merges by integer addition (in any
order, in any grouping), and the mean is rounded once, correctly, at the end.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any

SCALE_BITS = 1074
"""2**-1074 is the smallest positive double: every finite double is a whole number of these."""
_CHUNK = 1 << 16
"""Elements per vectorised step (~4 MB of temporaries, whatever the run's size: the sum is taken when a
run finishes, so a larger step would make the peak memory grow with the run). Exactness needs fewer
than 2**27: the 26-bit halves of 53-bit mantissas sum exactly in float64 below that."""


SMALL = 20_000
"""Up to this many values, while numpy is not loaded yet, the sum is taken value by value in Python ints
(~1 µs each) instead of importing numpy for it (~60-80 ms on a small machine): a judge run without
intervals otherwise imported numpy after its last reply for this sum alone. Both ways the sum is exact,
so they give the same integer."""


def exact_units(values: Any) -> int:
    """The exact sum of finite float64 *values* (an array('d'), ndarray or sequence), in units of 2**-1074.

    Vectorised: each value is split into mantissa and exponent, the mantissas' 26-bit halves are
    summed per exponent (integers below 2**53 add exactly in float64), and the few per-exponent
    totals are combined as Python ints. A few values (:data:`SMALL`) before numpy is loaded: one by one.
    """
    if "numpy" not in sys.modules and len(values) <= SMALL and not isinstance(values, (bytes, bytearray, memoryview)):
        return units_by_value(values)
    import numpy as np

    a = np.frombuffer(values, dtype=np.float64) if isinstance(values, (bytes, bytearray, memoryview)) or \
        hasattr(values, "typecode") else np.asarray(values, dtype=np.float64)
    total = 0
    for start in range(0, a.size, _CHUNK):
        part_values = a[start:start + _CHUNK]
        if not np.isfinite(part_values).all():
            raise ValueError("exact_units: values must be finite")
        m, e = np.frexp(part_values)  # x = m * 2**e, 0.5 <= |m| < 1 (m = 0 for 0)
        mant = (m * 9007199254740992.0).astype(np.int64)  # * 2**53: exact, |mant| < 2**53
        # x = mant * 2**(e - 53) = mant * 2**(e + 1021) units; e + 1021 >= -52 (subnormals)
        idx = (e + 1073).astype(np.intp)  # shift + 52 >= 0
        hi = np.bincount(idx, weights=(mant >> 26).astype(np.float64))
        lo = np.bincount(idx, weights=(mant & ((1 << 26) - 1)).astype(np.float64))
        for i in np.flatnonzero((hi != 0) | (lo != 0)):
            part = (int(hi[i]) << 26) + int(lo[i])
            shift = int(i) - 52
            total += part << shift if shift >= 0 else part >> -shift  # exact: those mantissas end in zeros
    return total


def units_by_value(values: Any) -> int:
    """:func:`exact_units` one value at a time, in Python ints (no numpy)."""
    total = 0
    for x in values:
        if not math.isfinite(x):
            raise ValueError("exact_units: values must be finite")
        total += float_units(x)
    return total


def float_units(x: float) -> int:
    """One finite float in units of 2**-1074 (exact)."""
    p, q = float(x).as_integer_ratio()  # q is a power of two <= 2**1074
    return p * ((1 << SCALE_BITS) // q)


def units_value(units: int) -> float:
    """The float nearest to an exact sum."""
    return float(Fraction(units, 1 << SCALE_BITS))


def units_mean(units: int, n: int) -> float:
    """The float nearest to an exact sum divided by *n* (rounded once)."""
    return float(Fraction(units, n << SCALE_BITS))
