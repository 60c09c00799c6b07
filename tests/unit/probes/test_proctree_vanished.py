"""A process that exits (and is reaped) while cuprobe walks its tree has no children, not an error: a CI run once
failed with FileNotFoundError on /proc/PID/task in the byte-cap stop (the directory vanished between pathlib's
is-dir check and its scandir)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cuprobe import proctree


def test_a_reaped_process_has_no_children_and_no_descendants() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # reaped: /proc/PID is gone
    assert proctree.children(proc.pid) == []
    assert proctree.descendants([proc.pid]) == set()


def test_the_task_directory_vanishing_while_it_is_listed_is_no_children(monkeypatch: pytest.MonkeyPatch) -> None:
    def vanished(path: str) -> list[str]:
        raise FileNotFoundError(2, "No such file or directory", path)

    monkeypatch.setattr(proctree.os, "listdir", vanished)  # the race, made certain
    assert proctree.children(1) == []
