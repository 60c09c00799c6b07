"""torch caching-allocator trace events -> NVTX memory registrations: the pure logic the C++ extension mirrors.

kernels/allocator_nvtx.cpp applies the same rules to the events torch hands its trace tracker; this twin
runs on a recorded trace (`torch.cuda.memory._snapshot()["device_traces"]`) so CI can test the rules.
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

CallOp = Literal["heap_register", "heap_unregister", "region_register", "region_unregister"]
# Actions that change nothing the sanitizer needs to know.
PASSIVE = frozenset({"free_requested", "snapshot", "oom"})
# Expandable segments map and unmap pages of one reserved range: not registered (see docs/allocator.md).
UNHANDLED = frozenset({"segment_map", "segment_unmap"})
KNOWN = frozenset({"alloc", "free_completed", "segment_alloc", "segment_free"}) | PASSIVE | UNHANDLED


@dataclass(frozen=True)
class NvtxCall:
    """One NVTX memory API call: a segment as a sub-allocator heap, or a live block as a region in one."""

    op: CallOp
    addr: int
    size: int = 0
    heap: int = 0

    def line(self) -> str:
        """The text form the C++ extension writes to its call log (one call a line)."""
        if self.op == "region_register":
            return f"{self.op} {self.addr:#x} {self.size} heap={self.heap:#x}"
        if self.op == "heap_register":
            return f"{self.op} {self.addr:#x} {self.size}"
        return f"{self.op} {self.addr:#x}"


@dataclass
class Registrar:
    """The heaps and regions registered so far, and what each event changes.

    Rules: segment_alloc registers the segment as a heap; alloc registers the block's requested size
    (not its rounded size, so one element past a tensor is outside every region) in the heap holding it;
    free_completed unregisters it (free_requested does not: another stream may still use the block);
    segment_free unregisters the heap, which drops its regions. Events about memory the registrar never
    saw (allocated before the tracker was attached) change nothing and are counted in `skipped`.
    """

    heaps: dict[int, int] = field(default_factory=dict)
    regions: dict[int, int] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    _starts: list[int] = field(default_factory=list)

    def heap_of(self, addr: int) -> int | None:
        """The start of the registered heap holding `addr`, or None."""
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0 and addr < self._starts[i] + self.heaps[self._starts[i]]:
            return self._starts[i]
        return None

    def apply(self, action: str, addr: int, size: int) -> list[NvtxCall]:
        """The NVTX calls one allocator event needs; ValueError for an action torch does not emit."""
        if action not in KNOWN:
            raise ValueError(f"unknown allocator trace action {action!r}; known: {', '.join(sorted(KNOWN))}")
        if action in PASSIVE:
            return []
        if action in UNHANDLED:
            self.skipped[f"{action} (expandable segments are not registered)"] += 1
            return []
        if action == "segment_alloc":
            return self._segment_alloc(addr, size)
        if action == "segment_free":
            return self._segment_free(addr)
        if action == "alloc":
            return self._alloc(addr, size)
        return self._free(addr)

    def _segment_alloc(self, addr: int, size: int) -> list[NvtxCall]:
        if size <= 0 or self.heap_of(addr) is not None:
            self.skipped["segment_alloc overlapping a registered heap or empty"] += 1
            return []
        self.heaps[addr] = size
        bisect.insort(self._starts, addr)
        return [NvtxCall("heap_register", addr, size)]

    def _segment_free(self, addr: int) -> list[NvtxCall]:
        if addr not in self.heaps:
            self.skipped["segment_free of a segment allocated before the tracker was attached"] += 1
            return []
        end = addr + self.heaps.pop(addr)
        self._starts.remove(addr)
        for region in [r for r in self.regions if addr <= r < end]:
            del self.regions[region]  # unregistering the heap drops its regions with it
        return [NvtxCall("heap_unregister", addr)]

    def _alloc(self, addr: int, size: int) -> list[NvtxCall]:
        heap = self.heap_of(addr)
        if heap is None:
            self.skipped["alloc in a segment allocated before the tracker was attached"] += 1
            return []
        if size <= 0 or addr in self.regions:
            self.skipped["alloc of zero bytes or of a block already registered"] += 1
            return []
        self.regions[addr] = size
        return [NvtxCall("region_register", addr, size, heap)]

    def _free(self, addr: int) -> list[NvtxCall]:
        if self.regions.pop(addr, None) is None:
            self.skipped["free_completed of a block allocated before the tracker was attached"] += 1
            return []
        return [NvtxCall("region_unregister", addr)]


def replay(events: Iterable[Mapping[str, Any]], registrar: Registrar | None = None) -> list[NvtxCall]:
    """Every NVTX call for a sequence of trace entries (dicts with action, addr, size), in order."""
    registrar = registrar if registrar is not None else Registrar()
    calls: list[NvtxCall] = []
    for event in events:
        calls += registrar.apply(str(event["action"]), int(event.get("addr", 0)), int(event.get("size", 0)))
    return calls


def load_device_traces(path: Path) -> list[list[dict[str, Any]]]:
    """`device_traces` of a saved snapshot (JSON): one list of trace entries per device."""
    data = json.loads(path.read_text())
    traces = data.get("device_traces") if isinstance(data, dict) else None
    if not isinstance(traces, list) or not all(isinstance(t, list) for t in traces):
        raise ValueError(f"{path}: no device_traces list of lists (a torch.cuda.memory._snapshot() saved as JSON)")
    return traces
