"""Which process is running a stored sweep, and whether that process is gone: a sweep whose process was killed
(SIGKILL, out of memory, the machine restarted) never says so itself, and would read as running for ever."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


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


def gone(owner: object) -> str | None:
    """Why the process `owner` names has certainly ended, or None where it may still run: on another host nothing
    can be known from here, and a live pid may be another process that took the number (then it stays running)."""
    if not isinstance(owner, dict) or owner.get("host") != socket.gethostname():
        return None
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return None
    where = f"pid {pid} on {owner['host']}"
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
    if isinstance(started, int) and (now := _started(pid)) is not None and now != started:
        return f"its process ({where}) ended without finishing it; that pid is now another process's"
    return None
