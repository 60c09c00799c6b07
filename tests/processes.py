"""Find live processes by command line (to prove a killed run left nothing behind); start one as a terminal would."""

from __future__ import annotations

import signal
from pathlib import Path


def processes_mentioning(text: str) -> list[int]:
    """PIDs of non-zombie processes whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if text in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def as_terminal_foreground() -> None:
    """A child's `preexec_fn`: SIGINT at its default, as a terminal's foreground job has it. Started from a shell's
    background job (`cmd &`, as CI may run the tests), SIGINT comes ignored, and a program keeps ignoring it, so a
    test's Ctrl-C would never reach it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
