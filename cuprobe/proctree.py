"""Every process a run started: found as a process tree (kept whole by a child subreaper) and killed (Linux).

A process group alone misses anything that calls setsid() or setpgid(); a cgroup would not, but needs a
delegated cgroup tree that containers and shared GPU boxes rarely give a worker. So the top process of a run
is a child subreaper (PR_SET_CHILD_SUBREAPER, kept across exec): an orphan below it is re-parented to it, not
to init, and stays findable through /proc/PID/task/*/children until the run is stopped.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.05
# A process is named by (pid, start time in clock ticks): a pid reused by an unrelated process is never signalled.
Proc = tuple[int, int]


def become_subreaper() -> None:
    """Make this process the reaper of its orphaned descendants (so they stay in its tree)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def die_with_parent(signum: int) -> None:
    """In a child, before exec: get `signum` when the thread that started it ends, so that a parent killed outright
    (SIGKILL, the OOM killer) leaves no orphan behind (Linux)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state is [0], pgid [2], start time [19])."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def identity(pid: int) -> Proc | None:
    """(pid, start time) of a live, non-zombie process; None when it is gone."""
    fields = _stat(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return None
    return pid, int(fields[19])


def alive(proc: Proc) -> bool:
    return identity(proc[0]) == proc


def children(pid: int) -> list[int]:
    """Direct children of `pid`, whichever of its threads started them."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:  # it has exited (and been reaped) since it was found: no children to report
        return found
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            found += [int(p) for p in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return found


def descendants(roots: Iterable[int]) -> set[Proc]:
    """Every live process below `roots` (the roots themselves excluded)."""
    seen: set[Proc] = set()
    todo = [child for root in roots for child in children(root)]
    while todo:
        pid = todo.pop()
        proc = identity(pid)
        if proc is None or proc in seen:
            continue
        seen.add(proc)
        todo += children(pid)
    return seen


def _signal(procs: Iterable[Proc], signum: int) -> None:
    for proc in procs:
        if alive(proc):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc[0], signum)


def freeze(roots: Iterable[int]) -> set[Proc]:
    """SIGSTOP every descendant of `roots` until no new one appears (a stopped process cannot fork)."""
    roots = list(roots)
    frozen: set[Proc] = set()
    for _ in range(100):
        found = descendants(roots + [pid for pid, _ in frozen]) - frozen
        if not found:
            break
        _signal(found, signal.SIGSTOP)
        frozen |= found
    return frozen


def kill_descendants(pid: int) -> int:
    """SIGKILL every process below `pid` (frozen first, so none forks away meanwhile); returns how many."""
    frozen = freeze([pid])
    _signal(frozen, signal.SIGKILL)
    return len(frozen)


def stop_run(top: int, pgid: int, known: set[Proc], grace_s: float) -> None:
    """End a run: SIGTERM its group (the sanitizer may flush), then SIGKILL the group and every process ever seen
    in its tree (`known`, plus what is below the top now), including any that left the group."""
    escaped = {p for p in known | descendants([top]) if (f := _stat(p[0])) is None or int(f[2]) != pgid}
    escaped |= freeze([pid for pid, _ in escaped])
    _signal(escaped, signal.SIGSTOP)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and group_alive(pgid):
        known |= descendants([top])
        time.sleep(POLL_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    leftovers = known | escaped
    _signal(leftovers | freeze([pid for pid, _ in leftovers]), signal.SIGKILL)


def group_alive(pgid: int) -> bool:
    """True while any non-zombie process is in process group `pgid`."""
    try:
        os.killpg(pgid, 0)  # no process in the group at all (the usual end of a run): no need to read /proc
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields is not None and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False
