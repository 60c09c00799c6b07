"""Handing a waiting probe process its run: the parameters through its FIFO, and its files into the run's folder.

A spare (spares.py) and a warm re-run (confirm/warm.py) are both a probe command started before its run is known,
ready and waiting for its parameters on a FIFO in its own folder; these are the steps both take.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from cuprobe.probes.warm import READY_NAME, WarmLevel

FIFO_NAME = "params.fifo"
# How often a hand-over looks again at a process still warming up.
HAND_OVER_LOOK_S = 0.005


def waiting_for_params(cmd: list[str], fifo: Path, level: WarmLevel) -> list[str]:
    """A `... -m probes NAME --params JSON ...` command with `--params JSON` replaced by: get ready (probes/warm.py,
    to `level`), then read the parameters from `fifo`."""
    cmd = list(cmd)
    at = params_at(cmd)
    cmd[at - 1 : at + 1] = ["--params-from", str(fifo), "--warm", level]
    return cmd


def params_at(cmd: list[str]) -> int:
    """Index of the probe's --params value in a `... -m probes NAME --params JSON ...` command."""
    for i in range(len(cmd) - 3):
        if cmd[i : i + 2] == ["-m", "cuprobe.probes"] and cmd[i + 3] == "--params":
            return i + 4
    raise ValueError("not a probe command: no `-m probes NAME --params`")


def hand_over(fifo: Path, alive: Callable[[], bool], params_json: str, give_up: Callable[[], bool]) -> bool:
    """Give a waiting process (a spare, a warm re-run) its run's parameters through its `fifo`, waiting while it still
    warms up; False when it died first (`alive()` false) or `give_up()` said to stop waiting (the run's time limit, a
    cancel)."""
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet, the target is still getting ready
                raise
        if not alive() or give_up():
            return False
        time.sleep(HAND_OVER_LOOK_S)
    os.set_blocking(fd, True)
    try:
        os.write(fd, params_json.encode("utf-8"))
    except BrokenPipeError:
        return False
    finally:
        os.close(fd)
    return True


def move_artifacts(source: Path, target: Path) -> None:
    """Everything the spare's run left in its folder, moved into the run's own folder (same names)."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.name in (FIFO_NAME, READY_NAME):
            entry.unlink(missing_ok=True)
            continue
        dest = target / entry.name
        if dest.is_dir() and not dest.is_symlink():
            shutil.rmtree(dest)
        shutil.move(str(entry), str(dest))  # a rename on one file system
    shutil.rmtree(source, ignore_errors=True)
