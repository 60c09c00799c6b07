"""The GPU worker's spare processes on one GPU, findable from every process of the worker: a timing probe that takes
the GPU exclusively ends them first, so nothing else holds a CUDA context on the GPU while it times.

A spare (service/probing/spares.py) is started by one Celery pool process and waits, idle, for that process's next
job; another pool process cannot reach it through Python. So each spare leaves its process group id in its own
folder (`pgid`), under the GPU's spares folder; its folder goes when it is taken or ended, and the file with it.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from cuprobe.proctree import group_alive, stop_run
from cuprobe.service.probing.spares import Spare

log = logging.getLogger(__name__)

PGID_NAME = "pgid"
# How long the exclusive taker waits for the spares it killed to be gone (a killed process exits at once; the
# driver frees its context as it does).
GONE_WAIT_S = 10.0
LOOK_S = 0.02


def register(spare: Spare) -> None:
    """Leave `spare`'s process group id in its folder, where `end_spares` finds it."""
    (spare.planned.workdir / PGID_NAME).write_text(str(spare.started.pgid))


def end_spares(root: Path, wait_s: float = GONE_WAIT_S) -> int:
    """Kill every registered spare under `root` (a GPU's spares folder) and wait until none of their process groups
    has a live process left (at most `wait_s`); how many were killed. A stale entry (its process gone, or its id
    reused by a process that does not name the spare's folder on its command line) is left alone."""
    killed: list[int] = []
    for entry in sorted(root.glob(f"*/*/{PGID_NAME}")):
        try:
            pgid = int(entry.read_text().strip())
        except (OSError, ValueError):
            continue
        if not _names_folder(pgid, entry.parent):
            continue
        stop_run(pgid, pgid, set(), 0.0)  # the spare's group and its tree, as its owner's Started.kill would
        killed.append(pgid)
    left, deadline = list(killed), time.monotonic() + wait_s
    while left and time.monotonic() < deadline:
        left = [pgid for pgid in left if group_alive(pgid)]
        if left:
            time.sleep(LOOK_S)
    if left:
        log.warning("%d spare process group(s) still alive %.0f s after they were killed: %s", len(left), wait_s, left)
    return len(killed)


def _names_folder(pid: int, folder: Path) -> bool:
    """Whether process `pid`'s command line names a file in `folder` (a spare's: its FIFO, its XML), so `pid` is
    still the spare's and not a reused id; a process that has exited, even one not yet reaped, names nothing."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f"{folder}/".encode() in f.read()
    except OSError:
        return False
