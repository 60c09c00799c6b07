"""The GPU worker's spare processes on one GPU, findable from every process of the worker: a timing probe that takes
the GPU exclusively ends them first, so nothing else holds a CUDA context on the GPU while it times.

A spare (service/probing/spares.py) is started by one Celery pool process and waits, idle, for that process's next
job; another pool process cannot reach it through Python. So each spare leaves its process group id in its own
folder (`pgid`), under the GPU's spares folder; its folder goes when it is taken or ended, and the file with it.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

from service.probing.spares import Spare

log = logging.getLogger(__name__)

PGID_NAME = "pgid"
# How long the exclusive taker waits for the spares it killed to be gone (a SIGKILLed process exits at once; the
# driver frees its context as it does).
GONE_WAIT_S = 10.0
LOOK_S = 0.02


def register(spare: Spare) -> None:
    """Leave `spare`'s process group id in its folder, where `end_spares` finds it."""
    (spare.planned.workdir / PGID_NAME).write_text(str(spare.started.pgid))


def end_spares(root: Path, wait_s: float = GONE_WAIT_S) -> int:
    """Kill every registered spare under `root` (a GPU's spares folder) and wait until none of their processes is
    left (at most `wait_s`); how many were killed. A stale entry (its process gone, or its id reused by a process
    that does not name the spare's folder on its command line) is left alone."""
    killed: list[str] = []
    for entry in sorted(root.glob(f"*/*/{PGID_NAME}")):
        try:
            pgid = int(entry.read_text().strip())
        except (OSError, ValueError):
            continue
        marker = str(entry.parent)
        if not _holders(marker, (pgid,)):
            continue
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        killed.append(marker)
    left, deadline = list(killed), time.monotonic() + wait_s
    while left and time.monotonic() < deadline:
        left = [marker for marker in left if _holders(marker)]
        if left:
            time.sleep(LOOK_S)
    if left:
        log.warning("%d spare process(es) still running %.0f s after SIGKILL: %s", len(left), wait_s, left)
    return len(killed)


def _holders(marker: str, pids: tuple[int, ...] | None = None) -> list[int]:
    """The processes (of `pids`, else all) whose command line names a file in `marker` (a spare's folder: its FIFO,
    its XML): a killed process that has exited, even one not yet reaped, has an empty command line."""
    needle = f"{marker}/".encode()
    found = []
    for pid in pids if pids is not None else _all_pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if needle in f.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]
