"""Queue names: one per GPU architecture (`gpu.sm90`) plus `cpu`, each with a `.sweep` twin for sweep jobs."""

from __future__ import annotations

from enum import StrEnum

CPU = "cpu"
SWEEP_SUFFIX = ".sweep"
# Jobs of one `cuprobe gate` run share the label `gate:SUITE:RUN`.
GATE_LABEL = "gate:"
# What a job label may hold: it goes into links and filters as it is.
LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,199}$"


class Lane(StrEnum):
    """Gate (and interactive) jobs and sweep jobs use separate queues: neither waits behind the other."""

    GATE = "gate"
    SWEEP = "sweep"


def gpu_queue(arch: str) -> str:
    """`sm90` -> `gpu.sm90`."""
    return f"gpu.{arch}"


def queue_for(*, needs_gpu: bool, arch: str, lane: Lane) -> str:
    """The queue a job goes to: its architecture's (or cpu), in its lane."""
    base = gpu_queue(arch) if needs_gpu else CPU
    return base + SWEEP_SUFFIX if lane is Lane.SWEEP else base


def lane_queues(base: str) -> list[str]:
    """The queues a worker for `base` consumes, gate first (workers poll queues in sorted order)."""
    return [base, base + SWEEP_SUFFIX]


def gate_label(suite: str, run: str) -> str:
    """The label of a gate run's jobs; characters a label does not allow become `-`."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "-" for c in suite)[:100]
    return f"{GATE_LABEL}{safe.strip('-') or 'suite'}:{run}"
