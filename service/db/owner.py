"""Which process is running a stored sweep, and whether that process is gone: a sweep whose process was killed
(SIGKILL, out of memory, the machine restarted) never says so itself, and would read as running for ever.

On the owner's host its pid says so. From another host only the owner's beat can (SweepStore.beating: the running
process writes the time to its row every BEAT_S): a row not written for SILENT is the sweep of a process that has
gone with its host (a container recreated under a new name, a node drained) or has lost the store for as long."""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
# How often a running sweep's process writes its beat, and how long without one before another host judges it gone
# (twenty beats missed: a slow store or a paused VM does not make a live sweep an orphan).
BEAT_S = 30.0
SILENT = timedelta(minutes=10)


def _boot() -> str | None:
    try:
        return BOOT_ID.read_text().strip() or None
    except OSError:
        return None


def _started(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (/proc/PID/stat's 22nd field); None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:  # the command name (field 2) is in parentheses and may hold spaces: count from after it
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return None


def this_process() -> dict[str, Any]:
    """This process as a running sweep's owner: host, pid, the host's boot (a pid is unique within one boot) and
    when it started (a container restarted without the host rebooting reuses small pids)."""
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "boot": _boot(), "started": _started(pid)}


def gone(owner: object, beat: datetime | None = None, now: datetime | None = None) -> str | None:
    """Why the process `owner` names has certainly ended, or None where it may still run. On its host: by pid, boot
    and the pid's start (a live pid may be another process that took the number). On another host: only by its
    `beat` (the last time it wrote its row, UTC), silent for SILENT; a row without one (written before beats were)
    stays running there."""
    if not isinstance(owner, dict):
        return None
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return None
    where = f"pid {pid} on {owner.get('host')}"
    if owner.get("host") != socket.gethostname():
        return _silent(where, beat, now)
    boot = _boot()
    if owner.get("boot") and boot and owner["boot"] != boot:
        return f"its process ({where}) was on a boot of the host that has ended"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"its process ({where}) ended without finishing it (killed, or out of memory)"
    except PermissionError:
        return None  # a process of another user has that pid: alive
    started = owner.get("started")
    if isinstance(started, int) and (since := _started(pid)) is not None and since != started:
        return f"its process ({where}) ended without finishing it; that pid is now another process's"
    return None


def _silent(where: str, beat: datetime | None, now: datetime | None) -> str | None:
    if beat is None:
        return None
    now = now or datetime.now(beat.tzinfo)
    if now - beat < SILENT:
        return None
    minutes = int((now - beat).total_seconds() // 60)
    return (
        f"its process ({where}) has not been heard from for {minutes} min (since {beat:%Y-%m-%d %H:%M} UTC): "
        "its host is gone or cannot reach the store"
    )
