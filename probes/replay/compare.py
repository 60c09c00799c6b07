"""Pure comparisons for replay: first divergence, growth per step, magnitude watch, autotune choices and cache."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

Record = dict[str, Any]
KEY_FIELDS = ("step", "phase", "module", "role", "shape", "dtype")


@dataclass(frozen=True)
class Divergence:
    """Where two processes first differ: a tensor whose bits differ, or a different sequence of tensors."""

    index: int
    kind: str  # "value": same tensor, different bits; "structure": the programs recorded different tensors
    reference: Record | None
    other: Record | None

    @property
    def at(self) -> Record:
        found = self.reference or self.other
        assert found is not None
        return found

    def signature(self) -> str:
        at = self.at
        return f"replay|{at['module']}|{at['role']}|{at['phase']}"


@dataclass(frozen=True)
class StepGrowth:
    """One step of a comparison: how many tensors diverge and the largest relative change of max |x|."""

    step: int
    tensors: int
    diverging: int
    max_rel_magnitude_change: float


def key(record: Record) -> tuple[Any, ...]:
    return tuple(record[f] if f != "shape" else tuple(record[f]) for f in KEY_FIELDS)


def first_divergence(reference: list[Record], other: list[Record]) -> Divergence | None:
    """The first record (in program order) where `other` differs from `reference`; None when identical."""
    for i, (a, b) in enumerate(zip(reference, other, strict=False)):
        if key(a) != key(b):
            return Divergence(i, "structure", a, b)
        if a["digest"] != b["digest"]:
            return Divergence(i, "value", a, b)
    if len(reference) != len(other):
        n = min(len(reference), len(other))
        return Divergence(n, "structure", reference[n] if n < len(reference) else None,
                          other[n] if n < len(other) else None)
    return None


def _rel(a: float, b: float) -> float:
    if a == b:
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def growth(reference: list[Record], other: list[Record]) -> list[StepGrowth]:
    """Per step: aligned tensors, how many have different bits, and the largest relative change of max |x|."""
    steps: dict[int, list[tuple[Record, Record]]] = {}
    for a, b in zip(reference, other, strict=False):
        if key(a) != key(b):
            break  # past a structural divergence the records no longer pair up
        steps.setdefault(a["step"], []).append((a, b))
    out = []
    for step, pairs in sorted(steps.items()):
        differ = [(a, b) for a, b in pairs if a["digest"] != b["digest"]]
        change = max((_rel(a["magnitude"], b["magnitude"]) for a, b in differ), default=0.0)
        out.append(StepGrowth(step, len(pairs), len(differ), change))
    return out


def first_over(records: list[Record], threshold: float | None) -> Record | None:
    """The first tensor whose max |x| is inf/NaN or above `threshold` (None: non-finite only)."""
    for record in records:
        m = record["magnitude"]
        if not math.isfinite(m) or (threshold is not None and m > threshold):
            return record
    return None


def describe_record(record: Record) -> str:
    """`step 2 forward layers.1 output (float32 [8, 16])`: how a finding names a tensor."""
    shape = "x".join(str(d) for d in record["shape"]) or "scalar"
    return (
        f"step {record['step']} {record['phase']} {record['module']} {record['role']} "
        f"({record['dtype']} {shape})"
    )


def growth_rows(table: list[StepGrowth]) -> list[dict[str, Any]]:
    return [asdict(row) for row in table]


def autotune_diff(processes: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Kernel keys whose chosen Triton config differs between processes: kernel, key, the config of each process."""
    per_process = [
        {(t["kernel"], key_): config for t in tuners for key_, config in t["choices"].items()}
        for tuners in processes
    ]
    keys = sorted({k for choices in per_process for k in choices})
    out = []
    for kernel, key_ in keys:
        configs = [choices.get((kernel, key_)) for choices in per_process]
        if len(set(configs)) > 1:
            out.append({"kernel": kernel, "key": key_, "configs": configs})
    return out


def autotune_cache_problem(tuners: list[dict[str, Any]], persistent_env: bool, files: list[str]) -> str | None:
    """Why a persistent autotune cache that should hold results is empty after the processes ran; None if fine."""
    tuned = [t for t in tuners if t["choices"]]
    persistent = [t for t in tuned if persistent_env or t["cache_results"]]
    if not persistent or files:
        return None
    kernels = ", ".join(sorted({t["kernel"] for t in persistent}))
    return (
        f"the persistent Triton autotune cache stayed empty: {kernels} autotuned with results caching on, "
        "but no *.autotune.json was written to the cache directory (every process re-benchmarks, "
        "and may pick a different config)"
    )
