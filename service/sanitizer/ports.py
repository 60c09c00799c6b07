"""A block of TCP ports per sanitizer process, so that sanitizers started together never share one.

compute-sanitizer talks to its target process over a local TCP port: it tries `--max-connections` ports (10)
from `--port` (49152) upward, the same block for every instance. Started side by side (a GPU worker's K slots, a
sweep's batches, several workers on one host), instances contend for those ports. Each run here takes a block of
its own, leased through an OS file lock that dies with its holder, and passes it as `--port/--max-connections`.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cuprobe.service.config import get_settings

BASE = 49152  # compute-sanitizer's default --port
PER_RUN = 10  # its default --max-connections: ports tried for one run and the processes it follows
BLOCKS = 64  # 49152..49791: room for 64 sanitizer processes on one host at once


def lock_dir() -> Path:
    """Host-wide, so every worker and local run on the host sees the same leases (Settings.port_lock_dir moves it)."""
    return get_settings().port_lock_dir or Path(tempfile.gettempdir()) / "cuprobe-sanitizer-ports"


@dataclass
class PortLease:
    """Ports [base, base + count) for one sanitizer process while held."""

    base: int
    count: int
    _fd: int = field(repr=False)

    def options(self) -> list[str]:
        return ["--port", str(self.base), "--max-connections", str(self.count)]

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = -1

    def __del__(self) -> None:  # an exception between lease and release must not keep the block
        self.release()


def lease(directory: Path | None = None) -> PortLease | None:
    """The first free block, or None when all are held (the run then uses the sanitizer's own default)."""
    directory = directory or lock_dir()
    try:
        directory.mkdir(mode=0o1777, parents=True, exist_ok=True)
    except OSError:
        return None
    for block in range(BLOCKS):
        try:
            fd = os.open(directory / f"block-{block:02d}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        return PortLease(BASE + block * PER_RUN, PER_RUN, fd)
    return None
