"""The memory each initcheck finding flagged: byte ranges per (case, buffer), via the probe's allocation map."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from cuprobe.contract import Allocation

Range = tuple[int, int]  # [start, end) byte offsets inside one buffer


def merge_ranges(ranges: Sequence[Range]) -> list[Range]:
    """Sorted, non-overlapping ranges covering exactly the bytes of `ranges` (adjacent ones joined)."""
    out: list[Range] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


@dataclass
class FlaggedMemory:
    """Every byte one finding's records read, per buffer of its case; `unmapped` records fell in no buffer."""

    ranges: dict[str, list[Range]] = field(default_factory=dict)
    access_size: int = 1
    unmapped: int = 0
    records: int = 0

    def add(self, buffer: str | None, offset: int, size: int) -> None:
        self.records += 1
        if buffer is None:
            self.unmapped += 1
            return
        self.access_size = max(self.access_size, size)
        spans = self.ranges.setdefault(buffer, [])
        # Records mostly arrive in address order: extend the last range instead of storing one per record.
        if spans and spans[-1][0] <= offset <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], offset + size))
        else:
            spans.append((offset, offset + size))

    def absorb(self, later: FlaggedMemory) -> None:
        """Fold in the memory flagged by later records (another piece of the same file)."""
        self.records += later.records
        self.unmapped += later.unmapped
        self.access_size = max(self.access_size, later.access_size)
        for name, spans in later.ranges.items():
            self.ranges.setdefault(name, []).extend(spans)

    def merged(self) -> dict[str, list[Range]]:
        return {name: merge_ranges(spans) for name, spans in self.ranges.items()}


class AllocationIndex:
    """Address -> (case, buffer, offset) over a probe's allocation map, by binary search."""

    def __init__(self, allocations: Sequence[tuple[str, Allocation]]) -> None:
        ordered = sorted(allocations, key=lambda pair: pair[1].start)
        self._starts = [alloc.start for _, alloc in ordered]
        self._entries = ordered

    def locate(self, address: str | None) -> tuple[str, Allocation, int] | None:
        """The case, allocation and byte offset holding `address` (hex), or None."""
        if not address or not self._starts:
            return None
        try:
            value = int(address, 16)
        except ValueError:
            return None
        i = bisect.bisect_right(self._starts, value) - 1
        # Allocations never overlap, but a zero-size one could shadow its neighbour: look back a few.
        for j in range(i, max(i - 4, -1), -1):
            case_id, alloc = self._entries[j]
            if alloc.start <= value < alloc.start + alloc.size:
                return case_id, alloc, value - alloc.start
        return None
