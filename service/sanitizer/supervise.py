"""Run a command in its own process group with a wall-clock limit, output caps and an XML-size cap."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

POLL_S = 0.05
PR_SET_PDEATHSIG = 1
TERM_GRACE_S = 2.0
# A cancelled run is being thrown away: its group gets less time to flush before SIGKILL.
CANCEL_GRACE_S = 0.5


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


def _die_with_parent() -> None:
    """In the child: SIGKILL when the supervising worker dies, so a killed worker leaves no orphan (Linux)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


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


def _kill_group(pgid: int, grace_s: float = TERM_GRACE_S) -> None:
    """SIGTERM the group, then SIGKILL whatever is left after a grace period."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and group_alive(pgid):
        time.sleep(POLL_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def group_alive(pgid: int) -> bool:
    """True while any non-zombie process is in process group `pgid`."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


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
) -> Supervised:
    """Run `cmd` to completion or until the limit, the XML cap or `cancel`; the whole group dies on any of them."""
    start = time.monotonic()
    proc = subprocess.Popen(
        list(cmd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    pgid = proc.pid  # start_new_session makes the child a group leader
    out, err = CappedStream(max_output_bytes), CappedStream(max_output_bytes)
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [
        threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True),
    ]
    for pump in pumps:
        pump.start()
    timed_out = xml_capped = cancelled = False
    while proc.poll() is None:
        if time.monotonic() - start > timeout_s:
            timed_out = True
        elif xml_path is not None and max_xml_bytes is not None and _size(xml_path) > max_xml_bytes:
            xml_capped = True
        elif cancel is not None and cancel.is_set():
            cancelled = True
        if timed_out or xml_capped or cancelled:
            _kill_group(pgid, CANCEL_GRACE_S if cancelled else TERM_GRACE_S)
            break
        time.sleep(POLL_S)
    returncode = proc.wait()
    if group_alive(pgid):  # the probe may have left children behind: they go with it
        _kill_group(pgid)
    for pump in pumps:
        pump.join(timeout=5)
    return Supervised(returncode, timed_out, xml_capped, cancelled, time.monotonic() - start, pgid, out, err)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
