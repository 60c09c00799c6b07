"""Run a command in its own process group with a wall-clock limit, output caps, an XML-size cap and a progress
watchdog; when it ends, every process it started ends (probes.proctree)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO

from cuprobe.proctree import Proc, alive, become_subreaper, descendants, die_with_parent, group_alive, stop_run

# How often a running command's limit, XML size and cancel flag are checked; its exit is seen at once (a pidfd).
POLL_S = 0.05
# Record the run's process tree every this many polls (cheap: it walks the tree, not all of /proc).
TREE_EVERY = 5
TERM_GRACE_S = 2.0
# A cancelled run is being thrown away: its group gets less time to flush before SIGKILL.
CANCEL_GRACE_S = 0.5
# How often the watchdog compares the run's progress (heartbeat file, XML size, output bytes) with the last look.
PROGRESS_EVERY_S = 1.0


class CappedStream:
    """Keeps the first and last `cap // 2` bytes of a stream, and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.half = max(cap // 2, 1)
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail.append(chunk)
            self.tail_len += len(chunk)
            while self.tail_len - len(self.tail[0]) >= self.half:
                self.tail_len -= len(self.tail.popleft())

    def text(self) -> str:
        tail = b"".join(self.tail)[-self.half :]
        omitted = self.total - len(self.head) - len(tail)
        middle = f"\n[... cuprobe: {omitted} bytes omitted ...]\n".encode() if omitted > 0 else b""
        return (bytes(self.head) + middle + tail).decode("utf-8", errors="replace")

    def tail_text(self) -> str:
        return b"".join(self.tail)[-self.half :].decode("utf-8", errors="replace") or self.head.decode(
            "utf-8", errors="replace"
        )


def _die_with_parent(nice: int = 0) -> None:
    """In the child: SIGKILL when the supervising worker dies, so a killed worker leaves no orphan (Linux); and
    reaper of its orphans, so a process that leaves the group (setsid) stays in the run's tree to be killed.
    `nice`: lower its CPU priority by that much."""
    die_with_parent(signal.SIGKILL)
    become_subreaper()
    if nice:
        os.nice(nice)


def _pump(pipe: IO[bytes], sink: CappedStream) -> None:
    with pipe:
        for chunk in iter(lambda: pipe.read(65536), b""):
            sink.feed(chunk)


@dataclass
class Supervised:
    """How the process ended and what it printed (capped)."""

    returncode: int | None
    timed_out: bool
    xml_capped: bool
    cancelled: bool
    duration_s: float
    pgid: int
    stdout: CappedStream
    stderr: CappedStream
    # Seconds from the start to the child running (fork and exec) and to its exit being seen; the rest of
    # duration_s is reaping what it left behind and draining its output.
    spawned_s: float = 0.0
    exited_s: float = 0.0
    # Set when the watchdog stopped it: seconds without progress, and the heartbeat's last line (what had started).
    stalled_s: float | None = None
    last_beat: str = ""
    # The process was started ahead of its run (a spare, service/probing/spares.py) and handed the run.
    warm: bool = False


class Watchdog:
    """Progress of a run that beats: the heartbeat file's changes, the XML's size and the output's bytes. Armed by
    the first beat (start-up before it is not judged); stalled when nothing moved for `stall_s`."""

    def __init__(self, heartbeat: Path, stall_s: float, watched: list[Path], streams: list[CappedStream]) -> None:
        self.heartbeat, self.stall_s, self.watched, self.streams = heartbeat, stall_s, watched, streams
        self.seen: tuple[object, ...] | None = None
        self.moved = self.checked = time.monotonic()

    def look(self) -> float | None:
        """Seconds without progress once that passes `stall_s`, else None (cheap: at most one look a second)."""
        now = time.monotonic()
        if now - self.checked < PROGRESS_EVERY_S:
            return None
        self.checked = now
        try:
            beat = self.heartbeat.stat()
        except OSError:
            self.moved = now  # not armed yet
            return None
        seen = (beat.st_mtime_ns, beat.st_size, *(_size(p) for p in self.watched), *(s.total for s in self.streams))
        if seen != self.seen:
            self.seen, self.moved = seen, now
            return None
        idle = now - self.moved
        return idle if idle >= self.stall_s else None

    def last_beat(self) -> str:
        try:
            return self.heartbeat.read_text(encoding="utf-8", errors="replace").strip()[:300]
        except OSError:
            return ""


@dataclass
class Started:
    """A command running in its own process group, its output being read (capped) by two threads."""

    proc: subprocess.Popen[bytes]
    start: float  # monotonic, just before the fork
    spawned_s: float
    exit_fd: int | None
    stdout: CappedStream
    stderr: CappedStream
    pumps: list[threading.Thread]

    @property
    def pgid(self) -> int:
        return self.proc.pid  # start_new_session makes the child a group leader

    def kill(self) -> None:
        """End the whole group now (a spare nobody took) and reap it."""
        stop_run(self.proc.pid, self.pgid, set(), CANCEL_GRACE_S)
        self.proc.wait()
        self.close()

    def close(self) -> None:
        """Once it has exited: stop watching for its exit and let its output be read to the end."""
        if self.exit_fd is not None:
            os.close(self.exit_fd)
            self.exit_fd = None
        for pump in self.pumps:
            pump.join(timeout=5)


def start(
    cmd: Sequence[str],
    *,
    max_output_bytes: int,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    nice: int = 0,
) -> Started:
    """Start `cmd` in its own process group (it dies with this thread), its output read into capped buffers;
    `nice` lowers its CPU priority (and its children's) by that much."""
    began = time.monotonic()
    proc = subprocess.Popen(
        list(cmd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=True,
        preexec_fn=partial(_die_with_parent, nice),
    )
    spawned = time.monotonic() - began
    out, err = CappedStream(max_output_bytes), CappedStream(max_output_bytes)
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [
        threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True),
    ]
    for pump in pumps:
        pump.start()
    return Started(proc, began, spawned, _pidfd(proc.pid), out, err, pumps)


def supervise(
    cmd: Sequence[str],
    *,
    timeout_s: float,
    max_output_bytes: int,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    xml_path: Path | None = None,
    max_xml_bytes: int | None = None,
    cancel: threading.Event | None = None,
    heartbeat: Path | None = None,
    stall_s: float = 0.0,
    nice: int = 0,
) -> Supervised:
    """Run `cmd` to completion or until the limit, the XML cap, `cancel` or a stall (no progress for `stall_s` after
    the first beat in `heartbeat`, when both are given); the whole group dies on any of them."""
    return watch(
        start(cmd, max_output_bytes=max_output_bytes, env=env, cwd=cwd, nice=nice),
        timeout_s=timeout_s,
        xml_path=xml_path,
        max_xml_bytes=max_xml_bytes,
        cancel=cancel,
        heartbeat=heartbeat,
        stall_s=stall_s,
    )


def watch(
    started: Started,
    *,
    timeout_s: float,
    since: float | None = None,
    xml_path: Path | None = None,
    max_xml_bytes: int | None = None,
    cancel: threading.Event | None = None,
    heartbeat: Path | None = None,
    stall_s: float = 0.0,
) -> Supervised:
    """Watch a started command to its end (see supervise). `since`: the monotonic time the run counts from, its
    limit included (a spare started earlier counts from when it was handed its run); the start by default."""
    proc, pgid, out, err = started.proc, started.pgid, started.stdout, started.stderr
    start = started.start if since is None else since
    spawned = max(0.0, started.start + started.spawned_s - start)
    timed_out = xml_capped = cancelled = False
    stalled: float | None = None
    watchdog = (
        Watchdog(heartbeat, stall_s, [xml_path] if xml_path else [], [out, err])
        if heartbeat is not None and stall_s > 0
        else None
    )
    # Every process seen below the run: one that leaves the group is still killed when the run ends.
    known: set[Proc] = set()
    polls = 0
    while proc.poll() is None:
        if time.monotonic() - start > timeout_s:
            timed_out = True
        elif xml_path is not None and max_xml_bytes is not None and _size(xml_path) > max_xml_bytes:
            xml_capped = True
        elif cancel is not None and cancel.is_set():
            cancelled = True
        elif watchdog is not None:
            stalled = watchdog.look()
        if timed_out or xml_capped or cancelled or stalled is not None:
            stop_run(proc.pid, pgid, known, CANCEL_GRACE_S if cancelled else TERM_GRACE_S)
            break
        if polls % TREE_EVERY == 0:
            known |= descendants([proc.pid])
        polls += 1
        _wait_exit(started.exit_fd, POLL_S)
    returncode = proc.wait()
    exited = time.monotonic() - start
    if group_alive(pgid) or any(alive(p) for p in known):  # what the probe left behind goes with it
        stop_run(proc.pid, pgid, known, TERM_GRACE_S)
    started.close()
    return Supervised(
        returncode,
        timed_out,
        xml_capped,
        cancelled,
        time.monotonic() - start,
        pgid,
        out,
        err,
        spawned,
        exited,
        stalled_s=stalled,
        last_beat=watchdog.last_beat() if watchdog is not None and stalled is not None else "",
    )


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when child `pid` exits (Linux 5.3+), or None where there is none."""
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def _wait_exit(exit_fd: int | None, timeout_s: float) -> None:
    """Sleep up to `timeout_s`, but return as soon as the process behind `exit_fd` exits (a plain sleep without)."""
    if exit_fd is None:
        time.sleep(timeout_s)
    else:
        select.select([exit_fd], [], [], timeout_s)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
