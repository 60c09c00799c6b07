"""Find live processes by command line (to prove a killed run left nothing behind)."""

from __future__ import annotations

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
