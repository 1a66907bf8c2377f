"""Duplicate trace ids across the inputs of one read, reported with both locations.

Memory is ~16 bytes per trace (a 64-bit hash and a packed location) plus a fixed 4 MB filter:
an id whose filter bit is already set is a candidate and keeps its text; at the end of the
read the stored hashes are scanned for the candidates' (numpy, imported only when there is a
candidate) and each id seen twice is one warning naming where it first appeared and where it
came again.
"""

from __future__ import annotations

import warnings
from array import array

from ..errors import InputWarning

_BITS = 1 << 25
_LINE_BITS = 40
_SCAN = 1 << 16
"""Stored hashes looked at per step when the duplicates are reported."""
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
        """One message per repeated occurrence of an id, in input order (all of them).

        Only the hashes of candidates can repeat (the second occurrence of a hash finds its filter
        bit set), so the stored hashes are scanned a block at a time for those alone: the memory
        this takes does not grow with the number of traces read.
        """
        if not self._candidates:
            return []
        import numpy as np

        hashes = np.frombuffer(self._hashes, dtype=np.int64)
        wanted = np.fromiter(self._candidates, dtype=np.int64, count=len(self._candidates))
        where: dict[int, list[int]] = {}  # candidate hash -> its positions, in input order
        for start in range(0, hashes.size, _SCAN):
            block = hashes[start:start + _SCAN]
            for pos in (np.flatnonzero(np.isin(block, wanted)) + start).tolist():
                where.setdefault(int(hashes[pos]), []).append(pos)
        events = sorted((again, seen[0]) for seen in where.values() if len(seen) > 1 for again in seen[1:])
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
