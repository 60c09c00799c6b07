"""Poisoned fresh allocations for the confirmer's bare re-runs: the fill byte, checkpoints and result dumps."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

Poison = Literal["none", "ff", "zero", "sentinel"]
# 0xFF bytes are NaN in every float format (so a read that reaches the result shows); 0xA5 is the sentinel:
# as float32 and bf16 it is about -2.9e-16, a value no computation here writes, and neither 0x00 nor 0xFF.
FILL: dict[str, int | None] = {"none": None, "ff": 0xFF, "zero": 0x00, "sentinel": 0xA5}
SENTINEL_BYTE = 0xA5
DUMP_SUFFIX = ".poison.npz"
# `--watch all` (a sentinel re-run started before the findings are known) snapshots every buffer at every
# checkpoint, up to this many bytes in all; past it, snapshots are left out and the index says so.
WATCH_ALL_MAX_BYTES = 256 << 20

Reader = Callable[[], Any]  # returns a numpy array (or something np.asarray takes); called only when needed


class PoisonPlan(BaseModel):
    """How this process poisons: the fill for fresh allocations, and which buffers to snapshot per case."""

    model_config = ConfigDict(extra="forbid")

    mode: Poison = "none"
    watch: dict[str, list[str]] = Field(
        default_factory=dict, description="case id -> buffer names to snapshot at their checkpoint (sentinel mode)"
    )
    watch_all: bool = Field(False, description="snapshot every buffer at every checkpoint (up to WATCH_ALL_MAX_BYTES)")

    @property
    def fill(self) -> int | None:
        return FILL[self.mode]


def digest(arrays: dict[str, np.ndarray[Any, Any]]) -> str:
    """sha256 over each array's name, dtype, shape and bytes, in name order: bit-for-bit identity."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


class PoisonLog:
    """What one poisoned bare run saw: each case's results and the watched buffers at their checkpoints."""

    def __init__(self, plan: PoisonPlan | None = None) -> None:
        self.plan = plan or PoisonPlan()
        self.outputs: dict[str, dict[str, np.ndarray[Any, Any]]] = {}
        self.snapshots: dict[str, dict[str, tuple[str, np.ndarray[Any, Any]]]] = {}
        self.snapshot_bytes = 0
        self.snapshots_left_out = 0  # watch-all snapshots past WATCH_ALL_MAX_BYTES

    @property
    def active(self) -> bool:
        return self.plan.fill is not None

    def output(self, case_id: str, name: str, read: Reader) -> None:
        """Keep a result of `case_id` (read only in a poisoned run: under a sanitizer nothing extra runs)."""
        if self.active:
            self.outputs.setdefault(case_id, {})[name] = np.array(read())

    def checkpoint(self, case_id: str, label: str, **buffers: Reader) -> None:
        """Snapshot the watched buffers of `case_id` as raw bytes, right before the kernel that reads them."""
        if self.plan.mode != "sentinel":
            return
        watched = set(self.plan.watch.get(case_id, ()))
        for name, read in buffers.items():
            if (self.plan.watch_all or name in watched) and name not in self.snapshots.get(case_id, {}):
                raw = np.ascontiguousarray(np.asarray(read())).view(np.uint8).reshape(-1)
                if self.plan.watch_all and self.snapshot_bytes + raw.size > WATCH_ALL_MAX_BYTES:
                    self.snapshots_left_out += 1
                    continue
                self.snapshot_bytes += raw.size
                self.snapshots.setdefault(case_id, {})[name] = (label, raw.copy())

    def write(self, out: Path) -> dict[str, Any]:
        """Write the arrays beside result.json; returns the index that result.json carries."""
        arrays: dict[str, np.ndarray[Any, Any]] = {}
        index: dict[str, Any] = {"mode": self.plan.mode, "fill": self.plan.fill, "outputs": {}, "snapshots": {}}
        if self.plan.watch_all:
            index["watch_all"] = True
            index["snapshots_left_out"] = self.snapshots_left_out
        for case_id, named in self.outputs.items():
            index["outputs"][case_id] = {"digest": digest(named), "arrays": {}}
            for name, array in named.items():
                key = f"a{len(arrays)}"
                arrays[key] = array
                index["outputs"][case_id]["arrays"][name] = key
        for case_id, snaps in self.snapshots.items():
            for name, (label, raw) in snaps.items():
                key = f"a{len(arrays)}"
                arrays[key] = raw
                index["snapshots"].setdefault(case_id, {})[name] = {"checkpoint": label, "key": key}
        path = dump_path(out)
        if arrays:
            np.savez(path, **arrays)  # type: ignore[arg-type]
            index["file"] = path.name
        return index


def dump_path(out: Path) -> Path:
    """Where a poisoned run keeps its arrays: beside its result.json."""
    return out.with_name(out.name + DUMP_SUFFIX)
