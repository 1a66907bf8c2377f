"""Duplicate trace ids across the inputs of one read, reported with both locations.

Memory is ~16 bytes per trace (a 64-bit hash and a packed location) plus a fixed 4 MB filter:
an id whose filter bit is already set is a candidate and keeps its text; at the end of the
read the hashes are sorted (numpy, imported only when there is a candidate) and each id seen
twice is one warning naming where it first appeared and where it came again.
"""

from __future__ import annotations

import warnings
from array import array

from ..errors import InputWarning

_BITS = 1 << 25
_LINE_BITS = 40
MAX_SHOWN = 20
"""Duplicates warned about one by one; the rest are counted in one more warning."""


class DuplicateIds:
    def __init__(self) -> None:
        self._filter = bytearray(_BITS // 8)
        self._hashes = array("q")
        self._locs = array("q")
        self._sources: list[str] = []
        self._candidates: dict[int, str] = {}
        self._source_bits = -1 << _LINE_BITS  # (no source yet: as the index -1 packed before)

    def source(self, name: str) -> None:
        self._sources.append(name)
        self._source_bits = (len(self._sources) - 1) << _LINE_BITS

    def add(self, trace_id: str, line: int | None) -> None:
        h = hash(trace_id)
        byte, mask = (h & (_BITS - 1)) >> 3, 1 << (h & 7)
        f = self._filter
        if f[byte] & mask:
            self._candidates[h] = trace_id
        else:
            f[byte] |= mask
        self._hashes.append(h)
        self._locs.append(self._source_bits | (line or 0))

    def _where(self, loc: int) -> str:
        source, line = self._sources[loc >> _LINE_BITS], loc & ((1 << _LINE_BITS) - 1)
        return f"{source}:{line}" if line else source

    def report(self) -> list[str]:
        """One message per repeated occurrence of an id, in input order (all of them)."""
        if not self._candidates:
            return []
        import numpy as np

        hashes = np.frombuffer(self._hashes, dtype=np.int64)
        order = np.argsort(hashes, kind="stable")
        ranked = hashes[order]
        repeat = np.flatnonzero(ranked[1:] == ranked[:-1]) + 1  # positions (in sorted order) of repeats
        if not repeat.size:
            return []
        # the first occurrence of each repeated hash: the start of its run in sorted order
        starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
        first_of = starts[np.searchsorted(starts, repeat, side="right") - 1]
        events = sorted(zip(order[repeat].tolist(), order[first_of].tolist()))
        locs, out = self._locs, []
        for again, first in events:
            h = int(self._hashes[again])
            out.append(f"{self._where(locs[again])}: duplicate trace id {self._candidates.get(h, '?')!r}, first at "
                       f"{self._where(locs[first])}; results and comparisons will hold both")
        return out

    def warn(self) -> None:
        messages = self.report()
        for m in messages[:MAX_SHOWN]:
            warnings.warn(InputWarning(m), stacklevel=3)
        if len(messages) > MAX_SHOWN:
            warnings.warn(InputWarning(f"... and {len(messages) - MAX_SHOWN} more duplicate trace ids"), stacklevel=3)
